// Health, readiness and metrics (docs/API.md "Health, readiness, metrics").
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertOk, namer, sleep, raw, assertError } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('probe');
const { srv, c } = httpSuite();

function packageVersion(): string {
  // compiled to dist/test/http/probes.test.js; package.json is at the repo root
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const rel of ['../../../package.json', '../../package.json']) {
    const p = path.resolve(here, rel);
    if (fs.existsSync(p)) return JSON.parse(fs.readFileSync(p, 'utf8')).version;
  }
  throw new Error('package.json not found');
}

interface Family {
  help?: string;
  type?: string;
  helpLine: number;
  typeLine: number;
  firstSample: number;
}
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseProm(text: string): { families: Map<string, Family>; samples: Sample[] } {
  const families = new Map<string, Family>();
  const samples: Sample[] = [];
  const fam = (n: string) => {
    let f = families.get(n);
    if (!f) families.set(n, (f = { helpLine: -1, typeLine: -1, firstSample: -1 }));
    return f;
  };
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    if (line === '') return;
    let m = /^# HELP (\S+) (.*)$/.exec(line);
    if (m) {
      const f = fam(m[1]!);
      f.help = m[2];
      f.helpLine = i;
      return;
    }
    m = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (m) {
      const f = fam(m[1]!);
      f.type = m[2];
      f.typeLine = i;
      return;
    }
    if (line.startsWith('#')) return;
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( \d+)?$/.exec(line);
    assert.ok(m, `malformed sample line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
      let lm;
      while ((lm = re.exec(m[3]))) labels[lm[1]!] = lm[2]!;
    }
    const v = m[4] === '+Inf' ? Infinity : m[4] === '-Inf' ? -Infinity : Number(m[4]);
    samples.push({ name: m[1]!, labels, value: v });
    // the family of a histogram/summary sample is its base name
    let base = m[1]!;
    for (const suf of ['_bucket', '_sum', '_count']) {
      if (base.endsWith(suf) && families.has(base.slice(0, -suf.length))) base = base.slice(0, -suf.length);
    }
    const f = fam(base);
    if (f.firstSample < 0) f.firstSample = i;
  });
  return { families, samples };
}

function one(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const hits = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  assert.equal(hits.length, 1, `exactly one sample ${name}${JSON.stringify(labels)}, found ${hits.length}`);
  return hits[0]!.value;
}

describe('health', () => {
  test('/v0/health and /healthz: 200 {status:"ok", version, uptime_ms}', async () => {
    const version = packageVersion();
    for (const p of ['/v0/health', '/healthz']) {
      const b = assertOk(await c.get(p), 200, p);
      assert.equal(b.status, 'ok');
      assert.equal(b.version, version, `${p}: version is the package version`);
      assert.ok(Number.isInteger(b.uptime_ms) && b.uptime_ms >= 0, `${p}: uptime_ms integer`);
    }
    const a = (await c.get('/v0/health')).body.uptime_ms;
    await sleep(60);
    const b = (await c.get('/v0/health')).body.uptime_ms;
    assert.ok(b >= a + 40, `uptime_ms grows: ${a} → ${b}`);
  });
});

describe('readiness', () => {
  test('/v0/ready and /readyz: 200 {status:"ready", wal_replay_complete:true, topics}', async () => {
    for (const p of ['/v0/ready', '/readyz']) {
      const b = assertOk(await c.get(p), 200, p);
      assert.equal(b.status, 'ready');
      assert.equal(b.wal_replay_complete, true);
      assert.ok(Number.isInteger(b.topics) && b.topics >= 0);
    }
  });

  test('topics counts live topics', async () => {
    const n0 = (await c.get('/v0/ready')).body.topics;
    const t1 = name();
    const t2 = name();
    await c.put(`/v0/topics/${t1}`);
    await c.post(`/v0/topics/${t2}`, { records: [{ data: 1 }] });
    assert.equal((await c.get('/v0/ready')).body.topics, n0 + 2);
    assert.equal((await c.get('/readyz')).body.topics, n0 + 2);
    await c.del(`/v0/topics/${t1}`);
    assert.equal((await c.get('/v0/ready')).body.topics, n0 + 1);
    await c.del(`/v0/topics/${t2}`);
    assert.equal((await c.get('/v0/ready')).body.topics, n0);
    const list = await c.get('/v0/topics?page_size=1000');
    assert.equal(list.body.topics.length, n0, 'matches the topic list');
  });
});

describe('metrics', () => {
  const GAUGES = [
    'spool_topics',
    'spool_topics_by_class',
    'spool_routers',
    'spool_records_live',
    'spool_bytes_live',
    'spool_queue_topics',
    'spool_topic_actors',
    'spool_queue_leases_in_flight',
    'spool_sse_connections',
    'spool_watch_sessions',
    'spool_ready',
    'spool_recovery_progress',
    'spool_uptime_seconds',
    'spool_topic_head_seq',
    'spool_topic_earliest_seq',
    'spool_topic_records_live',
    'spool_topic_bytes_live',
    'spool_topic_queue_ready',
    'spool_topic_queue_in_flight',
    'spool_topic_queue_oldest_ready_age_seconds',
    'spool_topic_metrics_truncated',
  ];
  const COUNTERS = [
    'spool_wal_frames_total',
    'spool_wal_batches_total',
    'spool_wal_fsyncs_total',
    'spool_wal_bytes_written_total',
    'spool_topic_queue_dead_lettered_total',
  ];
  const CLASSES = ['ephemeral', 'memory', 'disk', 'fsync'];

  test('Prometheus text: content type, HELP/TYPE before every family, the spool_ families', async () => {
    const t = name('m');
    await c.put(`/v0/topics/${t}`, { durability: 'fsync' });
    await c.post(`/v0/topics/${t}`, '{"records":[{"data":"abc"},{"data":{"k": 1},"meta":{"m":2}},{"data":null}]}');
    const r = await raw(srv.url, 'GET', '/v0/metrics');
    assert.equal(r.status, 200);
    const ct = String(r.headers['content-type']);
    assert.match(ct, /^text\/plain/, ct);
    assert.match(ct, /version=0\.0\.4/, ct);
    assert.match(ct, /charset=utf-8/i, ct);
    const { families, samples } = parseProm(r.text);
    for (const [fname, f] of families) {
      assert.ok(f.helpLine >= 0, `# HELP for ${fname}`);
      assert.ok(f.typeLine >= 0, `# TYPE for ${fname}`);
      if (f.firstSample >= 0) {
        assert.ok(f.helpLine < f.firstSample && f.typeLine < f.firstSample, `HELP/TYPE precede the samples of ${fname}`);
      }
    }
    for (const g of GAUGES) assert.equal(families.get(g)?.type, 'gauge', `${g} is a gauge`);
    for (const k of COUNTERS) assert.equal(families.get(k)?.type, 'counter', `${k} is a counter`);
    assert.equal(families.get('spool_wal_fsync_latency_seconds')?.type, 'histogram', 'spool_wal_fsync_latency_seconds is a histogram');

    // values
    const topics = one(samples, 'spool_topics');
    assert.equal(topics, (await c.get('/v0/ready')).body.topics);
    let byClass = 0;
    for (const cl of CLASSES) byClass += one(samples, 'spool_topics_by_class', { class: cl });
    assert.equal(byClass, topics, 'per-class gauges sum to spool_topics');
    assert.ok(one(samples, 'spool_topics_by_class', { class: 'fsync' }) >= 1);
    assert.equal(one(samples, 'spool_topic_head_seq', { topic: t }), 3);
    assert.equal(one(samples, 'spool_topic_earliest_seq', { topic: t }), 1);
    assert.equal(one(samples, 'spool_topic_records_live', { topic: t }), 3);
    const st = await c.get(`/v0/topics/${t}?touch=false`);
    assert.equal(one(samples, 'spool_topic_bytes_live', { topic: t }), st.body.bytes);
    assert.equal(st.body.bytes, 5 + 7 + 7 + 4);
    assert.ok(one(samples, 'spool_records_live') >= 3);
    assert.ok(one(samples, 'spool_bytes_live') >= st.body.bytes);
    assert.equal(one(samples, 'spool_ready'), 1);
    assert.equal(one(samples, 'spool_recovery_progress'), 1);
    assert.equal(one(samples, 'spool_topic_metrics_truncated'), 0);
    assert.ok(one(samples, 'spool_uptime_seconds') >= 0);
    assert.equal(one(samples, 'spool_routers'), 0);
    assert.equal(one(samples, 'spool_sse_connections'), 0);
    assert.equal(one(samples, 'spool_watch_sessions'), 0);
    assert.ok(one(samples, 'spool_wal_frames_total') >= 1, 'WAL frames after appends');
    assert.ok(one(samples, 'spool_wal_batches_total') >= 1);
    assert.ok(one(samples, 'spool_wal_bytes_written_total') > 0);
    assert.ok(one(samples, 'spool_wal_fsyncs_total') >= 1, 'an fsync-class append fsyncs');
    // histogram series
    const buckets = samples.filter((s) => s.name === 'spool_wal_fsync_latency_seconds_bucket');
    assert.ok(buckets.length >= 2, 'histogram buckets');
    assert.ok(
      buckets.some((b) => b.labels.le === '+Inf'),
      '+Inf bucket',
    );
    const count = one(samples, 'spool_wal_fsync_latency_seconds_count');
    one(samples, 'spool_wal_fsync_latency_seconds_sum');
    assert.equal(buckets.find((b) => b.labels.le === '+Inf')!.value, count, '+Inf bucket equals _count');
    assert.ok(count >= 1, 'fsync latency observed');
    const sorted = [...buckets].sort(
      (a, b) => Number(a.labels.le === '+Inf' ? Infinity : a.labels.le) - Number(b.labels.le === '+Inf' ? Infinity : b.labels.le),
    );
    for (let i = 1; i < sorted.length; i++) assert.ok(sorted[i]!.value >= sorted[i - 1]!.value, 'buckets are cumulative');
  });

  test('queue gauges: per-queue ready, in-flight, oldest ready age, dead-lettered; leases in flight in total and in JSON', async () => {
    const q = name('mq');
    await c.put(`/v0/topics/${q}`, { type: 'queue', max_deliveries: 1, dead_letter: `${q}.dlq` });
    await c.post(`/v0/topics/${q}`, { records: [{ data: 1 }, { data: 2 }, { data: 3 }, { data: 4 }] });
    const claim = await c.post(`/v0/topics/${q}/claim`, { node: 'w', max: 2 });
    assert.equal(claim.body.count, 2);
    // Job 1 was delivered once (max_deliveries 1): nacked, its next delivery moves it instead.
    await c.post(`/v0/topics/${q}/nack`, { node: 'w', seqs: [1] });
    const again = await c.post(`/v0/topics/${q}/claim`, { node: 'w2', max: 1 });
    assert.deepEqual(
      again.body.claimed.map((j: any) => j.$seq),
      [3],
      'job 1 went to the dead-letter topic',
    );
    let samples = parseProm((await raw(srv.url, 'GET', '/v0/metrics')).text).samples;
    for (let i = 0; i < 50 && one(samples, 'spool_topic_queue_dead_lettered_total', { topic: q }) !== 1; i++) {
      await new Promise((r) => setTimeout(r, 50));
      samples = parseProm((await raw(srv.url, 'GET', '/v0/metrics')).text).samples;
    }
    assert.equal(one(samples, 'spool_topic_queue_dead_lettered_total', { topic: q }), 1);
    assert.equal(one(samples, 'spool_topic_queue_in_flight', { topic: q }), 2, 'jobs 2 and 3 are leased');
    assert.equal(one(samples, 'spool_topic_queue_ready', { topic: q }), 1, 'job 4 is ready');
    const age = one(samples, 'spool_topic_queue_oldest_ready_age_seconds', { topic: q });
    assert.ok(age >= 0 && age < 60, `oldest ready age ${age} s`);
    assert.ok(one(samples, 'spool_queue_leases_in_flight') >= 2);
    assert.equal(
      samples.filter((x) => x.name === 'spool_topic_queue_ready' && x.labels.topic === `${q}.dlq`).length,
      0,
      'a log topic has no queue series',
    );
    const j = await c.get('/v0/metrics', { accept: 'application/json' });
    assert.ok(j.body.queue_leases_in_flight >= 2);
    assert.ok(j.body.queue_topics >= 1);
    // Everything leased: no oldest-ready series for the queue.
    await c.post(`/v0/topics/${q}/claim`, { node: 'w4', max: 5 });
    samples = parseProm((await raw(srv.url, 'GET', '/v0/metrics')).text).samples;
    assert.equal(one(samples, 'spool_topic_queue_ready', { topic: q }), 0);
    assert.equal(samples.filter((x) => x.name === 'spool_topic_queue_oldest_ready_age_seconds' && x.labels.topic === q).length, 0);
  });

  test('all four classes are always listed and count topics per class', async () => {
    const get = async () => parseProm((await raw(srv.url, 'GET', '/v0/metrics')).text).samples;
    const before = await get();
    const b0 = Object.fromEntries(CLASSES.map((cl) => [cl, one(before, 'spool_topics_by_class', { class: cl })]));
    for (const cl of CLASSES) await c.put(`/v0/topics/${name(cl)}`, { durability: cl });
    const after = await get();
    for (const cl of CLASSES) assert.equal(one(after, 'spool_topics_by_class', { class: cl }), b0[cl] + 1, `class ${cl}`);
    assert.equal(one(after, 'spool_topics'), one(before, 'spool_topics') + 4);
  });

  test('JSON form with Accept: application/json has the listed keys', async () => {
    const t = name('mj');
    await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] });
    const r = await c.get('/v0/metrics', { accept: 'application/json' });
    const b = assertOk(r, 200);
    const numeric = [
      'topics',
      'topics_ephemeral',
      'topics_memory',
      'topics_disk',
      'topics_fsync',
      'routers',
      'records_live',
      'bytes_live',
      'queue_topics',
      'queue_leases_in_flight',
      'sse_connections',
      'watch_sessions',
      'replay_progress',
      'uptime_ms',
    ];
    for (const k of numeric) assert.equal(typeof b[k], 'number', `metrics JSON ${k}`);
    assert.equal(b.ready, true);
    assert.equal(b.replay_progress, 1);
    assert.equal(b.topics, b.topics_ephemeral + b.topics_memory + b.topics_disk + b.topics_fsync);
    assert.equal(b.topics, (await c.get('/v0/ready')).body.topics);
    assert.ok(b.records_live >= 1);
    assert.ok(b.wal && typeof b.wal === 'object', 'wal object');
    for (const k of ['frames', 'batches', 'fsyncs', 'bytes_written']) assert.equal(typeof b.wal[k], 'number', `wal.${k}`);
    assert.ok(b.wal.frames >= 1);
    const mixed = await c.get('/v0/metrics', { accept: 'text/html, application/json;q=0.9' });
    assert.equal(typeof mixed.body, 'object', 'Accept containing application/json selects JSON');
    const text = await c.get('/v0/metrics', { accept: 'text/plain' });
    assert.match(text.headers.get('content-type') ?? '', /^text\/plain/);
  });

  test('probes and metrics do not bump topic recency', async () => {
    const t = name('norecency');
    await c.put(`/v0/topics/${t}`);
    await c.get('/v0/health');
    await c.get('/healthz');
    await c.get('/v0/ready');
    await c.get('/readyz');
    await c.get('/v0/metrics');
    await c.get('/v0/metrics', { accept: 'application/json' });
    const st = await c.get(`/v0/topics/${t}?touch=false`);
    assert.equal(st.body.effective_priority, 0);
    assert.equal(st.body.last_read_ts, null);
  });

  test('probe paths reject other methods with 405', async () => {
    const r = await raw(srv.url, 'DELETE', '/v0/metrics');
    assertError(r, 405, 'method_not_allowed');
  });
});
