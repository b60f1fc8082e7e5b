// A backup holds everything durable a server keeps: a server is given every kind of state (log
// topics of each class that keeps records, configs with caps, TTL, priority and reject, deleted
// and evicted records, tags, meta and nodes, idempotency keys, a queue with an acked job, a
// dead-lettered one, a delayed one and live leases, routers with a filter, forwarded records and
// records still waiting for room in a full dest), backed up with `spool backup`, restored with
// `spool restore` into a fresh directory, checked with `spool verify`, and served. The restored
// server then answers route by route as the live one does: the topic list, each topic's state and
// full diff, the router list and each router, queue counters, a replayed idempotent append, the
// next claims and acks with the live server's lease ids; and both keep forwarding exactly once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { client, startServer, killServersAfterFile, tempDir, CLI, type Resp } from '../helpers/server.js';

killServersAfterFile();

type Api = ReturnType<typeof client>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const HOUR_MS = 3_600_000;

function spool(args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
}

/** Fails with the answer's text unless the status is `status`; returns the body. */
function ok(r: Resp, status = 200): any {
  assert.equal(r.status, status, r.text);
  return r.body;
}

/** A reply without its timing block, and without the clocks a server keeps in memory only. */
function plain(body: any): any {
  const { performance: _p, last_read_ts: _r, last_write_ts: _w, ...rest } = body;
  // A manual priority is config; the automatic one follows reads, which are not persisted.
  if (rest.config && rest.config.priority === null) delete rest.effective_priority;
  return rest;
}

/**
 * A topic's state without its head. A restored `disk` or `memory` topic goes on from its
 * reservation ceiling, as after a crash (docs/ARCHITECTURE.md "Seq reservations"), so its head
 * may be above the live one; an `fsync` topic reserves nothing and has the same head.
 */
function headless(state: any): { head: number; rest: any } {
  const { head_seq, next_seq: _n, ...rest } = plain(state);
  return { head: head_seq, rest };
}

/** Every record and tombstone of a topic's diff from 0, in pages of 7, and where it ended. */
async function diffAll(c: Api, topic: string): Promise<{ records: any[]; tombstones: any[]; earliest: number; last: number }> {
  const out = { records: [] as any[], tombstones: [] as any[], earliest: 0, last: 0 };
  for (let from = 0; ;) {
    const b = ok(await c.post(`/v0/topics/${topic}/diff`, { from_seq: from, limit: 7, include_tags: true }));
    out.records.push(...b.records);
    if (b.tombstone) out.tombstones.push({ ...b.tombstone, head_seq: undefined });
    out.earliest = b.earliest_seq;
    if (b.caught_up || b.records.length === 0) return out;
    out.last = b.next_from_seq;
    from = b.next_from_seq;
  }
}

async function waitFor(what: string, cond: () => Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(50)) if (await cond()) return;
  assert.fail(`timed out waiting for ${what}`);
}

const rec = (i: number, tag?: string) => ({
  data: { i, text: `r${i}` },
  ...(tag ? { tag } : {}),
  ...(i % 3 === 0 ? { meta: { k: i } } : {}),
  ...(i % 4 === 0 ? { node: `n${i % 2}` } : {}),
});
const recs = (from: number, n: number, tag?: (i: number) => string) => Array.from({ length: n }, (_, k) => rec(from + k, tag?.(from + k)));

/** Log topics, configs, deletes, evictions, idempotency keys. */
async function buildLogs(c: Api): Promise<void> {
  ok(await c.put('/v0/topics/s.mem', { durability: 'memory', cap_records: 6 }), 201);
  ok(await c.put('/v0/topics/s.disk', { durability: 'disk', ttl_ms: HOUR_MS, priority: 40, idempotency_window_ms: HOUR_MS }), 201);
  ok(
    await c.put('/v0/topics/s.fsync', {
      durability: 'fsync',
      cap_bytes: 100_000,
      discard: 'reject',
      auto_create: false,
      dedupe_node: false,
    }),
    201,
  );
  ok(await c.put('/v0/topics/s.eph', { durability: 'ephemeral', cap_records: 50 }), 201);
  for (const t of ['s.mem', 's.disk', 's.fsync']) {
    ok(await c.post(`/v0/topics/${t}`, { records: recs(1, 12, (i) => (i % 2 ? 'odd' : 'even')) }));
  }
  ok(await c.post('/v0/topics/s.eph', { records: recs(1, 3) }));
  ok(await c.post('/v0/topics/s.disk', { records: recs(100, 2), idempotency_key: 'disk-batch' }));
  ok(await c.post('/v0/topics/s.fsync', { records: recs(200, 3), idempotency_key: 'fsync-batch' }));
  ok(await c.post('/v0/topics/s.disk/delete', { before_seq: 4 }));
  ok(await c.post('/v0/topics/s.fsync/delete', { match: ['tag', 'Eq', 'odd'] }));
  ok(await c.post('/v0/topics/s.fsync/delete', { before_seq: 5, match: 'even' }));
  // A topic created and deleted: gone from both.
  ok(await c.post('/v0/topics/s.gone', { records: recs(1, 2) }), 201);
  ok(await c.del('/v0/topics/s.gone'));
}

/** A queue: acked, dead-lettered, delayed, leased and ready jobs. Returns the live leases. */
async function buildQueue(c: Api): Promise<{ seq: number; lease_id: string }[]> {
  ok(
    await c.put('/v0/topics/s.jobs', {
      type: 'queue',
      durability: 'fsync',
      max_deliveries: 1,
      dead_letter: 's.jobs.dlq',
      lease_ms: HOUR_MS,
    }),
    201,
  );
  ok(await c.post('/v0/topics/s.jobs', { records: recs(1, 8) }));
  const first = ok(await c.post('/v0/topics/s.jobs/claim', { node: 'w1', max: 4 }));
  assert.deepEqual(
    first.claimed.map((j: any) => j.$seq),
    [1, 2, 3, 4],
  );
  ok(await c.post('/v0/topics/s.jobs/ack', { node: 'w1', seqs: [1] }));
  ok(await c.post('/v0/topics/s.jobs/nack', { node: 'w1', seqs: [2] }));
  ok(await c.post('/v0/topics/s.jobs/nack', { node: 'w1', seqs: [3], delay_ms: HOUR_MS }));
  // Job 2 is due its second delivery with max_deliveries 1: it goes to the dead-letter topic.
  const second = ok(await c.post('/v0/topics/s.jobs/claim', { node: 'w1', max: 2 }));
  assert.deepEqual(
    second.claimed.map((j: any) => j.$seq),
    [5, 6],
  );
  await waitFor('the dead-letter move', async () => ok(await c.get('/v0/topics/s.jobs')).queue.dead_lettered === 1);
  const leased = [...first.claimed.filter((j: any) => j.$seq === 4), ...second.claimed];
  return leased.map((j: any) => ({ seq: j.$seq, lease_id: j.lease_id }));
}

/** Routers: a filtered exactly-once one, a plain one, and one whose dest is full. */
async function buildRouters(c: Api): Promise<void> {
  ok(await c.put('/v0/topics/s.orders', { durability: 'fsync' }), 201);
  ok(
    await c.put('/v0/routers/eu-orders', {
      source: 's.orders',
      dest: 's.orders.eu',
      filter: ['tag', 'Glob', 'eu-*'],
      guarantee: 'exactly_once',
      preserve_node: false,
    }),
    201,
  );
  ok(await c.put('/v0/routers/audit', { source: 's.disk', dest: 's.audit' }), 201);
  ok(await c.put('/v0/topics/s.full', { durability: 'fsync', cap_records: 3, discard: 'reject' }), 201);
  ok(await c.put('/v0/routers/blocked', { source: 's.bsrc', dest: 's.full', guarantee: 'exactly_once', create_dest: false }), 201);
  ok(await c.post('/v0/topics/s.orders', { records: recs(1, 10, (i) => (i % 3 ? `eu-${i}` : `us-${i}`)) }));
  ok(await c.post('/v0/topics/s.disk', { records: recs(300, 4) }));
  ok(await c.post('/v0/topics/s.bsrc', { records: recs(1, 5) }));
  // A router that existed once: its copies stay, the router does not.
  ok(await c.put('/v0/routers/gone', { source: 's.fsync', dest: 's.gone.dest' }), 201);
  ok(await c.post('/v0/topics/s.fsync', { records: recs(400, 1) }));
  assert.equal(ok(await c.get('/v0/routers/gone')).forwarded_total, 1);
  ok(await c.del('/v0/routers/gone'));
  assert.equal(ok(await c.get('/v0/routers/eu-orders')).forwarded_total, 7);
  assert.equal(ok(await c.get('/v0/routers/audit')).forwarded_total, 4);
  // s.full takes 3 (a batch of 5 is over its cap, and then over its room: halved), the other 2 wait.
  await waitFor('the blocked router to stall', async () => ok(await c.get('/v0/topics/s.full')).count === 3);
}

/** GET /v0/topics: each topic's row without its head and the read-driven priority (above). */
async function topicRows(c: Api): Promise<any[]> {
  return ok(await c.get('/v0/topics?page_size=1000')).topics.map(({ head_seq: _h, effective_priority: _e, ...row }: any) => row);
}

/**
 * Every read route of the two servers answers the same. `since`: after writes made on both, whose
 * records differ in `$ts` and, on a topic that is not `fsync` (its head went on from its
 * ceiling), in `$seq`.
 */
async function compareReads(live: Api, restored: Api, since = false): Promise<void> {
  // An ephemeral topic keeps its config, not its records (below).
  const keeps = (row: any) => row.topic !== 's.eph';
  const rows = await topicRows(live);
  assert.deepEqual(
    (await topicRows(restored)).map((r) => (keeps(r) ? r : r.topic)),
    rows.map((r) => (keeps(r) ? r : r.topic)),
    'GET /v0/topics',
  );
  const names = rows.map((t) => t.topic as string);
  for (const t of names) {
    if (t === 's.eph') continue; // records in memory only: below
    const mine = headless(ok(await restored.get(`/v0/topics/${t}?touch=false`)));
    const theirs = headless(ok(await live.get(`/v0/topics/${t}?touch=false`)));
    assert.deepEqual(mine.rest, theirs.rest, `GET /v0/topics/${t}`);
    if (theirs.rest.config.durability === 'fsync') assert.equal(mine.head, theirs.head, `${t}: head_seq`);
    else assert.ok(mine.head >= theirs.head, `${t}: head_seq ${mine.head} below the live ${theirs.head}`);
    const seqs = !since || theirs.rest.config.durability === 'fsync';
    const strip = (r: any) => ({ ...r, $ts: since ? 0 : r.$ts, $seq: seqs ? r.$seq : 0 });
    const [a, b] = [await diffAll(restored, t), await diffAll(live, t)];
    [a.records, b.records] = [a.records.map(strip), b.records.map(strip)];
    assert.deepEqual([a.records, a.tombstones, a.earliest], [b.records, b.tombstones, b.earliest], `diff of ${t}`);
  }
  const eph = ok(await restored.get('/v0/topics/s.eph'));
  assert.deepEqual(
    [eph.count, eph.config],
    [0, ok(await live.get('/v0/topics/s.eph')).config],
    'an ephemeral topic: its config, no records',
  );
  const routers = ok(await live.get('/v0/routers')).routers.map((r: any) => r.router);
  assert.deepEqual(routers, ['audit', 'blocked', 'eu-orders']);
  for (const r of routers)
    assert.deepEqual(
      plain(ok(await restored.get(`/v0/routers/${r}`))),
      plain(ok(await live.get(`/v0/routers/${r}`))),
      `GET /v0/routers/${r}`,
    );
  assert.deepEqual(plain(ok(await restored.get('/v0/routers'))), plain(ok(await live.get('/v0/routers'))), 'GET /v0/routers');
  assert.equal(ok(await restored.get('/v0/routers/gone'), 404).error.code, 'router_not_found');
}

/** The same writes on both servers answer the same, and leave the same state. */
async function compareWrites(live: Api, restored: Api, leases: { seq: number; lease_id: string }[]): Promise<void> {
  for (const c of [live, restored]) {
    const d = ok(await c.post('/v0/topics/s.fsync', { records: recs(200, 3), idempotency_key: 'fsync-batch' }));
    assert.equal(d.deduped, true);
    const k = ok(await c.post('/v0/topics/s.disk', { records: recs(100, 2), idempotency_key: 'disk-batch' }));
    assert.equal(k.deduped, true);
  }
  // The live server's lease ids settle the restored server's jobs: the leases came back whole.
  const acks = [];
  for (const c of [live, restored])
    acks.push(
      plain(
        ok(await c.post('/v0/topics/s.jobs/ack', { node: 'w1', seqs: leases.map((l) => l.seq), lease_ids: leases.map((l) => l.lease_id) })),
      ),
    );
  assert.deepEqual(acks[1], acks[0]);
  assert.deepEqual([acks[0].acked, acks[0].skipped], [3, []]);
  const claims = [];
  for (const c of [live, restored])
    claims.push(ok(await c.post('/v0/topics/s.jobs/claim', { node: 'w2', max: 10 })).claimed.map((j: any) => [j.$seq, j.deliveries]));
  assert.deepEqual(claims[1], claims[0]);
  assert.deepEqual(claims[0], [
    [7, 1],
    [8, 1],
  ]);
  for (const c of [live, restored]) {
    // New source records: each router forwards them once, and the full dest gets its waiting 2.
    ok(await c.post('/v0/topics/s.orders', { records: recs(11, 4, (i) => (i % 2 ? `eu-${i}` : `us-${i}`)) }));
    ok(await c.post('/v0/topics/s.disk', { records: recs(500, 2) }));
    ok(await c.post('/v0/topics/s.full/delete', { before_seq: 100 }));
  }
  await waitFor(
    'the blocked router to deliver',
    async () => ok(await restored.get('/v0/topics/s.full')).count === 2 && ok(await live.get('/v0/topics/s.full')).count === 2,
  );
  const full = await diffAll(restored, 's.full');
  assert.deepEqual(
    full.records.map((r: any) => r.data.i),
    [4, 5],
    'the waiting records, once each',
  );
  const eu = (await diffAll(restored, 's.orders.eu')).records;
  const srcSeqs = eu.map((r: any) => Number(String(r.meta._spool_router).split(':').pop()));
  assert.deepEqual(srcSeqs, [1, 2, 4, 5, 7, 8, 10, 11, 13], 'eu-orders: every eu- record of the source, once, in order');
  assert.deepEqual(
    eu.map((r: any) => r.$node),
    eu.map(() => undefined),
    'preserve_node false survives',
  );
  await compareReads(live, restored, true);
}

test('a backup restores every kind of state: the restored server answers route by route as the live one', async () => {
  const live = await startServer({ env: { SERVICE_WORKERS: '2' } });
  const c = client(live.url);
  await buildLogs(c);
  const leases = await buildQueue(c);
  await buildRouters(c);

  const tarFile = path.join(tempDir(), 'state.tar');
  const backup = spool(['backup', tarFile, '--url', live.url]);
  assert.equal(backup.status, 0, backup.stderr);
  const dir = path.join(tempDir(), 'restored');
  const restore = spool(['restore', tarFile, dir]);
  assert.equal(restore.status, 0, restore.stderr);
  const verify = spool(['verify', dir]);
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  assert.doesNotMatch(verify.stdout, /router/, 'no note about routers');

  const restoredSrv = await startServer({ dataDir: dir, env: { SERVICE_WORKERS: '2' } });
  try {
    const r = client(restoredSrv.url);
    await compareReads(c, r);
    const ls = ['routers', 'ls'];
    assert.equal(spool([...ls, '--url', restoredSrv.url]).stdout, spool([...ls, '--url', live.url]).stdout, 'spool routers ls');
    await compareWrites(c, r, leases);
  } finally {
    await restoredSrv.stop();
    await live.stop();
  }
});
