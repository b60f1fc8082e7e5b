// The WAL's share of a small or full disk: sizeWal (this run's file size from the free space) and
// WalSpace.reclaim (the files the newest checkpoint covers give way, older snapshots first), on
// a real temp directory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sizeWal, WAL_FILE_BYTES_MIN } from '../../src/wal/walSizing.js';
import { WalSpace } from '../../src/wal/walSpace.js';
import { createWalFile, listWalFiles } from '../../src/wal/files.js';
import { listSnapshotNames, snapshotFileName } from '../../src/storage/snapshot.js';
import { metaDir } from '../../src/format/layout.js';
import { nodeFs } from '../../src/storage/fs.js';
import { WAL_HEADER_BYTES } from '../../src/format/constants.js';

const MiB = 1024 * 1024;

test('sizeWal: the configured size while eight files fit, an eighth of the free space (at least 1 MiB) below that', () => {
  assert.deepEqual(
    sizeWal(64 * MiB, 256 * MiB, undefined),
    { walFileBytes: 64 * MiB, checkpointWalBytes: 256 * MiB, shrunk: false },
    'unknown free space',
  );
  assert.deepEqual(sizeWal(64 * MiB, 256 * MiB, 512 * MiB), { walFileBytes: 64 * MiB, checkpointWalBytes: 256 * MiB, shrunk: false });
  // A 96 MiB volume: 12 MiB files, a checkpoint per file.
  assert.deepEqual(sizeWal(64 * MiB, 256 * MiB, 96 * MiB), { walFileBytes: 12 * MiB, checkpointWalBytes: 12 * MiB, shrunk: true });
  // Whole MiB, never below the minimum, even with nothing free.
  assert.equal(sizeWal(64 * MiB, 256 * MiB, 100 * MiB).walFileBytes, 12 * MiB);
  assert.equal(sizeWal(64 * MiB, 256 * MiB, 3 * MiB).walFileBytes, WAL_FILE_BYTES_MIN);
  assert.equal(sizeWal(64 * MiB, 256 * MiB, 0).walFileBytes, WAL_FILE_BYTES_MIN);
  // A smaller configured checkpoint trigger stays.
  assert.equal(sizeWal(64 * MiB, 4 * MiB, 96 * MiB).checkpointWalBytes, 4 * MiB);
});

function dataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'spool-walspace-'));
}

function snapshotAt(dir: string, fileNo: number, offset: number): void {
  fs.mkdirSync(metaDir(dir), { recursive: true });
  fs.writeFileSync(path.join(metaDir(dir), snapshotFileName({ fileNo, offset })), 'snapshot');
}

test('WalSpace.reclaim: files wholly before the newest cut go, after the older snapshots that needed them; never the current file', () => {
  const dir = dataDir();
  try {
    for (let n = 1; n <= 5; n++) fs.closeSync(createWalFile(nodeFs, dir, n, 1));
    for (let n = 1; n <= 5; n++) fs.appendFileSync(path.join(dir, 'wal', `${String(n).padStart(20, '0')}.wal`), Buffer.alloc(1000));
    snapshotAt(dir, 2, 500);
    snapshotAt(dir, 4, 700);
    const logs: string[] = [];
    const space = new WalSpace(
      nodeFs,
      dir,
      (m) => logs.push(m),
      () => 7 * MiB,
    );
    assert.equal(space.reclaim(5), 0, 'nothing is covered before a snapshot is known');
    space.coveredBy({ fileNo: 2, offset: 500 });
    space.coveredBy({ fileNo: 4, offset: 700 });
    space.coveredBy({ fileNo: 3, offset: 0 }); // an older cut never moves it back
    const freed = space.reclaim(5);
    assert.equal(freed, 3 * (WAL_HEADER_BYTES + 1000));
    assert.deepEqual(listWalFiles(nodeFs, dir), [4, 5]);
    assert.deepEqual(
      listSnapshotNames(nodeFs, dir),
      [snapshotFileName({ fileNo: 4, offset: 700 })],
      'the older snapshot went with its WAL',
    );
    assert.match(
      logs.join('\n'),
      /removed 3 WAL file\(s\) \(0\.0 MiB\) that the newest checkpoint covers, and 1 older snapshot\(s\) that needed them/,
    );
    assert.equal(space.reclaim(5), 0, 'nothing more to free');
    // The file being written is never removed, even if a cut lies past it.
    space.coveredBy({ fileNo: 6, offset: WAL_HEADER_BYTES });
    space.reclaim(5);
    assert.deepEqual(listWalFiles(nodeFs, dir), [5]);
    assert.equal(space.shortfall(4 * MiB), 'needs 4.0 MiB for a WAL file, 7.0 MiB free');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
