// Router crash test against the real server process (docs/API.md "Routers"; docs/ARCHITECTURE.md "Routers"):
// an `fsync` source on a two-worker server with two routers into `fsync` dests, one
// `exactly_once` with a Glob filter and one `at_least_once` without. Writers append batches
// while the server is SIGKILLed at a random moment, three times, and restarted on the same data
// directory. After each restart (the dest reads drain pending forwards first):
// - exactly_once: every acked source record passing the filter is in the dest exactly once, in
//   source order (the `_spool_router` source seqs strictly increase), and nothing else is;
// - at_least_once: every acked source record is in the dest at least once, first copies in
//   source order, and every copy is of a record the source holds;
// - forwarding resumes: a record appended after the restart reaches both dests.
// The random seed is printed; rerun a failure with CRASH_SEED=<seed>.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seededRng } from '../../src/core/rng.js';
import { client, killServersAfterFile, startServer, tempDir, type Server } from '../helpers/server.js';

killServersAfterFile();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SRC = 'rc.src';
const EO = 'rc.eo';
const AL = 'rc.al';
const WRITERS = 4;
const CYCLES = 3;

type Api = ReturnType<typeof client>;

async function readAll(c: Api, topic: string): Promise<any[]> {
  const out: any[] = [];
  let from = 0;
  for (;;) {
    const r = await c.post(`/v0/topics/${topic}/diff`, { from_seq: from, limit: 1000, include_tags: true });
    assert.equal(r.status, 200, `diff ${topic}: ${r.text}`);
    out.push(...r.body.records);
    if (r.body.records.length === 0 || r.body.caught_up) return out;
    from = r.body.next_from_seq;
  }
}

async function writer(c: Api, w: number, rng: () => number, acked: Map<string, string>, stop: { now: boolean }): Promise<void> {
  let i = 0;
  while (!stop.now) {
    const n = 1 + Math.floor(rng() * 5);
    const records = Array.from({ length: n }, () => {
      const id = `${w}-${i++}`;
      return { data: { id }, tag: rng() < 0.5 ? `k${w}` : 'z' };
    });
    try {
      const r = await c.post(`/v0/topics/${SRC}`, { records });
      if (r.status === 200) for (const rec of records) acked.set(rec.data.id, rec.tag);
    } catch {
      return; // the server died under us
    }
  }
}

async function verify(c: Api, acked: Map<string, string>): Promise<void> {
  const src = await readAll(c, SRC);
  const srcSeqOf = new Map<string, number>(src.map((r) => [r.data.id, r.$seq]));
  for (const id of acked.keys()) assert.ok(srcSeqOf.has(id), `acked source record ${id} lost`);
  const eo = await readAll(c, EO);
  const eoSeqs = eo.map((r) => Number(String(r.meta._spool_router).split(':').pop()));
  for (let k = 1; k < eoSeqs.length; k++)
    assert.ok(eoSeqs[k]! > eoSeqs[k - 1]!, `exactly_once: source seq ${eoSeqs[k]} after ${eoSeqs[k - 1]} (duplicate or reorder)`);
  const eoIds = new Set(eo.map((r) => r.data.id as string));
  assert.equal(eoIds.size, eo.length, 'exactly_once: a duplicate copy');
  for (const r of eo) {
    assert.ok(String(r.$tag).startsWith('k'), `exactly_once: ${r.data.id} does not pass the filter`);
    assert.equal(srcSeqOf.get(r.data.id), eoSeqs[eo.indexOf(r)], 'exactly_once: _spool_router names the wrong source seq');
  }
  for (const s of src)
    if (String(s.$tag).startsWith('k')) assert.ok(eoIds.has(s.data.id), `exactly_once: source record ${s.data.id} (seq ${s.$seq}) missing`);
  const al = await readAll(c, AL);
  const firstSeen: number[] = [];
  const seen = new Set<string>();
  for (const r of al) {
    assert.ok(srcSeqOf.has(r.data.id), `at_least_once: copy of unknown record ${r.data.id}`);
    if (!seen.has(r.data.id)) firstSeen.push(srcSeqOf.get(r.data.id)!);
    seen.add(r.data.id);
  }
  for (let k = 1; k < firstSeen.length; k++)
    assert.ok(firstSeen[k]! > firstSeen[k - 1]!, 'at_least_once: first copies out of source order');
  for (const s of src) assert.ok(seen.has(s.data.id), `at_least_once: source record ${s.data.id} missing`);
}

test('router progress survives SIGKILL: exactly_once no duplicates, at_least_once no loss, in order', { timeout: 240_000 }, async () => {
  const seed = Number(process.env.CRASH_SEED ?? Date.now() % 1_000_000);
  process.stderr.write(`routerCrash seed ${seed}\n`);
  const rng = seededRng(String(seed));
  const dataDir = tempDir();
  const env = { SERVICE_WORKERS: '2' };
  let srv: Server = await startServer({ dataDir, env });
  let c = client(srv.url);
  assert.equal((await c.put(`/v0/topics/${SRC}`, { durability: 'fsync' })).status, 201);
  assert.equal((await c.put(`/v0/topics/${EO}`, { durability: 'fsync' })).status, 201);
  assert.equal((await c.put(`/v0/topics/${AL}`, { durability: 'fsync' })).status, 201);
  assert.equal(
    (await c.put('/v0/routers/eo', { source: SRC, dest: EO, guarantee: 'exactly_once', filter: ['tag', 'Glob', 'k*'] })).status,
    201,
  );
  assert.equal((await c.put('/v0/routers/al', { source: SRC, dest: AL })).status, 201);
  const acked = new Map<string, string>();
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    const stop = { now: false };
    const writers = Array.from({ length: WRITERS }, (_, w) => writer(c, cycle * 10 + w, () => rng.next(), acked, stop));
    await sleep(300 + Math.floor(rng.next() * 900));
    await srv.kill();
    stop.now = true;
    await Promise.all(writers);
    srv = await startServer({ dataDir, env });
    c = client(srv.url);
    await verify(c, acked);
    // Forwarding resumes after the restart.
    const id = `after-${cycle}`;
    assert.equal((await c.post(`/v0/topics/${SRC}`, { records: [{ data: { id }, tag: 'k9' }] })).status, 200);
    acked.set(id, 'k9');
    assert.ok(
      (await readAll(c, EO)).some((r) => r.data.id === id),
      'exactly_once: no forwarding after restart',
    );
    assert.ok(
      (await readAll(c, AL)).some((r) => r.data.id === id),
      'at_least_once: no forwarding after restart',
    );
  }
  assert.ok(acked.size > 20, `too few acked records (${acked.size}) to mean anything`);
  assert.equal(await srv.stop(), 0);
});
