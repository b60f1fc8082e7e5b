// WAL credit (DESIGN 1.5, G16): past SERVICE_WAL_INFLIGHT_BYTES an append is refused with 429
// throttled, Retry-After and detail.retry_after_ms, and nothing of it is applied; with
// disable_backpressure it waits instead and reports throttle_wait_ms.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, client, Server } from '../helpers/server.js';

let srv: Server;
before(async () => {
  // One byte of credit: any append while another turn's frames are unwritten is over it.
  srv = await startServer({ env: { SERVICE_WAL_INFLIGHT_BYTES: '1' } });
});
after(async () => {
  await srv.stop();
});

function burst(c: ReturnType<typeof client>, topic: string, n: number, extra: Record<string, unknown> = {}) {
  return Promise.all(Array.from({ length: n }, (_, i) => c.post(`/v0/topics/${topic}`, { records: [{ data: { i } }], ...extra })));
}

test('over the WAL credit: 429 throttled with nothing applied', async () => {
  const c = client(srv.url);
  await c.put('/v0/topics/bp.a', { durability: 'fsync' });
  let refused: Awaited<ReturnType<typeof c.post>>[] = [];
  let acked = 0;
  for (let round = 0; round < 10 && refused.length === 0; round++) {
    const rs = await burst(c, 'bp.a', 40);
    refused = rs.filter((r) => r.status === 429);
    acked += rs.filter((r) => r.status === 200).length;
    for (const r of rs) assert.ok(r.status === 200 || r.status === 429, `status ${r.status}`);
  }
  assert.ok(refused.length > 0, 'some appends were refused');
  const r = refused[0]!;
  assert.equal(r.body.error.code, 'throttled');
  assert.equal(r.headers.get('retry-after'), '1');
  assert.ok(r.body.error.detail.retry_after_ms > 0);
  // Nothing of a refused append was applied: the topic holds exactly the acked records.
  const st = await c.get('/v0/topics/bp.a');
  assert.equal(st.body.count, acked);
  assert.equal(st.body.head_seq, acked);
});

test('disable_backpressure waits instead of refusing, and reports throttle_wait_ms', async () => {
  const c = client(srv.url);
  await c.put('/v0/topics/bp.b', { durability: 'fsync' });
  // Whether a burst outruns the credit depends on scheduling; repeat until one did. Every
  // append of every round must succeed either way.
  let waited = false;
  let total = 0;
  for (let round = 0; round < 10 && !waited; round++) {
    const rs = await burst(c, 'bp.b', 40, { disable_backpressure: true });
    for (const r of rs) assert.equal(r.status, 200, JSON.stringify(r.body));
    const seqs = rs.map((r) => r.body.first_seq).sort((a, b) => a - b);
    assert.deepEqual(seqs, Array.from({ length: 40 }, (_, i) => total + i + 1));
    total += 40;
    waited = rs.some((r) => typeof r.body.performance.throttle_wait_ms === 'number');
  }
  assert.ok(waited, 'some append waited for credit');
});
