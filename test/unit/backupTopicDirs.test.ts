// Topic directories in an online backup (src/supervisor/backup.ts): a topic deleted while its
// files are being linked is left out whole (its TOPIC_DELETE is in the WAL copy), never with some
// of its files, which a restored start would refuse as lost files of a live topic
// (docs/FORMAT.md "Snapshots", `files`); a deleted topic's directory on its way out
// (`<dir>.deleted`) is not copied.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stageBackup, type BackupSource } from '../../src/supervisor/backup.js';
import { segmentFileName } from '../../src/format/layout.js';

function dataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-bkt-'));
  fs.mkdirSync(path.join(dir, 'meta'));
  fs.mkdirSync(path.join(dir, 'wal'));
  fs.writeFileSync(path.join(dir, 'meta', `snapshot-${'1'.padStart(20, '0')}-${'32'.padStart(12, '0')}.snap`), 'snap');
  fs.writeFileSync(path.join(dir, 'wal', `${'1'.padStart(20, '0')}.wal`), Buffer.alloc(64));
  for (const t of ['000000000001', '000000000002', '000000000003.deleted']) {
    fs.mkdirSync(path.join(dir, 'topics', t), { recursive: true });
    for (const first of [1, 100]) fs.writeFileSync(path.join(dir, 'topics', t, segmentFileName(first)), 'frames');
  }
  return dir;
}

test('a topic whose files vanish while they are linked is left out whole; a deleted directory on its way out is skipped', async (t) => {
  const dir = dataDir();
  const vanishing = path.join(dir, 'topics', '000000000001', segmentFileName(100));
  const real = fs.linkSync;
  // The delete's rename lands between the listing of topic 1's files and the link of its second.
  t.mock.method(fs, 'linkSync', (from: fs.PathLike, to: fs.PathLike) => {
    if (from === vanishing) throw Object.assign(new Error('ENOENT: gone'), { code: 'ENOENT' });
    return real(from, to);
  });
  const src: BackupSource = {
    withFreshCheckpoint: (fn) => fn({ fileNo: 1, offset: 32 }),
    withRoutersHeld: (fn) => fn(),
    walPosition: async () => ({ fileNo: 1, offset: 48 }),
  };
  const b = await stageBackup(dir, src);
  try {
    const topics = b.files.map((f) => f.name).filter((n) => n.startsWith('topics/'));
    assert.deepEqual(topics, [`topics/000000000002/${segmentFileName(1)}`, `topics/000000000002/${segmentFileName(100)}`]);
  } finally {
    b.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
