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
    for (const [t, d] of [['m.fs', 'fsync'], ['m.mem', 'memory']]) {
      assert.equal((await fetch(`${s.url}/v0/topics/${t}`, { method: 'PUT', headers: JSON_CT, body: JSON.stringify({ durability: d }) })).status, 201);
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
    assert.equal((await fetch(`${s.url}/v0/topics/m.fs/diff`, { method: 'POST', headers: JSON_CT, body: '{"from_seq":0,"limit":5}' })).status, 200);
    // A watch stream that follows m.fs live: a pushed batch is a delivery, and the topic has a lag series.
    const created = (await (await fetch(`${s.url}/v0/watch`, { method: 'POST', headers: JSON_CT, body: '{"topics":{"m.fs":{"tail":true}}}' })).json()) as { wid: string };
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
    assert.ok(find('spool_append_latency_ms_count', { durability: 'fsync' })!.value >= 301);
    assert.equal(find('spool_diff_latency_ms_count', { long_poll: 'false' })?.value, 1);
    assert.ok(find('spool_watch_delivery_latency_ms_count')!.value >= 1, 'watch deliveries observed');
    assert.ok(find('spool_topic_watch_lag', { topic: 'm.fs' }), 'the followed topic has a watch lag series');
    ctl.abort();
    assert.equal(find('spool_append_latency_ms_count', { durability: 'memory' })?.value, 1);
    assert.ok(find('spool_http_request_duration_ms_count', { route: '/v0/topics/:topic' }));
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      assert.ok(find(name), `${name} present`);
    }
    const fsyncs = find('spool_wal_fsyncs_total')!.value;
    assert.ok(fsyncs >= 300, `${fsyncs} fsyncs`);
    assert.equal(find('spool_wal_fsync_latency_us_count')?.value, fsyncs, 'every fsync counted though nobody scraped');
    assert.equal(all.filter((x) => x.name === 'spool_wal_fsync_latency_us_bucket').length, FSYNC_BUCKETS_US.length + 1);
    assert.ok(find('spool_wal_group_frames_count')!.value >= 300, 'every WAL write counted in the group-size histogram');
    assert.ok(find('spool_wal_group_frames_sum')!.value >= find('spool_wal_group_frames_count')!.value);
    const json = (await (await fetch(`${s.url}/v0/metrics`, { headers: { accept: 'application/json' } })).json()) as { http: { requests: number } };
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
  assert.equal(b.data.counts.reduce((a, c) => a + c, 0), 100_000);
  b.observe(50);
  assert.equal(b.snapshot().counts[0], 52, 'le is inclusive (0..50 and the extra 50)');
});
