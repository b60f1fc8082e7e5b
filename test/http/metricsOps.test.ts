// Operating metrics: request and error counters by route and code, 429s by cause, append latency
// by durability class, diff latency, watch delivery latency and lag, default process metrics, and histograms that stay a fixed size however
// long nobody scrapes (the fsync latencies used to pile up in the WAL thread until a scrape).
import test from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../helpers/server.js';
import { LatencyBuckets, FSYNC_BUCKETS_US } from '../../src/core/latencyBuckets.js';

function samples(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  const out: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

const JSON_CT = { 'content-type': 'application/json' };

test('request, error, throttle, append-latency and process metrics after a workload; fsync histogram bounded without scrapes', async () => {
  const s = await startServer({ env: { SERVICE_MAX_TOPICS: '2' } });
  try {
    for (const [t, d] of [
      ['m.fs', 'fsync'],
      ['m.mem', 'memory'],
    ]) {
      assert.equal(
        (await fetch(`${s.url}/v0/topics/${t}`, { method: 'PUT', headers: JSON_CT, body: JSON.stringify({ durability: d }) })).status,
        201,
      );
    }
    const third = await fetch(`${s.url}/v0/topics/m.third`, { method: 'PUT', headers: JSON_CT, body: '{}' });
    assert.equal(third.status, 429);
    // Many fsyncs and no scrape in between.
    for (let i = 0; i < 300; i++) {
      const r = await fetch(`${s.url}/v0/topics/m.fs`, { method: 'POST', headers: JSON_CT, body: '{"records":[{"data":1}]}' });
      assert.equal(r.status, 200);
    }
    await fetch(`${s.url}/v0/topics/m.mem`, { method: 'POST', headers: JSON_CT, body: '{"records":[{"data":1}]}' });
    await fetch(`${s.url}/v0/topics/m.absent`, { headers: JSON_CT });
    assert.equal(
      (await fetch(`${s.url}/v0/topics/m.fs/diff`, { method: 'POST', headers: JSON_CT, body: '{"from_seq":0,"limit":5}' })).status,
      200,
    );
    // A watch stream that follows m.fs live: a pushed batch is a delivery, and the topic has a lag series.
    const created = (await (
      await fetch(`${s.url}/v0/watch`, { method: 'POST', headers: JSON_CT, body: '{"topics":{"m.fs":{"tail":true}}}' })
    ).json()) as { wid: string };
    const ctl = new AbortController();
    const stream = await fetch(`${s.url}/v0/watch/${created.wid}`, { headers: { accept: 'text/event-stream' }, signal: ctl.signal });
    const reader = stream.body!.getReader();
    let seen = '';
    for (let i = 0; i < 100 && !seen.includes('"pushed"'); i++) {
      await fetch(`${s.url}/v0/topics/m.fs`, { method: 'POST', headers: JSON_CT, body: '{"records":[{"data":"pushed"}]}' });
      const chunk = await Promise.race([reader.read(), new Promise<undefined>((r) => setTimeout(() => r(undefined), 200))]);
      if (chunk?.value) seen += Buffer.from(chunk.value).toString();
    }
    assert.match(seen, /"pushed"/, 'the watch stream got a live record');
    const text = await (await fetch(`${s.url}/v0/metrics`)).text();
    const all = samples(text);
    const find = (name: string, labels: Record<string, string> = {}) =>
      all.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
    assert.ok(find('spool_http_requests_total', { route: '/v0/topics/:topic', method: 'POST', code: '200' })!.value >= 302);
    assert.equal(find('spool_http_requests_total', { route: '/v0/topics/:topic', method: 'PUT', code: '429' })?.value, 1);
    assert.equal(find('spool_http_errors_total', { route: '/v0/topics/:topic', code: 'throttled' })?.value, 1);
    assert.equal(find('spool_http_errors_total', { route: '/v0/topics/:topic', code: 'topic_not_found' })?.value, 1);
    assert.equal(find('spool_http_throttled_total', { cause: 'max_topics' })?.value, 1);
    assert.ok(find('spool_append_latency_seconds_count', { durability: 'fsync' })!.value >= 301);
    assert.equal(find('spool_diff_latency_seconds_count', { long_poll: 'false' })?.value, 1);
    assert.ok(find('spool_watch_delivery_latency_seconds_count')!.value >= 1, 'watch deliveries observed');
    assert.ok(find('spool_topic_watch_lag', { topic: 'm.fs' }), 'the followed topic has a watch lag series');
    ctl.abort();
    assert.equal(find('spool_append_latency_seconds_count', { durability: 'memory' })?.value, 1);
    assert.ok(find('spool_http_request_duration_seconds_count', { route: '/v0/topics/:topic' }));
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
    ]) {
      assert.ok(find(name), `${name} present`);
    }
    const fsyncs = find('spool_wal_fsyncs_total')!.value;
    assert.ok(fsyncs >= 300, `${fsyncs} fsyncs`);
    assert.equal(find('spool_wal_fsync_latency_seconds_count')?.value, fsyncs, 'every fsync counted though nobody scraped');
    assert.equal(all.filter((x) => x.name === 'spool_wal_fsync_latency_seconds_bucket').length, FSYNC_BUCKETS_US.length + 1);
    assert.ok(find('spool_wal_group_frames_count')!.value >= 300, 'every WAL write counted in the group-size histogram');
    assert.ok(find('spool_wal_group_frames_sum')!.value >= find('spool_wal_group_frames_count')!.value);
    const json = (await (await fetch(`${s.url}/v0/metrics`, { headers: { accept: 'application/json' } })).json()) as {
      http: { requests: number };
    };
    assert.ok(json.http.requests >= 304);
  } finally {
    await s.stop();
  }
});

test('LatencyBuckets keeps a fixed size however many samples it takes', () => {
  const b = new LatencyBuckets(FSYNC_BUCKETS_US);
  for (let i = 0; i < 100_000; i++) b.observe(i % 200_000);
  assert.equal(b.data.counts.length, FSYNC_BUCKETS_US.length + 1);
  assert.equal(b.data.count, 100_000);
  assert.equal(
    b.data.counts.reduce((a, c) => a + c, 0),
    100_000,
  );
  b.observe(50);
  assert.equal(b.snapshot().counts[0], 52, 'le is inclusive (0..50 and the extra 50)');
});

/** HELP and TYPE of every family in a Prometheus text. */
function families(text: string): Map<string, { type: string; help: string }> {
  const out = new Map<string, { type: string; help: string }>();
  for (const m of text.matchAll(/^# (HELP|TYPE) (\S+) (.*)$/gm)) {
    const f = out.get(m[2]!) ?? { type: '', help: '' };
    if (m[1] === 'TYPE') f.type = m[3]!;
    else f.help = m[3]!;
    out.set(m[2]!, f);
  }
  return out;
}

test('every spool_ family follows the Prometheus conventions: seconds, and counters named _total', async () => {
  const s = await startServer({ env: { SERVICE_WORKERS: '1' } });
  try {
    const call = (method: string, path: string, body: unknown) =>
      fetch(`${s.url}${path}`, { method, headers: JSON_CT, body: JSON.stringify(body) });
    assert.equal((await call('PUT', '/v0/topics/cv.src', { durability: 'fsync' })).status, 201);
    assert.equal((await call('PUT', '/v0/routers/cv.r', { source: 'cv.src', dest: 'cv.dst' })).status, 201);
    assert.equal((await call('POST', '/v0/topics/cv.src', { records: [{ data: 1 }, { data: 2 }, { data: 3 }] })).status, 200);
    for (let i = 0; i < 200; i++) {
      const r = (await (await fetch(`${s.url}/v0/routers/cv.r`)).json()) as { forwarded_total: number };
      if (r.forwarded_total === 3) break;
      await new Promise((res) => setTimeout(res, 25));
    }
    assert.equal((await call('POST', '/v0/topics/cv.src/diff', { from_seq: 0 })).status, 200);
    const text = await (await fetch(`${s.url}/v0/metrics`)).text();
    const fams = families(text);
    const all = samples(text);
    const value = (name: string, labels: Record<string, string> = {}) =>
      all.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v))?.value;

    // The interface's metric list names two families in ms and µs; they are kept beside the
    // Prometheus-style ones (same values, other unit), and are the only exceptions.
    const INTERFACE_NAMES = new Set(['spool_uptime_ms', 'spool_wal_fsync_latency_us']);
    const spool = [...fams].filter(([n]) => n.startsWith('spool_') && !INTERFACE_NAMES.has(n));
    assert.ok(spool.length > 40, `${spool.length} spool_ families`);
    for (const [name, f] of spool) {
      assert.doesNotMatch(name, /_(ms|us|millis|micros|milliseconds|microseconds)(_|$)/, `${name}: durations in seconds`);
      assert.equal(f.type === 'counter', name.endsWith('_total'), `${name} (${f.type}): a counter, and only a counter, is named _total`);
      if (f.type === 'histogram' && /latency|duration|time to/i.test(f.help))
        assert.match(name, /_seconds$/, `${name}: a duration histogram in seconds`);
      if (/\b(age|uptime|delay)\b/i.test(f.help)) assert.match(name, /_seconds$/, `${name}: ${f.help}`);
    }
    for (const x of all.filter((x) => x.name.startsWith('spool_'))) {
      for (const v of Object.values(x.labels)) assert.doesNotMatch(v, /_ms$/, `${x.name}: label value ${v} in seconds`);
    }

    assert.equal(fams.get('spool_router_forwarded_total')?.type, 'counter');
    assert.equal(value('spool_router_forwarded_total', { router: 'cv.r' }), 3);
    assert.equal(fams.get('spool_throttle_shed_total')?.type, 'counter');
    const uptimeS = value('spool_uptime_seconds')!;
    assert.ok(uptimeS > 0 && uptimeS < process.uptime() + 1, `uptime ${uptimeS} s`);
    assert.equal(value('spool_pressure_threshold', { kind: 'lag_seconds' }), 0.05, 'SERVICE_PRESSURE_LAG_MS 50 as seconds');
    // Histograms render bounds and sums in seconds: the fsync buckets of 50 µs .. 102.4 ms.
    const fsyncLe = all.filter((x) => x.name === 'spool_wal_fsync_latency_seconds_bucket').map((x) => x.labels.le);
    assert.deepEqual(fsyncLe, [...FSYNC_BUCKETS_US.map((us) => String(us / 1e6)), '+Inf']);
    const fsyncs = value('spool_wal_fsync_latency_seconds_count')!;
    const fsyncS = value('spool_wal_fsync_latency_seconds_sum')!;
    assert.ok(fsyncs >= 1 && fsyncS > 0 && fsyncS / fsyncs < 1, `mean fsync ${fsyncS / fsyncs} s`);
    // The interface's names: the same histogram in µs, the same uptime in ms.
    assert.equal(fams.get('spool_wal_fsync_latency_us')?.type, 'histogram');
    const fsyncLeUs = all.filter((x) => x.name === 'spool_wal_fsync_latency_us_bucket').map((x) => x.labels.le);
    assert.deepEqual(fsyncLeUs, [...FSYNC_BUCKETS_US.map(String), '+Inf']);
    assert.equal(value('spool_wal_fsync_latency_us_count'), fsyncs);
    assert.ok(Math.abs(value('spool_wal_fsync_latency_us_sum')! - fsyncS * 1e6) < 1, 'the same sum in µs');
    assert.equal(fams.get('spool_uptime_ms')?.type, 'gauge');
    assert.ok(Math.abs(value('spool_uptime_ms')! - uptimeS * 1000) < 1, 'the same uptime in ms');
    const appendLe = all
      .filter((x) => x.name === 'spool_append_latency_seconds_bucket' && x.labels.durability === 'fsync')
      .map((x) => x.labels.le);
    assert.equal(appendLe[0], '0.0001', '0.1 ms as seconds');
    const appendS = value('spool_append_latency_seconds_sum', { durability: 'fsync' })!;
    assert.ok(appendS > 0 && appendS < 10, `append latency sum ${appendS} s`);
    assert.equal(
      all.filter((x) => x.name === 'spool_http_request_duration_seconds_bucket' && x.labels.route === '/v0/topics/:topic/diff').at(-2)
        ?.labels.le,
      '30',
      '30 000 ms as seconds',
    );
  } finally {
    await s.stop();
  }
});
