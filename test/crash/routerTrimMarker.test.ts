// A router dest's `source_trim` marker on a real server (docs/API.md "Routers"; docs/ARCHITECTURE.md
// "Routers"): records the source evicted while a full `reject` dest refused copies reach dest
// readers as one tombstone; the marker is no record (the dest's count leaves it out), and it
// outlives every record around it: deleted, their segment files reclaimed, the server SIGKILLed
// and restarted, then stopped and restarted, a read from the start still gets the tombstone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { client, killServersAfterFile, startServer } from '../helpers/server.js';

killServersAfterFile();

const ENV = {
  SERVICE_WORKERS: '1',
  SERVICE_SEGMENT_BYTES: String(1 << 20),
  SERVICE_CHECKPOINT_MS: '1000',
  SERVICE_WAL_FILE_BYTES: String(1 << 20),
};
const PAD = 'p'.repeat(1000);
const BATCHES = 16;
const PER_BATCH = 500;

type Api = ReturnType<typeof client>;

async function waitFor(what: string, ms: number, ok: () => Promise<boolean>): Promise<void> {
  const t0 = Date.now();
  while (!(await ok())) {
    if (Date.now() - t0 > ms) assert.fail(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Bytes of the data dir's files outside wal/ (the older of two snapshots left out). */
function dataBytes(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const p = path.join(e.parentPath, e.name);
    if (p.includes(`${path.sep}wal${path.sep}`)) continue;
    n += fs.statSync(p, { throwIfNoEntry: false })?.size ?? 0;
  }
  return n;
}

async function state(c: Api, t: string): Promise<{ head_seq: number; earliest_seq: number; count: number }> {
  const r = await c.get(`/v0/topics/${t}`);
  assert.equal(r.status, 200, r.text);
  return r.body as { head_seq: number; earliest_seq: number; count: number };
}

async function fromStart(c: Api, t: string): Promise<{ tombstone: unknown; records: unknown[] }> {
  const r = await c.post(`/v0/topics/${t}/diff`, { from_seq: 0, limit: 10 });
  assert.equal(r.status, 200, r.text);
  return r.body as { tombstone: unknown; records: unknown[] };
}

test('a source_trim marker is no record, and its tombstone outlives the records, their files and restarts', async () => {
  let srv = await startServer({ env: ENV });
  let c = client(srv.url);
  assert.equal((await c.put('/v0/topics/s', { cap_records: 2 })).status, 201);
  assert.equal((await c.put('/v0/topics/d', { discard: 'reject', cap_records: 1 })).status, 201);
  assert.equal((await c.put('/v0/routers/r', { source: 's', dest: 'd' })).status, 201);
  assert.equal((await c.post('/v0/topics/s', { records: [{ data: 1 }] })).status, 200);
  await waitFor('first copy', 10_000, async () => (await state(c, 'd')).count === 1);
  // The dest is full: copies wait, and the source evicts 2, 3 and 4 meanwhile.
  for (const v of [2, 3, 4, 5, 6]) assert.equal((await c.post('/v0/topics/s', { records: [{ data: v }] })).status, 200);
  assert.equal((await c.put('/v0/topics/d', { discard: 'reject', cap_records: 1_000_000 })).status, 200);
  await waitFor('copies after room returned', 10_000, async () => (await state(c, 'd')).head_seq === 4);
  const trim = { gap_from: 2, gap_to: 2, reason: 'source_trim', missed_estimate: 3 };
  assert.equal((await state(c, 'd')).count, 3, 'the marker is no record');
  const second = await c.post('/v0/topics/d/diff', { from_seq: 1 });
  assert.deepEqual(second.body.tombstone, { ...trim, earliest_seq: 1, head_seq: 4 });
  assert.deepEqual(
    second.body.records.map((r: { data: number }) => r.data),
    [5, 6],
  );

  // Fill the dest's segments past the marker's, then delete every record: the files go.
  assert.equal((await c.put('/v0/topics/s', { cap_records: 0 })).status, 200);
  for (let b = 0; b < BATCHES; b++) {
    const records = Array.from({ length: PER_BATCH }, (_, i) => ({ data: { n: b * PER_BATCH + i, pad: PAD } }));
    assert.equal((await c.post('/v0/topics/s', { records })).status, 200);
  }
  const head = 4 + BATCHES * PER_BATCH;
  await waitFor('copies', 30_000, async () => (await state(c, 'd')).head_seq === head);
  const del = await c.post('/v0/topics/d/delete', { before_seq: head + 1 });
  assert.equal(del.status, 200, del.text);
  assert.deepEqual([del.body.count, del.body.earliest_seq], [0, head + 1]);
  assert.equal((await c.post('/v0/topics/s/delete', { before_seq: head + 100 })).status, 200); // the filler's originals go too
  await waitFor('segment files reclaimed', 30_000, async () => dataBytes(srv.dataDir) < 3 << 20);
  const gone = { ...trim, earliest_seq: head + 1, head_seq: head };
  assert.deepEqual((await fromStart(c, 'd')).tombstone, gone);

  await srv.kill();
  srv = await startServer({ env: ENV, dataDir: srv.dataDir });
  c = client(srv.url);
  // A SIGKILL may pad the head by a reservation block: read the watermarks again.
  let st = await state(c, 'd');
  assert.equal(st.count, 0);
  let read = await fromStart(c, 'd');
  assert.deepEqual(read.tombstone, { ...trim, earliest_seq: st.earliest_seq, head_seq: st.head_seq });
  assert.deepEqual(read.records, []);

  assert.equal(await srv.stop(), 0);
  srv = await startServer({ env: ENV, dataDir: srv.dataDir });
  c = client(srv.url);
  st = await state(c, 'd');
  read = await fromStart(c, 'd');
  assert.deepEqual(read.tombstone, { ...trim, earliest_seq: st.earliest_seq, head_seq: st.head_seq });
  // Empty means no records: a marker does not keep `if_empty` from deleting the topic.
  assert.equal((await c.del('/v0/routers/r')).status, 200);
  const drop = await c.del('/v0/topics/d?if_empty=true');
  assert.equal(drop.status, 200, drop.text);
  assert.equal(await srv.stop(), 0);
});
