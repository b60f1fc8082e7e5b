// One append larger than a WAL file on a nearly full volume (docs/ARCHITECTURE.md "Storage
// faults"), for real: the server runs on a small tmpfs (test/helpers/tmpfs.ts) with 1 MiB WAL
// files, the test leaves about 1.5 MB free and posts a ~3 MB batch. Checked over HTTP:
// - the batch answers 429 throttled, detail.limit "disk_space", and creates nothing (it used to
//   meet ENOSPC mid-frame, answer 500 and leave storage FAILED until a restart);
// - the server stays ready and never reports storage "failed"; once space returns, writes go on
//   without a restart, to the old topic and to the refused batch's topic;
// - every acknowledged record reads back, before and after a SIGKILL restart, and nothing of the
//   refused batch is there.
// Needs root (mount, unshare, nsenter); skipped with a message elsewhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { client, killServersAfterFile, type Server } from '../helpers/server.js';
import { fill, tmpfsServer, tmpfsSkip } from '../helpers/tmpfs.js';

killServersAfterFile();

const MiB = 1024 * 1024;

function batch(from: number, count: number, bytes: number) {
  return { records: Array.from({ length: count }, (_, k) => ({ data: { i: from + k, pad: 'p'.repeat(bytes) } })) };
}

/** Every record of `topic`, by its `i`, in order. */
async function readAll(c: ReturnType<typeof client>, topic: string): Promise<number[]> {
  const got: number[] = [];
  for (let from = 0; ;) {
    const d = await c.post(`/v0/topics/${topic}/diff`, { from_seq: from, limit: 1000 });
    assert.equal(d.status, 200, `diff ${topic}: ${JSON.stringify(d.body)}`);
    for (const r of d.body.records) got.push(r.data.i);
    if (d.body.caught_up) return got;
    from = d.body.next_from_seq;
  }
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

test(
  'a batch larger than a WAL file on a nearly full volume answers 429 disk_space; writes go on once space returns, no restart',
  { skip: tmpfsSkip, timeout: 120_000 },
  async () => {
    const { inside, start } = await tmpfsServer(20 * MiB, { SERVICE_WAL_FILE_BYTES: String(MiB), SERVICE_CHECKPOINT_MS: '1000' });
    let srv: Server = await start();
    let c = client(srv.url);
    const acked: number[] = [];
    for (let b = 0; b < 50; b++) {
      const r = await c.post('/v0/topics/x', batch(acked.length, 100, 1000));
      assert.ok(r.status === 200 || r.status === 201, JSON.stringify(r.body));
      acked.push(...range(acked.length, acked.length + 100));
    }

    // About 1.5 MB left: room for the WAL's own files, not for a 3 MB frame past a file's end.
    const filler = fill(inside, 'filler');
    fs.truncateSync(filler, fs.statSync(filler).size - 1_500_000);
    const big = await c.post('/v0/topics/big3', batch(0, 1000, 3000));
    assert.equal(big.status, 429, `the big batch: ${JSON.stringify(big.body)} (server log: ${srv.stderr().slice(-1500)})`);
    assert.equal(big.body.error.code, 'throttled');
    assert.deepEqual(big.body.error.detail, { limit: 'disk_space' });
    assert.equal((await c.get('/v0/topics/big3')).status, 404, 'the refused batch created nothing');
    const ready = await c.get('/v0/ready');
    assert.equal(ready.status, 200);
    assert.notEqual(ready.body.storage, 'failed', JSON.stringify(ready.body));
    assert.deepEqual(await readAll(c, 'x'), acked, 'every acknowledged record, while the disk is short');

    // Space returns: writes go on within 5 s, without a restart.
    fs.unlinkSync(filler);
    const freedAt = Date.now();
    for (;;) {
      const r = await c.post('/v0/topics/x', batch(acked.length, 10, 1000));
      if (r.status === 200) {
        acked.push(...range(acked.length, acked.length + 10));
        break;
      }
      assert.equal(r.status, 429, `refused only while full: ${JSON.stringify(r.body)}`);
      assert.ok(Date.now() - freedAt < 5000, 'writes resumed within 5 s of space returning');
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal((await c.get('/v0/ready')).body.storage, 'ok');
    const later = await c.post('/v0/topics/big3', batch(1000, 100, 3000));
    assert.equal(later.status, 201, `a later append creates the topic: ${JSON.stringify(later.body)}`);
    assert.deepEqual(await readAll(c, 'x'), acked);

    // A SIGKILL restart: everything acknowledged, nothing of the refused batch.
    await srv.kill();
    srv = await start();
    c = client(srv.url);
    assert.deepEqual(await readAll(c, 'x'), acked, 'after a SIGKILL restart');
    assert.deepEqual(await readAll(c, 'big3'), range(1000, 1100), 'only the later batch, nothing of the refused one');
    assert.equal((await c.get('/v0/ready')).body.storage, 'ok');
  },
);
