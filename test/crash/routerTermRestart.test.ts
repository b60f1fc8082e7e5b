// A clean SIGTERM while a router has a backlog (docs/ARCHITECTURE.md "Startup and shutdown" step 4,
// "Routers"): on a two-worker server, a router copies a `disk` source to a `disk` dest on the
// other worker. The backlog is made on purpose: the dest starts as a full `discard: reject`
// topic (the forwarder backs off), 100k records go to the source, the cap is lifted, and the
// server is SIGTERMed as soon as forwarding has resumed, ~100 copy batches behind; then it is
// restarted on the same data directory. The drain stops the forwarders before the final
// checkpoint, so:
// - the restart replays no WAL frame (the final checkpoint covers everything written);
// - once forwarding finishes, the dest holds every source record once, in source order, at
//   dense seqs 1..count with head_seq = count: exactly what a run without the restart gives
//   (no seqs padded by reservations written after the final checkpoint).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerOf } from '../../src/core/names.js';
import { client, killServersAfterFile, startServer, tempDir, type Server } from '../helpers/server.js';

killServersAfterFile();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Api = ReturnType<typeof client>;

/** A name for `prefix` on worker `w` of two. */
function onWorker(prefix: string, w: number): string {
  for (let i = 0; ; i++) if (workerOf(`${prefix}${i}`, 2) === w) return `${prefix}${i}`;
}
const SRC = onWorker('tr.src', 0);
const DST = onWorker('tr.dst', 1);
const BATCH = 1000;
const BATCHES = 100;

async function readAll(c: Api, topic: string): Promise<{ seq: number; data: any }[]> {
  const out: { seq: number; data: any }[] = [];
  let from = 0;
  for (;;) {
    const r = await c.post(`/v0/topics/${topic}/diff`, { from_seq: from, limit: 1000 });
    assert.equal(r.status, 200, `diff ${topic}: ${r.text}`);
    for (const rec of r.body.records) out.push({ seq: rec.$seq, data: rec.data });
    if (r.body.records.length === 0 || r.body.caught_up) return out;
    from = r.body.next_from_seq;
  }
}

test('SIGTERM during a router backlog: no WAL replay at restart, dest seqs dense, counts equal', { timeout: 60_000 }, async () => {
  const dataDir = tempDir();
  const env = { SERVICE_WORKERS: '2' };
  let srv: Server = await startServer({ dataDir, env });
  let c = client(srv.url);
  const full = { durability: 'disk', discard: 'reject', cap_records: 1 };
  assert.equal((await c.put(`/v0/topics/${SRC}`, { durability: 'disk' })).status, 201);
  assert.equal((await c.put(`/v0/topics/${DST}`, full)).status, 201);
  assert.equal((await c.put('/v0/routers/tr', { source: SRC, dest: DST })).status, 201);
  for (let b = 0; b < BATCHES; b++) {
    const records = Array.from({ length: BATCH }, (_, i) => ({ data: { b, i } }));
    assert.equal((await c.post(`/v0/topics/${SRC}`, { records })).status, 200);
  }
  // The metrics read drains no router (a read of the dest would): they show it as it is.
  const stats = async () => {
    const m = await c.get('/v0/metrics', { accept: 'application/json' });
    return (m.body.router_stats as { router: string; forwarded_total: number; lag: number }[]).find((r) => r.router === 'tr')!;
  };
  const before = await stats();
  assert.ok(before.lag >= BATCH * BATCHES - 1, `a full dest holds the router back (lag ${before.lag})`);
  assert.equal((await c.put(`/v0/topics/${DST}`, { durability: 'disk' })).status, 200);
  // Forwarding resumes at the forwarder's next retry (within 2 s): SIGTERM as soon as it has.
  const until = Date.now() + 10_000;
  let now = before;
  while (now.forwarded_total <= before.forwarded_total && Date.now() < until) {
    await sleep(5);
    now = await stats();
  }
  assert.ok(now.forwarded_total > before.forwarded_total, 'forwarding never resumed');
  assert.equal(await srv.stop(), 0, 'a clean drain exits 0');

  srv = await startServer({ dataDir, env });
  c = client(srv.url);
  const recovered = srv.stderr().match(/recovered (\d+) topic\(s\), (\d+) WAL frame\(s\)/);
  assert.ok(recovered, 'no recovery line');
  assert.equal(recovered[2], '0', `a clean restart replayed ${recovered[2]} WAL frame(s)`);

  const src = await readAll(c, SRC);
  const dst = await readAll(c, DST); // a read of the dest drains the router first
  assert.equal(src.length, BATCH * BATCHES);
  assert.equal(dst.length, src.length, 'every source record forwarded once');
  for (let k = 0; k < dst.length; k++) {
    if (dst[k]!.seq !== k + 1) assert.fail(`dest seq ${dst[k]!.seq} at position ${k + 1}: seqs are not dense`);
    assert.deepEqual(dst[k]!.data, src[k]!.data, `dest record ${k + 1} is not source record ${src[k]!.seq}`);
  }
  const state = await c.get(`/v0/topics/${DST}?touch=false`);
  assert.equal(state.body.count, src.length);
  assert.equal(state.body.head_seq, src.length, 'dest head_seq = count: nothing padded');
  assert.equal(await srv.stop(), 0);
});
