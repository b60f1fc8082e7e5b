// The routers file in an online backup (src/supervisor/backup.ts): staged from a real data
// directory with a real RouterRegistry (its topic actors faked), it is taken while router
// changes are held, so it is the file as of the backup's WAL position. A router PUT, a router
// DELETE or the delete of a topic a router names that arrives while the position is read waits
// for the staging to end, and is in the next backup, not this one; a new router's id is stored
// (nextId) before its forwarder runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stageBackup, type BackupSource } from '../../src/supervisor/backup.js';
import { RouterRegistry, type RouterHost } from '../../src/supervisor/routerRegistry.js';
import { routerInput } from '../support/routerInput.js';
import { loadRouters, routerFilePath, type RouterFile } from '../../src/storage/routerStore.js';
import { nodeFs } from '../../src/storage/fs.js';
import type { TopicResult } from '../../src/protocol/messages/rpc.js';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const ok = (text: string): TopicResult => ({ ok: true, status: 200, json: Buffer.from(text, 'utf8'), perf: {} });

/** Topic actors that answer at once; `onRouterSet` sees the stored file when a forwarder starts. */
function fakeHost(onRouterSet: () => void = () => undefined): RouterHost {
  return {
    instances: async (names) => names.map(() => 1),
    topicCount: () => ({ live: 0, max: 0 }),
    request: async (req) => {
      if (req.op === 'routerSet') onRouterSet();
      return ok(req.op === 'routerSet' ? '{"start":0,"head":0,"instance":1' : '{"removed":true');
    },
  };
}

/** A data directory as a checkpoint at cut 1:32 leaves it (one snapshot, one WAL file). */
function dataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-bkr-'));
  fs.mkdirSync(path.join(dir, 'meta'));
  fs.mkdirSync(path.join(dir, 'wal'));
  fs.writeFileSync(path.join(dir, 'meta', `snapshot-${'1'.padStart(20, '0')}-${'32'.padStart(12, '0')}.snap`), 'snap');
  fs.writeFileSync(path.join(dir, 'wal', `${'1'.padStart(20, '0')}.wal`), Buffer.alloc(64));
  return dir;
}

/**
 * Stages a backup; `meanwhile` starts when the WAL position is read, and may finish or not within
 * 200 ms (`done`: it had when the position was returned).
 */
async function stageWith(
  dir: string,
  reg: RouterRegistry,
  meanwhile: () => Promise<unknown>,
): Promise<{ staged: RouterFile; done: boolean; change: Promise<unknown> }> {
  let change: Promise<unknown> = Promise.resolve();
  let finished = false;
  let done = false;
  const src: BackupSource = {
    withFreshCheckpoint: (fn) => fn({ fileNo: 1, offset: 32 }),
    withRoutersHeld: (fn) => reg.hold(fn),
    walPosition: async () => {
      change = meanwhile().then(() => (finished = true));
      await Promise.race([change, new Promise((r) => setTimeout(r, 200))]);
      done = finished;
      return { fileNo: 1, offset: 48 };
    },
  };
  const b = await stageBackup(dir, src);
  try {
    const f = b.files.find((x) => x.name === 'meta/routers.json');
    assert.ok(f, `routers.json staged: ${b.files.map((x) => x.name).join(', ')}`);
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-bkr-copy-'));
    fs.mkdirSync(path.join(copy, 'meta'));
    fs.copyFileSync(f.source, routerFilePath(copy));
    return { staged: loadRouters(nodeFs, copy), done, change };
  } finally {
    b.remove();
  }
}

test('a router change while the backup reads its position waits, and is not in this backup', async () => {
  const dir = dataDir();
  const reg = new RouterRegistry(fakeHost(), nodeFs, dir, 0, quiet);
  assert.equal((await reg.put('a', routerInput('s1', 'd1'))).ok, true);
  assert.equal((await reg.put('b', routerInput('s2', 'd2'))).ok, true);

  const put = await stageWith(dir, reg, () => reg.put('c', routerInput('s3', 'd3')));
  assert.equal(put.done, false, 'the PUT waited for the staging');
  assert.deepEqual(
    put.staged.routers.map((r) => r.name),
    ['a', 'b'],
  );
  await put.change;
  assert.deepEqual(
    loadRouters(nodeFs, dir).routers.map((r) => r.name),
    ['a', 'b', 'c'],
    'then it went on',
  );

  const del = await stageWith(dir, reg, () => reg.delete('a'));
  assert.equal(del.done, false);
  assert.deepEqual(
    del.staged.routers.map((r) => r.name),
    ['a', 'b', 'c'],
  );
  await del.change;

  const deleted: string[] = [];
  let deletedWhileStaging = -1;
  const cascade = await stageWith(dir, reg, () => {
    setTimeout(() => (deletedWhileStaging = deleted.length), 150);
    return reg.deleteTopic('d2', async (names) => (deleted.push(...names), ok('{"deleted":true')));
  });
  assert.equal(cascade.done, false, 'a topic a router names is deleted after the staging, with its cascade');
  assert.equal(deletedWhileStaging, 0, 'the topic too: the file and the topics stay as of one point');
  assert.deepEqual(
    cascade.staged.routers.map((r) => r.name),
    ['b', 'c'],
  );
  await cascade.change;
  assert.deepEqual(deleted, ['b']);
  assert.deepEqual(
    loadRouters(nodeFs, dir).routers.map((r) => r.name),
    ['c'],
  );

  // A topic no router names is deleted at once, backup or not.
  const plain = await stageWith(dir, reg, () => reg.deleteTopic('other', async () => ok('{"deleted":true')));
  assert.equal(plain.done, true);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a new router id is stored before its forwarder starts', async () => {
  const dir = dataDir();
  const seen: number[] = [];
  const reg = new RouterRegistry(
    fakeHost(() => seen.push(loadRouters(nodeFs, dir).nextId)),
    nodeFs,
    dir,
    0,
    quiet,
  );
  await reg.put('a', routerInput('s1', 'd1'));
  await reg.put('b', routerInput('s2', 'd2'));
  assert.deepEqual(seen, [2, 3], 'nextId was past the new id when routerSet ran');
  assert.deepEqual(
    reg.all().map((r) => r.id),
    [1, 2],
  );
  fs.rmSync(dir, { recursive: true, force: true });
});
