// Priority under pressure over HTTP (docs/API.md "GET /v0/topics/:topic"; docs/ARCHITECTURE.md "Admission"), with pressure forced
// (SERVICE_PRESSURE_FORCE) and one request at a time let through after a 300 ms coalescing
// window, so the order is deterministic: a high-priority topic's appends complete before a
// low-priority topic's, auto-priority follows recent reads, a full park sheds the low ones first,
// a request parked past its bound is 429 throttled with Retry-After and detail.retry_after_ms and
// applies nothing, and disable_backpressure waits and reports throttle_wait_ms.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, req, Server, Resp } from '../helpers/server.js';
import { httpSuite } from '../support/httpSuite.js';

const FORCED = { SERVICE_PRESSURE_FORCE: '1', SERVICE_PRESSURE_INFLIGHT: '1', SERVICE_PRESSURE_WINDOW_MS: '300', SERVICE_WORKERS: '1' };

/** Sends all at once; returns the responses and the order in which they completed. */
async function race(
  srv: Server,
  sends: [label: string, path: string, body: unknown][],
): Promise<{ rs: Map<string, Resp>; order: string[] }> {
  const order: string[] = [];
  const rs = new Map<string, Resp>();
  await Promise.all(
    sends.map(async ([label, path, body]) => {
      const r = await req(srv.url, 'POST', path, body);
      order.push(label);
      rs.set(label, r);
    }),
  );
  return { rs, order };
}

describe('ordering (park bound 5 s, 6 parked at most)', () => {
  const { srv } = httpSuite({ ...FORCED, SERVICE_PRESSURE_PARK_MS: '5000', SERVICE_PRESSURE_MAX_PARKED: '6' }, async () => {
    for (const [t, p] of [
      ['hi', 1000],
      ['lo', -1000],
      ['auto.read', null],
      ['auto.cold', null],
    ] as const) {
      assert.equal((await req(srv.url, 'PUT', `/v0/topics/${t}`, { priority: p })).status, 201);
    }
  });

  test('high priority completes first, even when the low ones were sent first', async () => {
    const sends: [string, string, unknown][] = [];
    for (let i = 0; i < 3; i++) sends.push([`lo${i}`, '/v0/topics/lo', { records: [{ data: i }] }]);
    for (let i = 0; i < 3; i++) sends.push([`hi${i}`, '/v0/topics/hi', { records: [{ data: i }] }]);
    const { rs, order } = await race(srv, sends);
    for (const r of rs.values()) assert.equal(r.status, 200);
    assert.deepEqual(
      order.slice(0, 3).map((l) => l.slice(0, 2)),
      ['hi', 'hi', 'hi'],
      order.join(' '),
    );
    for (const r of rs.values()) assert.ok(r.body.performance.throttle_wait_ms >= 250, JSON.stringify(r.body.performance));
  });

  test('auto-priority: a topic read just now goes before one never read', async () => {
    assert.equal((await req(srv.url, 'GET', '/v0/topics/auto.read')).body.effective_priority, 500);
    const { order } = await race(srv, [
      ['cold', '/v0/topics/auto.cold', { records: [{ data: 1 }] }],
      ['read', '/v0/topics/auto.read', { records: [{ data: 1 }] }],
    ]);
    assert.deepEqual(order, ['read', 'cold']);
  });

  test('a full park sheds the lowest priority first, nothing of it applied', async () => {
    const sends: [string, string, unknown][] = [];
    for (let i = 0; i < 6; i++) sends.push([`lo${i}`, '/v0/topics/lo', { records: [{ data: i }] }]);
    const head = (await req(srv.url, 'GET', '/v0/topics/lo?touch=false')).body.head_seq;
    const lows = race(srv, sends);
    await new Promise((r) => setTimeout(r, 50));
    const highs = race(
      srv,
      [0, 1, 2].map((i) => [`hi${i}`, '/v0/topics/hi', { records: [{ data: i }] }] as [string, string, unknown]),
    );
    const [l, h] = await Promise.all([lows, highs]);
    for (const r of h.rs.values()) assert.equal(r.status, 200);
    const shed = [...l.rs.values()].filter((r) => r.status === 429);
    assert.equal(shed.length, 3, 'three lows made room for three highs');
    for (const r of shed) {
      assert.equal(r.body.error.code, 'throttled');
      assert.ok(r.body.error.detail.retry_after_ms > 0);
      assert.equal(r.headers.get('retry-after'), '5');
    }
    assert.equal((await req(srv.url, 'GET', '/v0/topics/lo?touch=false')).body.head_seq, head + 3, 'only the served lows applied');
  });

  test('/v0/metrics reports pressure and its thresholds', async () => {
    const j = await req(srv.url, 'GET', '/v0/metrics', undefined, { accept: 'application/json' });
    assert.equal(j.body.pressure.pressured, true);
    assert.equal(j.body.pressure.forced, true);
    assert.deepEqual(j.body.pressure.thresholds, { elu: 0.9, lag_ms: 50, wal_queue_bytes: 32 * 1024 * 1024 });
    assert.equal(j.body.pressure.workers.length, 1);
    assert.ok(j.body.pressure.shed_total >= 3);
    const text = (await req(srv.url, 'GET', '/v0/metrics')).text;
    assert.match(text, /^spool_pressure 1$/m);
    assert.match(text, /^spool_pressure_threshold\{kind="elu"\} 0\.9$/m);
    assert.match(text, /^spool_pressure_worker_elu\{worker="0"\} /m);
  });
});

describe('the park bound (150 ms, shorter than the window)', () => {
  const { srv } = httpSuite({ ...FORCED, SERVICE_PRESSURE_PARK_MS: '150' });

  test('parked past its bound: 429 with Retry-After and retry_after_ms; disable_backpressure waits', async () => {
    const made = await req(srv.url, 'POST', '/v0/topics/pb', { records: [{ data: 0 }], disable_backpressure: true });
    assert.equal(made.status, 201);
    assert.ok(made.body.performance.throttle_wait_ms >= 250, 'it waited for the window');
    const { rs } = await race(srv, [
      ['bounded', '/v0/topics/pb', { records: [{ data: 1 }] }],
      ['waits', '/v0/topics/pb', { records: [{ data: 2 }], disable_backpressure: true }],
    ]);
    const b = rs.get('bounded')!;
    assert.equal(b.status, 429);
    assert.equal(b.body.error.code, 'throttled');
    assert.deepEqual(b.body.error.detail, { retry_after_ms: 150 });
    assert.equal(b.headers.get('retry-after'), '1');
    const w = rs.get('waits')!;
    assert.equal(w.status, 200);
    assert.ok(w.body.performance.throttle_wait_ms >= 250);
    const st = await req(srv.url, 'POST', '/v0/topics/pb/diff', {}, {});
    assert.equal(st.status, 429, 'a diff is bounded too');
    const d = await req(srv.url, 'GET', '/v0/health');
    assert.equal(d.status, 200, 'probes never wait');
  });
});

describe('streams under pressure (pacing tick 300 ms)', () => {
  const { srv } = httpSuite({ SERVICE_PRESSURE_FORCE: '1', SERVICE_PRESSURE_PACE_MS: '300', SERVICE_WORKERS: '1' }, async () => {
    assert.equal((await req(srv.url, 'PUT', '/v0/topics/sp.slow', { priority: -5 })).status, 201);
    assert.equal((await req(srv.url, 'PUT', '/v0/topics/sp.fast', { priority: 0 })).status, 201);
    assert.equal((await req(srv.url, 'PUT', '/v0/topics/sp.q', { type: 'queue', priority: -5 })).status, 201);
  });

  test('a watch stream gets the advisory 429 frame; its low topic slows down and skips nothing', async () => {
    const { openStream } = await import('../helpers/sse.js');
    const w = await req(srv.url, 'POST', '/v0/watch', { topics: { 'sp.slow': {}, 'sp.fast': {} }, limit: 10 });
    const s = await openStream(srv.url, w.body.wid);
    try {
      const adv = await s.nextEvent('error', 3000);
      assert.deepEqual(
        { ...adv.data, message: undefined },
        { code: 429, error: 'throttled', message: undefined, terminal: false, retry_after_ms: 300, topics: ['sp.slow'] },
      );
      assert.equal(adv.id, undefined, 'no id: the cursor does not move');
      for (let b = 0; b < 3; b++) {
        const r = await req(srv.url, 'POST', '/v0/topics/sp.slow', {
          records: Array.from({ length: 10 }, (_, i) => ({ data: b * 10 + i })),
        });
        assert.equal(r.status, 200);
      }
      const t0 = Date.now();
      assert.equal((await req(srv.url, 'POST', '/v0/topics/sp.fast', { records: [{ data: 'f' }] })).status, 200);
      const fast = await s.nextEvent('record', 3000, (f) => f.data.topic === 'sp.fast');
      assert.ok(Date.now() - t0 < 250, 'the unpaced topic is pushed at once');
      assert.equal(fast.data.records[0].data, 'f');
      const got: number[] = [];
      const at: number[] = [];
      while (got.length < 30) {
        const f = await s.nextEvent('record', 5000, (x) => x.data.topic === 'sp.slow');
        got.push(...f.data.records.map((r: { data: number }) => r.data));
        at.push(f.at);
      }
      assert.deepEqual(
        got,
        Array.from({ length: 30 }, (_, i) => i),
        'every record, in order',
      );
      assert.ok(at[at.length - 1]! - at[0]! >= 400, `paced: frames ${at.map((x) => x - at[0]!).join(',')} ms apart`);
      assert.equal(s.closed, false, 'the stream stays open');
    } finally {
      await s.close();
    }
  });

  test('a /work stream of a low-priority queue gets the advisory frame with its topic', async () => {
    const { openStream } = await import('../helpers/sse.js');
    const s = await openStream(srv.url, '', { path: '/v0/topics/sp.q/work', query: { node: 'n1' } });
    try {
      assert.equal(s.status, 200);
      const adv = await s.nextEvent('error', 3000);
      assert.equal(adv.data.code, 429);
      assert.equal(adv.data.terminal, false);
      assert.equal(adv.data.topic, 'sp.q');
    } finally {
      await s.close();
    }
  });
});

test('without pressure, every request past the gate gives its slot back: none held once the answers are in', async () => {
  const srv = await startServer({ env: { SERVICE_WORKERS: '1' } });
  try {
    assert.equal((await req(srv.url, 'PUT', '/v0/topics/held', { durability: 'disk' })).status, 201);
    // Appends hold a slot until their response closes; diffs pass; a refused request (404) too.
    await Promise.all(
      Array.from({ length: 64 }, (_, i) =>
        i % 3 === 0
          ? req(srv.url, 'POST', '/v0/topics/held/diff', { from_seq: 0 })
          : i % 3 === 1
            ? req(srv.url, 'POST', '/v0/topics/held', { records: [{ data: i }] })
            : req(srv.url, 'GET', '/v0/topics/nope'),
      ),
    );
    // A client that goes away with its append unanswered gives the slot back as well.
    const ctl = new AbortController();
    const gone = fetch(`${srv.url}/v0/topics/held/diff`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"from_seq":999,"wait_ms":10000}',
      signal: ctl.signal,
    }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    ctl.abort();
    await gone;
    await new Promise((r) => setTimeout(r, 100));
    const m = await req(srv.url, 'GET', '/v0/metrics');
    assert.match(m.text, /^spool_throttle_running 0$/m);
  } finally {
    await srv.stop();
  }
});
