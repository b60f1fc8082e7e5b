// The stage clock (SERVICE_STAGE_CLOCK, debug; docs/PERFORMANCE.md "Stage clock"), over HTTP on
// a real server: with it on, GET /v0/debug/stages has, per kind of request, every stage a request
// of that kind passes (appends: through the WAL link; reads: without it), with durations that
// add up to no more than the total, and each thread's CPU; DELETE resets it. Off, the route is
// not there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, startServer } from '../helpers/server.js';

test('stage clock on: per-stage durations per kind of request, each thread CPU, reset', async () => {
  const srv = await startServer({ env: { SERVICE_STAGE_CLOCK: '1', SERVICE_WORKERS: '1' } });
  try {
    const c = client(srv.url);
    assert.equal((await c.put('/v0/topics/d', { durability: 'disk' })).status, 201);
    for (let i = 0; i < 20; i++) assert.equal((await c.post('/v0/topics/d', { records: [{ data: i }] })).status, 200);
    for (let i = 0; i < 20; i++) assert.equal((await c.post('/v0/topics/d/diff', { from_seq: 0, limit: 1 })).status, 200);
    const woken = c.post('/v0/topics/d/diff', { from_seq: 20, wait_ms: 5000 });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await c.post('/v0/topics/d', { records: [{ data: 'wake' }] })).status, 200);
    assert.equal((await woken).body.records.length, 1);

    const r = await c.get('/v0/debug/stages');
    assert.equal(r.status, 200);
    const append = r.body.stages['POST /v0/topics/:topic'];
    assert.deepEqual(Object.keys(append), [
      'http_in',
      'to_channel',
      'cross_in',
      'step',
      'to_wal',
      'wal',
      'to_reply',
      'cross_out',
      'http_out',
      'total',
    ]);
    assert.equal(append.total.n, 21);
    for (const [stage, s] of Object.entries(append) as [string, { p50_us: number }][])
      assert.ok(s.p50_us >= 0, `${stage} is not negative: ${s.p50_us}`);
    const parts = ['http_in', 'to_channel', 'cross_in', 'step', 'to_wal', 'wal', 'to_reply', 'cross_out', 'http_out'].reduce(
      (a, k) => a + append[k].p50_us,
      0,
    );
    assert.ok(parts <= append.total.p99_us * 2, `the stages (${parts} µs at p50) are within the total`);
    const diff = r.body.stages['POST /v0/topics/:topic/diff'];
    assert.deepEqual(
      Object.keys(diff),
      ['http_in', 'to_channel', 'cross_in', 'step', 'to_reply', 'cross_out', 'http_out', 'total'],
      'a read has no WAL stages',
    );
    assert.equal(r.body.stages['POST /v0/topics/:topic/diff wait'].total.n, 1, 'a long-poll is its own kind');
    assert.ok(r.body.stages['POST /v0/topics/:topic/diff wait'].to_reply.p50_us >= 50_000, 'the long-poll parked until the append');
    const cpu = r.body.thread_cpu_us;
    assert.ok(cpu.main > 0 && cpu.workers[0] > 0 && cpu.wal >= 0, JSON.stringify(cpu));

    assert.equal((await c.del('/v0/debug/stages')).status, 200);
    assert.deepEqual((await c.get('/v0/debug/stages')).body.stages, {}, 'reset');
  } finally {
    await srv.stop();
  }
});

test('stage clock off (the default): no debug route, no stamps', async () => {
  const srv = await startServer({ env: { SERVICE_WORKERS: '1' } });
  try {
    const c = client(srv.url);
    assert.equal((await c.get('/v0/debug/stages')).status, 404);
  } finally {
    await srv.stop();
  }
});
