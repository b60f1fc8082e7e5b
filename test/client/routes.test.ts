// The client library against a real spawned server (docs/CLIENT.md, docs/API.md): every built
// route through its typed call, errors as SpoolError with code/status/detail, seqs as bigints,
// raw record texts, and the package export `spool/client`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Server } from '../helpers/server.js';
import { useSpoolServer, spoolError } from '../helpers/spoolServer.js';
import { Spool, SpoolError } from '../../src/client/index.js';

let srv: Server;
let spool: Spool;
useSpoolServer((s, c) => ((srv = s), (spool = c)));

test('probes: health, ready, metrics (text and JSON)', async () => {
  const h = await spool.health();
  assert.equal(h.status, 'ok');
  assert.equal(typeof h.uptime_ms, 'number');
  const r = await spool.ready();
  assert.equal(r.status, 'ready');
  assert.match(await spool.metrics(), /^# HELP spool_/m);
  const j = await spool.metricsJson();
  assert.equal(typeof j.topics, 'number');
});

test('topics: put creates then is a no-op, get, list pages through every topic, delete (with if_empty)', async () => {
  const names = ['rt.a', 'rt.b', 'rt.c', 'rt.d', 'rt.e'];
  for (const n of names) {
    const r = await spool.putTopic(n, { durability: 'memory' });
    assert.equal(r.created, true);
    assert.equal(r.config.durability, 'memory');
  }
  assert.equal((await spool.putTopic('rt.a', { durability: 'memory' })).created, false);
  const st = await spool.getTopic('rt.a');
  assert.equal(st.topic, 'rt.a');
  assert.equal(st.head_seq, 0);
  assert.equal(st.next_seq, 1);
  const page = await spool.listTopics({ prefix: 'rt.', page_size: 2 });
  assert.equal(page.topics.length, 2);
  assert.ok(page.next_cursor);
  const all: string[] = [];
  for await (const t of spool.topics({ prefix: 'rt.', page_size: 2 })) all.push(t.topic);
  assert.deepEqual(all, names);

  await spool.append('rt.b', [{ data: 1 }]);
  const notEmpty = await spoolError(() => spool.deleteTopic('rt.b', { if_empty: true }));
  assert.equal(notEmpty.code, 'topic_not_empty');
  assert.equal(notEmpty.status, 409);
  assert.deepEqual(notEmpty.detail, { topic: 'rt.b', count: 1 });
  assert.equal((await spool.deleteTopic('rt.b')).deleted, true);
  assert.equal((await spool.deleteTopic('rt.b')).deleted, false);
});

test('append and diff: seqs, created, return_seqs false, tags and meta, raw texts, long-poll', async () => {
  const t = 'rt.append';
  const a = await spool.append(
    t,
    [
      { data: { n: 1 }, tag: 'x.1', meta: { m: 1 } },
      { data: 'two', node: 'n1' },
    ],
    { create: true },
  );
  assert.equal(a.created, true);
  assert.deepEqual(a.seqs, [1, 2]);
  const b = await spool.append(t, [{ data: 3, tag: 'y' }], { return_seqs: false });
  assert.equal(b.first_seq, 3);
  assert.equal(b.seqs, undefined);

  const d = await spool.diff(t, { include_tags: true });
  assert.deepEqual(
    d.records.map((r) => [r.$seq, r.data, r.$tag, r.$node, r.meta]),
    [
      [1, { n: 1 }, 'x.1', undefined, { m: 1 }],
      [2, 'two', undefined, 'n1', undefined],
      [3, 3, 'y', undefined, undefined],
    ],
  );
  assert.equal(d.caught_up, true);
  assert.equal(d.next_from_seq, 3);
  const n = await spool.diff(t, { node: 'n1', include_meta: false });
  assert.deepEqual(
    n.records.map((r) => r.$seq),
    [1, 3],
  );
  assert.equal(n.records[0]!.meta, undefined);

  // verbatim: what JSON.parse would lose comes back as the exact text
  await spool.appendRaw(t, '{"records":[{"data":{"big":12345678901234567890,"e":1e400}}]}');
  const raw = await spool.diff(t, { from_seq: 3, raw: true });
  assert.equal(raw.records[0]!.data, '{"big":12345678901234567890,"e":1e400}');

  // long-poll: a diff at the head waits until the next append
  const t0 = Date.now();
  const waiting = spool.diff(t, { from_seq: 4, wait_ms: 5000 });
  setTimeout(() => void spool.append(t, [{ data: 'late' }]), 300);
  const w = await waiting;
  assert.deepEqual(
    w.records.map((r) => r.data),
    ['late'],
  );
  assert.ok(Date.now() - t0 >= 250, 'the diff waited for the append');
});

test('deleteRecords: before_seq, a tag Eq and a Glob prefix', async () => {
  const t = 'rt.del';
  await spool.append(t, [{ data: 1, tag: 'a.1' }, { data: 2, tag: 'a.2' }, { data: 3, tag: 'b' }, { data: 4, tag: 'a.3' }, { data: 5 }]);
  assert.equal((await spool.deleteRecords(t, { before_seq: 2 })).deleted, 1);
  assert.equal((await spool.deleteRecords(t, { match: ['tag', 'Eq', 'b'] })).deleted, 1);
  const g = await spool.deleteRecords(t, { match: ['tag', 'Glob', 'a.*'] });
  assert.equal(g.deleted, 2);
  assert.equal(g.count, 1);
  assert.deepEqual(
    (await spool.diff(t)).records.map((r) => r.data),
    [5],
  );
  const bad = await spoolError(() => spool.deleteRecords(t, { match: ['tag', 'Glob', 'nostar'] }));
  assert.equal(bad.code, 'invalid_request');
  assert.equal(bad.status, 400);
});

test('watch: createWatch returns the session; watch() yields records, caught-up, tombstones and topic-deleted', async () => {
  const t = 'rt.watch';
  await spool.putTopic(t, { cap_records: 3 });
  await spool.append(
    t,
    [1, 2, 3, 4, 5].map((n) => ({ data: n })),
  );
  const s = await spool.createWatch({ topics: { [t]: {} } });
  assert.match(s.wid, /^wid_/);
  assert.equal(s.stream_url, `/v0/watch/${s.wid}`);
  assert.equal(s.topics[t]!.head_seq, 5);

  const w = spool.watch({ topics: { [t]: { from_seq: 0 } } });
  const seen: string[] = [];
  for await (const ev of w) {
    if (ev.type === 'record') seen.push(`r${ev.record.$seq}`);
    else if (ev.type === 'tombstone') seen.push(`t${ev.gap_from}-${ev.gap_to}:${ev.reason}`);
    else if (ev.type === 'caught-up') {
      seen.push('c');
      if (seen.filter((x) => x === 'c').length === 1) await spool.deleteTopic(t);
    } else if (ev.type === 'topic-deleted') seen.push('d');
  }
  // the iteration ends by itself: its only topic is gone
  assert.deepEqual(seen, ['t1-2:from_seq_too_old', 'r3', 'r4', 'r5', 'c', 'd']);
  assert.equal(Buffer.from(w.cursor, 'base64url').toString(), `{"${t}":5}`);
});

test('follow: records by long-poll diff, caught-up once per catch-up', async () => {
  const t = 'rt.follow';
  await spool.append(t, [{ data: 1 }, { data: 2 }]);
  const ctl = new AbortController();
  const got: unknown[] = [];
  setTimeout(() => void spool.append(t, [{ data: 3 }]), 200);
  await assert.rejects(
    (async () => {
      for await (const ev of spool.follow(t, { wait_ms: 2000, signal: ctl.signal })) {
        got.push(ev.type === 'record' ? ev.record.data : ev.type);
        if (ev.type === 'record' && ev.record.data === 3) ctl.abort();
      }
    })(),
    (e: unknown) => e instanceof SpoolError && e.code === 'aborted',
  );
  assert.deepEqual(got, [1, 2, 'caught-up', 3]);
});

test('queues: claim, extend, nack, ack with lease_id fencing; a stale lease id is skipped', async () => {
  const q = 'rt.q';
  await spool.putTopic(q, { type: 'queue' });
  await spool.append(q, [{ data: 'j1' }, { data: 'j2' }]);
  const c = await spool.claim(q, { node: 'w1', max: 2, lease_ms: 5000 });
  assert.equal(c.count, 2);
  const [j1, j2] = c.claimed;
  assert.match(j1!.lease_id, /^lease_[0-9a-f]+$/);
  assert.equal(j1!.deliveries, 1);
  const e = await spool.extend(q, { node: 'w1', seqs: [j1!.$seq], lease_ids: [j1!.lease_id], lease_ms: 10_000 });
  assert.equal(e.extended, 1);
  assert.ok(e.deadlines[String(j1!.$seq)]! > Date.now() + 8000);

  const n = await spool.nack(q, { node: 'w1', seqs: [j2!.$seq], lease_ids: [j2!.lease_id] });
  assert.equal(n.nacked, 1);
  const again = await spool.claim(q, { node: 'w2' });
  assert.equal(again.claimed[0]!.$seq, j2!.$seq);
  assert.equal(again.claimed[0]!.deliveries, 2);
  // w1's old lease id for j2 no longer fences anything: skipped, not acked
  const stale = await spool.ack(q, { node: 'w1', seqs: [j2!.$seq], lease_ids: [j2!.lease_id] });
  assert.deepEqual([stale.acked, stale.skipped], [0, [j2!.$seq]]);
  const ok = await spool.ack(q, { node: 'w2', seqs: [j2!.$seq], lease_ids: [again.claimed[0]!.lease_id] });
  assert.equal(ok.acked, 1);
  assert.equal((await spool.ack(q, { node: 'w1', seqs: [j1!.$seq], lease_ids: [j1!.lease_id] })).acked, 1);
  assert.deepEqual((await spool.getTopic(q)).queue, { ready: 0, in_flight: 0, dead_lettered: 0 });
});

test('work(): jobs pushed on a /work connection; closing it releases their leases', async () => {
  const q = 'rt.work';
  await spool.putTopic(q, { type: 'queue' });
  await spool.append(q, [{ data: { a: 1 } }, { data: { a: 2 } }, { data: { a: 3 } }]);
  const ctl = new AbortController();
  const jobs: { seq: number; data: unknown }[] = [];
  await assert.rejects(
    (async () => {
      for await (const ev of spool.work(q, { node: 'pw', max: 2, signal: ctl.signal })) {
        if (ev.type !== 'job') continue;
        jobs.push({ seq: ev.job.$seq as number, data: ev.job.data });
        if (jobs.length === 2) ctl.abort();
      }
    })(),
    (e: unknown) => e instanceof SpoolError && e.code === 'aborted',
  );
  assert.deepEqual(jobs, [
    { seq: 1, data: { a: 1 } },
    { seq: 2, data: { a: 2 } },
  ]);
  // released at once on close
  for (let i = 0; i < 100 && (await spool.getTopic(q)).queue!.in_flight > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual((await spool.getTopic(q)).queue, { ready: 3, in_flight: 0, dead_lettered: 0 });
});

test('errors are SpoolError with the server code, status and detail', async () => {
  const nf = await spoolError(() => spool.getTopic('rt.absent'));
  assert.deepEqual([nf.code, nf.status, nf.detail], ['topic_not_found', 404, { topic: 'rt.absent' }]);
  assert.equal(nf.transient, false);
  const badName = await spoolError(() => spool.getTopic('-bad'));
  assert.deepEqual([badName.code, badName.status], ['invalid_request', 400]);
  await spool.putTopic('rt.err', {});
  const incompatible = await spoolError(() => spool.putTopic('rt.err', { type: 'queue' }));
  assert.deepEqual([incompatible.code, incompatible.status], ['topic_exists_incompatible', 409]);
  const notQueue = await spoolError(() => spool.claim('rt.err', { node: 'x' }));
  assert.deepEqual([notQueue.code, notQueue.status], ['not_a_queue', 409]);
  await spool.putTopic('rt.full', { cap_records: 1, discard: 'reject' });
  await spool.append('rt.full', [{ data: 1 }]);
  const full = await spoolError(() => spool.append('rt.full', [{ data: 2 }]));
  assert.deepEqual([full.code, full.status], ['topic_full', 422]);
  const big = await spoolError(() => spool.append('rt.err', [{ data: 'x'.repeat(1_100_000) }]));
  assert.deepEqual([big.code, big.status, big.detail?.limit], ['record_too_large', 400, 'record_bytes']);
  const gone = await spoolError(() => new Spool({ url: 'http://127.0.0.1:1', retry: false }).health());
  assert.deepEqual([gone.code, gone.status, gone.transient], ['network_error', 0, true]);
  const ctl = new AbortController();
  const p = spool.diff('rt.err', { wait_ms: 10_000, signal: ctl.signal });
  setTimeout(() => ctl.abort(), 50);
  assert.equal((await spoolError(() => p)).code, 'aborted');
  const slow = new Spool({ url: srv.url, timeoutMs: 100, retry: false });
  await spool.putTopic('rt.slow', {});
  // a long-poll's own wait extends the timeout; a raw request holding the server for 1 s does not
  assert.equal((await slow.diff('rt.slow', { wait_ms: 300 })).caught_up, true);
  const to = await spoolError(() =>
    slow.transport.request({ method: 'POST', path: '/v0/topics/rt.slow/diff', body: '{"wait_ms":1000}', idempotent: true }),
  );
  assert.deepEqual([to.code, to.status, to.transient], ['timeout', 0, true]);
});

test("int64 'bigint': every seq is a bigint, in responses and in requests", async () => {
  const b = new Spool({ url: srv.url, int64: 'bigint' });
  const t = 'rt.big';
  const a = await b.append(t, [{ data: 1 }, { data: 2 }]);
  assert.deepEqual(a.seqs, [1n, 2n]);
  assert.equal(a.head_seq, 2n);
  const d = await b.diff(t, { from_seq: 1n });
  assert.equal(d.records[0]!.$seq, 2n);
  assert.equal(d.next_from_seq, 2n);
  const st = await b.getTopic(t);
  assert.equal(st.earliest_seq, 1n);
  assert.equal(typeof st.count, 'number');
});

test("the package exports 'spool/client' with types, and it is the same module", async () => {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const pkg = JSON.parse(fs.readFileSync(path.resolve(here, '../../../package.json'), 'utf8'));
  const exp = pkg.exports['./client'];
  assert.ok(fs.existsSync(path.resolve(here, '../../..', exp.types)), `types at ${exp.types}`);
  const name = 'spool/client'; // a variable, so tsc does not resolve it at build time
  const mod = (await import(name)) as typeof import('../../src/client/index.js');
  assert.equal(mod.Spool, Spool, 'self-reference resolves to the built client');
  assert.equal(typeof mod.SpoolError, 'function');
});
