// Sleeping topics through HTTP on a real server (docs/ARCHITECTURE.md "Dormant topics"):
// with SERVICE_TOPIC_SLEEP_MS short, quiet topics go to sleep (spool_topics_sleeping on
// /v0/metrics counts them, spool_topic_actors no longer does), yet every request answers as
// before: lists, state, diffs with tags and node filters, appends that continue the seqs, record
// deletes, topic deletes, a repeated idempotency key. Then SIGKILL with most topics asleep: every
// acknowledged `fsync` record comes back, and a clean restart continues each topic at head + 1.
// Also: a data dir whose newest snapshot is version 1 (before lazy recovery) recovers, and its
// next checkpoint writes version 2; and SERVICE_TOPICS_AWAKE alone puts topics to sleep.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, killServersAfterFile, startServer, tempDir, type Server } from '../helpers/server.js';
import { raw } from '../http/util.js';
import fs from 'node:fs';
import path from 'node:path';
import { decodeSnapshot, encodeSnapshot } from '../../src/storage/snapshot.js';
import type { SectionPart } from '../../src/storage/snapshotSectionFormat.js';

killServersAfterFile();

const TOPICS = 300;
const name = (i: number) => `sleepy.${String(i).padStart(3, '0')}`;
const env = { SERVICE_WORKERS: '2', SERVICE_TOPIC_SLEEP_MS: '200' };

async function metric(srv: Server, m: string): Promise<number> {
  const r = await raw(srv.url, 'GET', '/v0/metrics');
  const hit = new RegExp(`^${m} (\\d+)$`, 'm').exec(r.text);
  assert.ok(hit, `${m} is reported`);
  return Number(hit[1]);
}

/** Waits until `ok` holds (polling every 50 ms, for at most 10 s); fails with `what`. */
async function until(what: string, ok: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await ok())) {
    assert.ok(Date.now() < deadline, what);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One worker, topics asleep after 200 ms of quiet: the TTL and queue tests below. */
const quickSleepEnv = { SERVICE_WORKERS: '1', SERVICE_TOPIC_SLEEP_MS: '200' };

/** Waits until at least `n` topics sleep (the sweep runs every 100 ms). */
async function untilSleeping(srv: Server, n: number): Promise<number> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const s = await metric(srv, 'spool_topics_sleeping');
    if (s >= n) return s;
    if (Date.now() > deadline) throw new Error(`only ${s} of ${n} topics went to sleep`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('sleeping topics answer as awake ones, and survive SIGKILL and a clean restart', { timeout: 180_000 }, async () => {
  const dataDir = tempDir('spool-dormancy-');
  let srv = await startServer({ dataDir, env });
  let c = client(srv.url);
  const acked = new Map<string, { data: unknown; tag?: string }[]>();
  for (let i = 0; i < TOPICS; i++) {
    const t = name(i);
    if (i % 3 === 0) assert.equal((await c.put(`/v0/topics/${t}`, { durability: 'fsync', auto_priority: true })).status, 201);
    const records = [{ data: { i, n: 1 }, tag: 'red', node: 'n1' }, { data: { i, n: 2 }, tag: 'blue' }, { data: `r3-${i}` }];
    const r = await c.post(`/v0/topics/${t}`, { records }, { 'Idempotency-Key': `k-${i}` });
    assert.ok(r.status === 200 || r.status === 201, `${t}: ${r.status} ${r.text}`);
    acked.set(
      t,
      records.map(({ data, tag }) => (tag ? { data, tag } : { data })),
    );
  }
  const before = (await c.get(`/v0/topics/${name(3)}`)).body;
  const slept = await untilSleeping(srv, TOPICS - 10);
  assert.ok((await metric(srv, 'spool_topic_actors')) <= TOPICS - slept, 'a sleeping topic holds no actor');
  assert.equal(await metric(srv, 'spool_topics'), TOPICS);
  assert.equal(await metric(srv, 'spool_records_live'), 3 * TOPICS, 'sleeping topics count their records');

  // Reads of sleeping topics: a list page, a state read (watermarks as they were), diffs.
  const page = (await c.get(`/v0/topics?page_size=1000&prefix=sleepy.`)).body;
  assert.equal(page.topics.length, TOPICS);
  assert.deepEqual(page.topics[3], {
    topic: name(3),
    head_seq: 3,
    earliest_seq: 1,
    count: 3,
    bytes: before.bytes,
    durable: true,
    effective_priority: page.topics[3].effective_priority,
  });
  // Timings, the decaying auto priority and the read time this very read sets aside.
  const steady = ({ performance: _p, effective_priority: _e, last_read_ts: _r, ...rest }: Record<string, unknown>) => rest;
  assert.deepEqual(
    steady((await c.get(`/v0/topics/${name(3)}`)).body),
    steady(before),
    'the state of a topic woken from sleep is the state it slept with',
  );
  const d = await c.post(`/v0/topics/${name(7)}/diff`, { from_seq: 0, include_tags: true, node: 'n1' });
  assert.equal(d.status, 200);
  assert.deepEqual(
    d.body.records.map((r: { data: unknown; $tag?: string }) => [r.data, r.$tag]),
    [
      [{ i: 7, n: 2 }, 'blue'],
      [`r3-7`, undefined],
    ],
    'the node filter and tags work on a woken topic',
  );

  // Writes to sleeping topics: an append continues the seqs, a repeated idempotency key is a
  // replay of the first batch, a record delete by tag, a topic delete.
  await untilSleeping(srv, TOPICS - 10);
  const a = await c.post(`/v0/topics/${name(9)}`, { records: [{ data: 'four' }] });
  assert.equal(a.status, 200);
  assert.deepEqual(a.body.seqs, [4]);
  acked.get(name(9))!.push({ data: 'four' });
  const again = await c.post(`/v0/topics/${name(12)}`, { records: [{ data: 'dup' }] }, { 'Idempotency-Key': 'k-12' });
  assert.deepEqual(again.body.seqs, [1, 2, 3], 'the idempotency key outlives the sleep');
  assert.equal((await c.post(`/v0/topics/${name(15)}/delete`, { match: ['tag', 'Eq', 'red'] })).status, 200);
  acked.set(name(15), acked.get(name(15))!.slice(1));
  assert.equal((await c.del(`/v0/topics/${name(18)}`)).status, 200);
  acked.delete(name(18));
  assert.equal((await c.get(`/v0/topics/${name(18)}`)).status, 404);

  // SIGKILL with most topics asleep: every acked record of the fsync topics is back.
  await untilSleeping(srv, TOPICS - 20);
  await srv.kill();
  srv = await startServer({ dataDir, env });
  c = client(srv.url);
  for (const [t, records] of acked) {
    const i = Number(t.slice(-3));
    if (i % 3 !== 0) continue;
    const got = await c.post(`/v0/topics/${t}/diff`, { from_seq: 0, include_tags: true });
    assert.equal(got.status, 200, t);
    assert.deepEqual(
      got.body.records.map((r: { data: unknown; $tag?: string }) => (r.$tag ? { data: r.data, tag: r.$tag } : { data: r.data })),
      records,
      `${t} after SIGKILL`,
    );
  }
  assert.equal((await c.get(`/v0/topics/${name(18)}`)).status, 404, 'a deleted topic stays deleted');

  // A clean restart with topics asleep continues each at head + 1 (the final checkpoint records heads).
  await untilSleeping(srv, TOPICS - 20);
  const heads = new Map<string, number>();
  for (const t of [name(1), name(9), name(30)]) heads.set(t, (await c.get(`/v0/topics/${t}`)).body.head_seq);
  await untilSleeping(srv, TOPICS - 20);
  assert.equal(await srv.stop(), 0);
  srv = await startServer({ dataDir, env });
  c = client(srv.url);
  for (const [t, head] of heads) {
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: 'after' }] });
    assert.deepEqual(r.body.seqs, [head + 1], `${t} continues at head + 1 after a clean restart`);
  }
  await srv.stop();
});

test('a data dir whose newest snapshot is version 1 (before lazy recovery) upgrades in place', { timeout: 120_000 }, async () => {
  const dataDir = tempDir('spool-snap-upgrade-');
  let srv = await startServer({ dataDir, env });
  let c = client(srv.url);
  const want = new Map<string, unknown[]>();
  for (let i = 0; i < 40; i++) {
    const t = `up.${i}`;
    if (i % 2 === 0) assert.equal((await c.put(`/v0/topics/${t}`, { durability: 'fsync' })).status, 201);
    const data = [i, `x${i}`];
    assert.ok((await c.post(`/v0/topics/${t}`, { records: data.map((d) => ({ data: d })) })).status < 300);
    want.set(t, data);
  }
  assert.equal(await srv.stop(), 0);
  // Rewrite the final (version 2) snapshot as version 1 holds it: every part in one JSON body.
  const meta = path.join(dataDir, 'meta');
  const newest = fs
    .readdirSync(meta)
    .filter((n) => n.endsWith('.snap'))
    .sort()
    .at(-1)!;
  const v2 = decodeSnapshot(fs.readFileSync(path.join(meta, newest)))!;
  assert.equal(v2.version, 2);
  const topics = v2.topics.map(({ runs: _r, wm: _w, ...part }: SectionPart) => part);
  fs.writeFileSync(path.join(meta, newest), encodeSnapshot({ ...v2, version: 1, topics }));
  assert.equal(fs.readFileSync(path.join(meta, newest)).readUInt32LE(8), 1);
  const check = async (what: string) => {
    for (const [t, data] of want) {
      const r = await c.post(`/v0/topics/${t}/diff`, { from_seq: 0 });
      assert.deepEqual(
        r.body.records.map((x: { data: unknown }) => x.data),
        data,
        `${t} ${what}`,
      );
    }
  };
  srv = await startServer({ dataDir, env });
  c = client(srv.url);
  await check('from the version 1 snapshot');
  assert.equal(await srv.stop(), 0);
  const after = fs
    .readdirSync(meta)
    .filter((n) => n.endsWith('.snap'))
    .sort()
    .at(-1)!;
  assert.equal(fs.readFileSync(path.join(meta, after)).readUInt32LE(8), 2, 'the next checkpoint writes version 2');
  srv = await startServer({ dataDir, env });
  c = client(srv.url);
  await check('from the version 2 snapshot written after it');
  await srv.stop();
});

test(
  'SERVICE_TOPICS_AWAKE: past the cap the least recently used topics sleep however recent, and wake on their next request',
  { timeout: 60_000 },
  async () => {
    const dataDir = tempDir('spool-awake-');
    // Nothing would sleep for an hour by age: only the cap puts topics to sleep.
    const srv = await startServer({
      dataDir,
      env: { SERVICE_WORKERS: '1', SERVICE_TOPIC_SLEEP_MS: '3600000', SERVICE_TOPICS_AWAKE: '10' },
    });
    const c = client(srv.url);
    for (let i = 0; i < 40; i++) assert.equal((await c.post(`/v0/topics/${name(i)}`, { records: [{ data: i }] })).status, 201); // created by the append
    await untilSleeping(srv, 30);
    assert.ok((await metric(srv, 'spool_topic_actors')) <= 10, 'at most SERVICE_TOPICS_AWAKE topics keep an actor');
    // The most recent ones stayed awake; an early one wakes with its record.
    const d = await c.post(`/v0/topics/${name(0)}/diff`, { from_seq: 0 }); // records after seq 0
    assert.deepEqual(
      d.body.records.map((r: { data: unknown }) => r.data),
      [0],
    );
    await srv.stop();
  },
);

test(
  'TTL topics sleep while none of their records is about to expire, wake ahead of it, and sleep again once all expired; restarts keep it so',
  { timeout: 120_000 },
  async () => {
    const dataDir = tempDir('spool-dormancy-ttl-');
    let srv = await startServer({ dataDir, env: quickSleepEnv });
    const c = () => client(srv.url);
    // `short` (two appends 500 ms apart) and `once` (one append) expire within the test, `long`
    // does not; `plain` has no TTL.
    const TTL = 3000;
    for (const t of ['ttl.short', 'ttl.once']) assert.equal((await c().put(`/v0/topics/${t}`, { ttl_ms: TTL })).status, 201);
    assert.equal((await c().put('/v0/topics/ttl.long', { ttl_ms: 3_600_000 })).status, 201);
    const t0 = Date.now();
    for (const t of ['ttl.short', 'ttl.once', 'ttl.long', 'ttl.plain'])
      assert.equal((await c().post(`/v0/topics/${t}`, { records: [{ data: 1 }, { data: 2 }] })).status, t === 'ttl.plain' ? 201 : 200);
    await new Promise((r) => setTimeout(r, 500));
    const t1 = Date.now();
    assert.equal((await c().post('/v0/topics/ttl.short', { records: [{ data: 3 }] })).status, 200);
    const listed = async () => {
      const page = (await c().get('/v0/topics?prefix=ttl.&page_size=10')).body as {
        topics: { topic: string; count: number; earliest_seq: number; head_seq: number; bytes: number }[];
      };
      return Object.fromEntries(page.topics.map((p) => [p.topic, [p.count, p.earliest_seq, p.head_seq]]));
    };
    const sleepingNow = () => metric(srv, 'spool_topics_sleeping');
    // All four sleep: `short`'s first records expire only in TTL - TTL_WAKE_AHEAD_MS (2 s).
    assert.equal(await untilSleeping(srv, 4), 4);
    assert.ok(Date.now() - t0 < TTL - 1000, 'slept before the wake ahead of expiry is due (else the test proves nothing)');
    assert.deepEqual(await listed(), { 'ttl.short': [3, 1, 3], 'ttl.once': [2, 1, 2], 'ttl.long': [2, 1, 2], 'ttl.plain': [2, 1, 2] });
    // A second before its first records expire, `short` wakes: it expires in two steps, and the
    // figures of a sleeping topic cannot show the step between. `once` expires all at once: asleep.
    await until('the TTL topic woke ahead of its expiry', async () => (await sleepingNow()) === 3);
    assert.ok(Date.now() - t0 < TTL + 500, `it woke ahead of its expiry, ${Date.now() - t0} ms after the append`);
    await new Promise((r) => setTimeout(r, Math.max(0, t0 + TTL + 200 - Date.now())));
    // Expiry under way: `short` counts its last record only (awake, exact); `once`, asleep, none.
    assert.deepEqual(await listed(), { 'ttl.short': [1, 3, 3], 'ttl.once': [0, 3, 2], 'ttl.long': [2, 1, 2], 'ttl.plain': [2, 1, 2] });
    assert.equal(await sleepingNow(), 3, '`once` stayed asleep through its expiry');
    await new Promise((r) => setTimeout(r, Math.max(0, t1 + TTL + 200 - Date.now())));
    // All expired: `short` may sleep again, and counts none asleep.
    assert.equal(await untilSleeping(srv, 4), 4);
    assert.deepEqual(
      await listed(),
      { 'ttl.short': [0, 4, 3], 'ttl.once': [0, 3, 2], 'ttl.long': [2, 1, 2], 'ttl.plain': [2, 1, 2] },
      'sleeping topics whose records all expired count none',
    );
    assert.equal(await metric(srv, 'spool_records_live'), 4, 'the metrics count the expired topics empty too');
    // A read wakes a topic and expires the records for real: a TTL tombstone, no records.
    for (const [t, next] of [
      ['ttl.short', 3],
      ['ttl.once', 2],
    ] as const) {
      const d = await c().post(`/v0/topics/${t}/diff`, { from_seq: 0 });
      assert.equal(d.status, 200);
      assert.deepEqual([d.body.records.length, d.body.tombstone?.reason, d.body.next_from_seq], [0, 'ttl', next], t);
    }

    // SIGKILL (no checkpoint since: topics come back by the WAL), then SIGTERM (the final
    // checkpoint keeps them asleep with first_ts_ms): the figures stay, and so does the expiry.
    // (After SIGKILL a head moves up to the topic's seq reservation: seqs are never reused.)
    const afterCrash = (l: Record<string, number[]>) => {
      const h = (t: string) => l[t]![2]!;
      assert.deepEqual(l, {
        'ttl.short': [0, h('ttl.short') + 1, h('ttl.short')],
        'ttl.once': [0, h('ttl.once') + 1, h('ttl.once')],
        'ttl.long': [2, 1, h('ttl.long')],
        'ttl.plain': [2, 1, h('ttl.plain')],
      });
    };
    await srv.kill();
    srv = await startServer({ dataDir, env: quickSleepEnv });
    afterCrash(await listed());
    await untilSleeping(srv, 4);
    afterCrash(await listed());
    assert.equal(await srv.stop(), 0);
    srv = await startServer({ dataDir, env: quickSleepEnv });
    assert.equal(await metric(srv, 'spool_topics_sleeping'), 4, 'restored asleep from the final checkpoint');
    afterCrash(await listed());
    const long = await c().post('/v0/topics/ttl.long/diff', { from_seq: 0 });
    assert.deepEqual(
      long.body.records.map((r: { data: unknown }) => r.data),
      [1, 2],
    );
    await srv.stop();
  },
);

test(
  'queues sleep once their leases and delays are over: claims after a wake keep delivery counts, dead-lettering and unique lease ids, across SIGKILL and a clean restart',
  { timeout: 120_000 },
  async () => {
    const dataDir = tempDir('spool-dormancy-queue-');
    let srv = await startServer({ dataDir, env: quickSleepEnv });
    const c = () => client(srv.url);
    const q = 'jobs.tenant1';
    assert.equal(
      (await c().put(`/v0/topics/${q}`, { type: 'queue', lease_ms: 200, max_deliveries: 2, dead_letter: 'jobs.dead' })).status,
      201,
    );
    assert.equal((await c().post(`/v0/topics/${q}`, { records: [{ data: 'a' }, { data: 'b' }, { data: 'c' }] })).status, 200);
    const claim = async (max: number) => {
      const r = await c().post(`/v0/topics/${q}/claim`, { node: 'w1', max });
      assert.equal(r.status, 200, r.text);
      return r.body.claimed as { $seq: number; deliveries: number; lease_id: string }[];
    };
    const ids = new Set<string>();
    const note = (jobs: { lease_id: string }[]) => {
      for (const j of jobs) {
        assert.ok(!ids.has(j.lease_id), `lease id ${j.lease_id} handed out twice`);
        ids.add(j.lease_id);
      }
    };
    // First deliveries: a acked, b's lease left to expire, c untouched.
    const first = await claim(2);
    note(first);
    assert.deepEqual(
      first.map((j) => [j.$seq, j.deliveries]),
      [
        [1, 1],
        [2, 1],
      ],
    );
    assert.equal((await c().post(`/v0/topics/${q}/ack`, { node: 'w1', seqs: [1] })).status, 200);
    // Once b's lease expired (the sweep expires it), the queue and the log topics sleep.
    await untilSleeping(srv, 1);
    const state = async () => (await c().get(`/v0/topics/${q}`)).body.queue as { ready: number; in_flight: number; dead_lettered: number };
    const deadLettered = (n: number) => until(`dead_lettered reaches ${n}`, async () => (await state()).dead_lettered === n);
    // The metrics of a sleeping queue: every live job ready.
    const m = await raw(srv.url, 'GET', '/v0/metrics');
    assert.match(m.text, /^spool_queue_topics 1$/m, 'a sleeping queue counts as a queue topic');
    // A claim wakes it: b comes back with its second delivery, then c.
    const second = await claim(5);
    note(second);
    assert.deepEqual(
      second.map((j) => [j.$seq, j.deliveries]),
      [
        [2, 2],
        [3, 1],
      ],
    );
    assert.deepEqual(await state(), { ready: 0, in_flight: 2, dead_lettered: 0 });
    // Both leases expire; asleep again; b's third delivery would pass max_deliveries: dead-lettered.
    await new Promise((r) => setTimeout(r, 300));
    await untilSleeping(srv, 1);
    const third = await claim(5);
    note(third);
    assert.deepEqual(
      third.map((j) => [j.$seq, j.deliveries]),
      [[3, 2]],
      'b went to the dead-letter topic, c is on its second delivery',
    );
    await deadLettered(1);
    const dead = await c().post('/v0/topics/jobs.dead/diff', { from_seq: 0 });
    assert.deepEqual(
      dead.body.records.map((r: { data: unknown }) => r.data),
      ['b'],
    );

    // SIGKILL: c's lease is over (expired, or lost with the leases log); its delivery count and
    // the dead-letter counter are not: its next claim would be its third delivery, past
    // max_deliveries, so it goes to the dead-letter topic too.
    await srv.kill();
    srv = await startServer({ dataDir, env: quickSleepEnv });
    await untilSleeping(srv, 2);
    assert.equal((await state()).dead_lettered, 1);
    assert.deepEqual(await claim(5), []);
    await deadLettered(2); // counted once the dead-letter topic holds the job
    const deadAfter = await c().post('/v0/topics/jobs.dead/diff', { from_seq: 0 });
    assert.deepEqual(
      deadAfter.body.records.map((r: { data: unknown }) => r.data),
      ['b', 'c'],
    );
    // A clean restart keeps the queue asleep (the final checkpoint holds its part).
    await untilSleeping(srv, 2);
    assert.equal(await srv.stop(), 0);
    srv = await startServer({ dataDir, env: quickSleepEnv });
    assert.equal(await metric(srv, 'spool_topics_sleeping'), 2, 'restored asleep from the final checkpoint');
    assert.deepEqual(await state(), { ready: 0, in_flight: 0, dead_lettered: 2 });
    const d = await c().post(`/v0/topics/${q}`, { records: [{ data: 'd' }] });
    assert.equal(d.status, 200);
    ids.clear(); // a new boot epoch
    const fourth = await claim(5);
    note(fourth);
    assert.deepEqual(
      fourth.map((j) => [j.$seq, j.deliveries]),
      [[d.body.seqs[0], 1]],
    );
    await srv.stop();
  },
);

test(
  'topics with an own segment file sleep while a wake reads at most 1 MiB: reads and appends after a wake, SIGKILL, and a clean restart that keeps them asleep',
  { timeout: 120_000 },
  async () => {
    const dataDir = tempDir('spool-dormancy-own-');
    // Packs of 2 KiB per topic: each topic below rolls to a file of its own within a few appends.
    const ownEnv = { ...quickSleepEnv, SERVICE_PACK_BYTES: '2048' };
    let srv = await startServer({ dataDir, env: ownEnv });
    const c = () => client(srv.url);
    const N = 12;
    const topic = (i: number) => `own.${String(i).padStart(2, '0')}`;
    const acked = new Map<string, unknown[]>();
    for (let i = 0; i < N; i++) {
      assert.equal((await c().put(`/v0/topics/${topic(i)}`, { durability: 'fsync' })).status, 201);
      const records: unknown[] = [];
      for (let k = 0; k < 10; k++) {
        const data = { i, k, pad: 'p'.repeat(300) };
        assert.equal((await c().post(`/v0/topics/${topic(i)}`, { records: [{ data }] })).status, 200);
        records.push(data);
      }
      acked.set(topic(i), records);
    }
    // One topic past what a wake may read (1 MiB): it stays awake.
    for (let k = 0; k < 5; k++)
      assert.equal((await c().post('/v0/topics/own.big', { records: [{ data: 'b'.repeat(250_000) }] })).status, k === 0 ? 201 : 200);
    assert.equal(fs.readdirSync(path.join(dataDir, 'topics')).length, N + 1, 'every topic has a directory of its own');
    const check = async (what: string) => {
      for (const [t, records] of acked) {
        const d = await c().post(`/v0/topics/${t}/diff`, { from_seq: 0, limit: 1000 });
        assert.equal(d.status, 200, `${what}: ${t}`);
        assert.deepEqual(
          d.body.records.map((r: { data: unknown }) => r.data),
          records,
          `${what}: ${t}`,
        );
        assert.deepEqual(
          d.body.records.map((r: { $seq: number }) => r.$seq),
          records.map((_, k) => k + 1),
          `${what}: ${t}`,
        );
      }
    };
    assert.equal(await untilSleeping(srv, N), N);
    await new Promise((r) => setTimeout(r, 500)); // a few more sweeps
    assert.equal(await metric(srv, 'spool_topics_sleeping'), N, 'the topic past 1 MiB stays awake');
    await check('woken');
    // Appends after a wake continue the topic's file.
    for (const [t, records] of acked) {
      const data = { t, after: 'wake' };
      const r = await c().post(`/v0/topics/${t}`, { records: [{ data }] });
      assert.deepEqual([r.status, r.body.seqs], [200, [records.length + 1]], t);
      records.push(data);
    }
    await untilSleeping(srv, N);
    await check('asleep again');
    await untilSleeping(srv, N);
    // SIGKILL with them asleep: every acknowledged fsync record comes back; they sleep again.
    await srv.kill();
    srv = await startServer({ dataDir, env: ownEnv });
    await check('after SIGKILL');
    await untilSleeping(srv, N);
    await check('asleep after SIGKILL');
    await untilSleeping(srv, N);
    assert.equal(await srv.stop(), 0);
    srv = await startServer({ dataDir, env: ownEnv });
    // The final checkpoint recorded each one's file: their directories match, they stay asleep.
    assert.equal(await metric(srv, 'spool_topics_sleeping'), N, 'restored asleep from the final checkpoint');
    await check('after a clean restart');
    assert.equal((await c().get('/v0/topics/own.big')).body.count, 5);
    await srv.stop();
  },
);

test(
  "checkpoints keep sleeping topics' lines between them, and encode again the blocks whose topics changed: SIGKILL brings back every change",
  { timeout: 180_000 },
  async () => {
    // 2,100 topics: three blocks of table rows (1,024 rows each). One checkpoint a second.
    const N = 2100;
    const topic = (i: number) => `kept.${String(i).padStart(4, '0')}`;
    const keptEnv = { SERVICE_WORKERS: '1', SERVICE_TOPIC_SLEEP_MS: '200', SERVICE_CHECKPOINT_MS: '500' };
    const dataDir = tempDir('spool-kept-lines-');
    let srv = await startServer({ dataDir, env: keptEnv });
    const c = () => client(srv.url);
    const want = new Map<string, { seqs: number[]; data: unknown[] }>();
    for (let i = 0; i < N; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, N - i) }, async (_, k) => {
          const t = topic(i + k);
          const data = [
            { t, n: 1 },
            { t, n: 2 },
          ];
          assert.equal((await c().post(`/v0/topics/${t}`, { records: data.map((d) => ({ data: d })) })).status, 201, t);
          want.set(t, { seqs: [1, 2], data });
        }),
      );
    }
    await untilSleeping(srv, N);
    // A checkpoint has encoded them all and kept the lines (~100 B each).
    await until('the lines of every sleeping topic are kept', async () => (await metric(srv, 'spool_checkpoint_kept_bytes')) > N * 80);
    // Changes in each block: appends (a wake, then sleep again), a record delete, a topic delete.
    for (const i of [5, 1500, 2090]) {
      const t = topic(i);
      const r = await c().post(`/v0/topics/${t}`, { records: [{ data: { t, n: 3 } }] });
      assert.deepEqual([r.status, r.body.seqs], [200, [3]], t);
      want.get(t)!.seqs.push(3);
      want.get(t)!.data.push({ t, n: 3 });
    }
    assert.equal((await c().post(`/v0/topics/${topic(1200)}/delete`, { before_seq: 2 })).status, 200);
    want.get(topic(1200))!.seqs.shift();
    want.get(topic(1200))!.data.shift();
    await untilSleeping(srv, N);
    // A topic deleted while every other one sleeps.
    assert.equal((await c().del(`/v0/topics/${topic(40)}`)).status, 200);
    want.delete(topic(40));
    // Two more checkpoints (one a second) with every topic asleep, the changed blocks encoded again.
    await new Promise((r) => setTimeout(r, 2500));
    await srv.kill();
    srv = await startServer({ dataDir, env: keptEnv });
    const check = async (what: string) => {
      for (let i = 0; i < N; i += 50) {
        await Promise.all(
          Array.from({ length: Math.min(50, N - i) }, async (_, k) => {
            const t = topic(i + k);
            const d = await c().post(`/v0/topics/${t}/diff`, { from_seq: 0, limit: 100 });
            const w = want.get(t);
            if (!w) return assert.equal(d.status, 404, `${what}: ${t} was deleted`);
            assert.equal(d.status, 200, `${what}: ${t}`);
            assert.deepEqual(
              d.body.records.map((r: { $seq: number }) => r.$seq),
              w.seqs,
              `${what}: ${t}`,
            );
            assert.deepEqual(
              d.body.records.map((r: { data: unknown }) => r.data),
              w.data,
              `${what}: ${t}`,
            );
          }),
        );
      }
    };
    await check('after SIGKILL');
    assert.equal(await srv.stop(), 0);
  },
);

test(
  'appends after the checkpoint to sleeping topics: recovery keeps plain ones asleep with the records in their rows (capped or deleted-from ones wake); SIGKILL brings back every record',
  { timeout: 120_000 },
  async () => {
    // Lazy recovery's scan of the pack bytes written after the cut: a plain append to a topic
    // restored asleep joins its row instead of waking it (one pack read and an index each: 80k
    // such topics took 20 s of a restart). The later wake indexes the frames and checks the row.
    const N = 200;
    const topic = (i: number) => `late.${String(i).padStart(3, '0')}`;
    const capped = (i: number) => i % 10 === 0;
    const lateEnv = { SERVICE_WORKERS: '1', SERVICE_TOPIC_SLEEP_MS: '200', SERVICE_CHECKPOINT_MS: '3600000' };
    const dataDir = tempDir('spool-late-appends-');
    let srv = await startServer({ dataDir, env: lateEnv });
    const c = () => client(srv.url);
    const want = new Map<string, { seqs: number[]; data: unknown[] }>();
    await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        const t = topic(i);
        assert.equal(
          (await c().put(`/v0/topics/${t}`, { durability: 'fsync', ...(capped(i) ? { cap_records: 100 } : {}) })).status,
          201,
          t,
        );
        const data = [
          { t, n: 1 },
          { t, n: 2 },
        ];
        assert.equal((await c().post(`/v0/topics/${t}`, { records: data.map((d) => ({ data: d })) })).status, 200, t);
        want.set(t, { seqs: [1, 2], data });
      }),
    );
    await untilSleeping(srv, N);
    assert.equal(await srv.stop(), 0, 'a clean stop: the final checkpoint holds every topic asleep');

    // After the cut: appends to every other topic (one topic twice), a record delete in one.
    srv = await startServer({ dataDir, env: lateEnv });
    const appended = Array.from({ length: N }, (_, i) => i).filter((i) => i % 2 === 0);
    await Promise.all(
      appended.map(async (i) => {
        const t = topic(i);
        for (let round = 0; round < (i === 2 ? 2 : 1); round++) {
          const data = [
            { t, n: 3, round },
            { t, n: 4, round },
            { t, n: 5, round },
          ];
          const r = await c().post(`/v0/topics/${t}`, { records: data.map((d) => ({ data: d })) });
          assert.equal(r.status, 200, t);
          want.get(t)!.seqs.push(...(r.body.seqs as number[]));
          want.get(t)!.data.push(...data);
        }
      }),
    );
    assert.equal((await c().post(`/v0/topics/${topic(4)}/delete`, { before_seq: 2 })).status, 200);
    want.get(topic(4))!.seqs.shift();
    want.get(topic(4))!.data.shift();
    await new Promise((r) => setTimeout(r, 1000)); // the frames reach the packs (written after the WAL)
    await srv.kill();

    // Topics woken during recovery stay awake (no sleep for an hour): the sleeping count tells.
    srv = await startServer({ dataDir, env: { ...lateEnv, SERVICE_TOPIC_SLEEP_MS: '3600000' } });
    const woke = appended.filter(capped).length + 1; // capped ones, and the one with a record delete
    const sleeping = await metric(srv, 'spool_topics_sleeping');
    assert.ok(
      sleeping >= N - woke - 5 && sleeping <= N - woke,
      `plain appended topics stay asleep: ${sleeping} of ${N} asleep, ${woke} expected awake`,
    );
    // Their rows hold the appended records: the list page of sleeping topics (nothing is woken).
    const page = (await c().get(`/v0/topics?page_size=1000&prefix=late.`)).body as {
      topics: { topic: string; head_seq: number; count: number; bytes: number }[];
    };
    assert.equal(page.topics.length, N);
    for (const row of page.topics) {
      const w = want.get(row.topic)!;
      assert.equal(row.count, w.seqs.length, `${row.topic}: count`);
      assert.equal(
        row.bytes,
        w.data.reduce((n: number, d) => n + JSON.stringify(d).length, 0),
        `${row.topic}: bytes`,
      );
      assert.ok(row.head_seq >= w.seqs.at(-1)!, `${row.topic}: head ${row.head_seq} covers seq ${w.seqs.at(-1)}`);
    }
    // Every acked record, from a wake that indexes the packed frames and checks them against the row.
    for (const [t, w] of want) {
      const d = await c().post(`/v0/topics/${t}/diff`, { from_seq: 0, limit: 100 });
      assert.equal(d.status, 200, `${t}: ${d.text}`);
      assert.deepEqual(
        d.body.records.map((r: { $seq: number }) => r.$seq),
        w.seqs,
        `${t} after SIGKILL`,
      );
      assert.deepEqual(
        d.body.records.map((r: { data: unknown }) => r.data),
        w.data,
        `${t} after SIGKILL`,
      );
    }
    // An append continues past the head the row was padded to.
    const head = page.topics.find((r) => r.topic === topic(2))!.head_seq;
    const r = await c().post(`/v0/topics/${topic(2)}`, { records: [{ data: 'next' }] });
    assert.deepEqual(r.body.seqs, [head + 1]);
    assert.equal(await srv.stop(), 0);
  },
);

test(
  'a topic does not sleep while frames wait to be written to its pack or own file (SERVICE_SEGMENT_WRITE_DELAY_MS), then sleeps and wakes with all of them',
  { timeout: 60_000 },
  async () => {
    // What a wake reads back must be on disk: dormantOf answers 'later' while the pack map lacks
    // frames (packedWritten) or an own file has frames unwritten (ownSettled: allWritten). Frames
    // here wait 2.5 s before they are written, while the sweep looks every 100 ms.
    const dataDir = tempDir('spool-dormancy-unwritten-');
    const srv = await startServer({
      dataDir,
      env: { ...quickSleepEnv, SERVICE_PACK_BYTES: '2048', SERVICE_SEGMENT_WRITE_DELAY_MS: '2500' },
    });
    const c = client(srv.url);
    const want = new Map<string, unknown[]>();
    // A packed topic, and one whose second append rolls it to a file of its own.
    for (const [t, n] of [
      ['unwritten.packed', 1],
      ['unwritten.own', 2],
    ] as const) {
      assert.equal((await c.put(`/v0/topics/${t}`, { durability: 'fsync' })).status, 201);
      want.set(t, []);
      for (let k = 0; k < n; k++) {
        const data = { t, k, pad: 'p'.repeat(1500) };
        assert.equal((await c.post(`/v0/topics/${t}`, { records: [{ data }] })).status, 200, t);
        want.get(t)!.push(data);
      }
    }
    const sent = Date.now();
    await new Promise((r) => setTimeout(r, 1200));
    if (Date.now() - sent < 2300)
      assert.equal(await metric(srv, 'spool_topics_sleeping'), 0, 'no topic sleeps with frames still unwritten');
    assert.equal(await untilSleeping(srv, 2), 2, 'both sleep once their frames are written');
    for (const [t, data] of want) {
      const d = await c.post(`/v0/topics/${t}/diff`, { from_seq: 0, limit: 100 });
      assert.equal(d.status, 200, `${t}: ${d.text}`);
      assert.deepEqual(
        d.body.records.map((r: { data: unknown }) => r.data),
        data,
        t,
      );
    }
    assert.ok(fs.readdirSync(path.join(dataDir, 'topics')).length >= 1, 'one topic has a file of its own');
    assert.equal(await srv.stop(), 0);
  },
);
