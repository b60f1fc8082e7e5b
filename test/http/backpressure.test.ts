// WAL credit (docs/ARCHITECTURE.md "Admission", "Other decisions"): past SERVICE_WAL_INFLIGHT_BYTES an append is refused with 429
// throttled, Retry-After and detail.retry_after_ms, and nothing of it is applied; with
// disable_backpressure it waits instead and reports throttle_wait_ms.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client } from '../helpers/server.js';
import { httpSuite } from '../support/httpSuite.js';

// One byte of credit: any append while another turn's frames are unwritten is over it.
const { srv } = httpSuite({ SERVICE_WAL_INFLIGHT_BYTES: '1' });

/**
 * Each burst runs beside a large append (the WAL thread is busy writing it for a few ms) and its
 * requests are spread over several turns of this process, so requests meet the credit both
 * within one turn (frames count from the moment they are queued) and across turns while earlier
 * frames are still unwritten.
 */
async function spread<T>(n: number, send: (i: number) => Promise<T>): Promise<T[]> {
  const c = client(srv.url);
  const hog = c.post('/v0/topics/bp.hog', {
    records: Array.from({ length: 4 }, () => ({ data: 'x'.repeat(256 * 1024) })),
    disable_backpressure: true,
  });
  const ps: Promise<T>[] = [];
  for (let i = 0; i < n; i++) {
    ps.push(send(i));
    if (i % 8 === 7) await new Promise((r) => setImmediate(r));
  }
  const out = await Promise.all(ps);
  assert.equal((await hog).status < 300, true, 'the large append went through');
  return out;
}

function burst(c: ReturnType<typeof client>, topic: string, n: number, extra: Record<string, unknown> = {}) {
  return spread(n, (i) => c.post(`/v0/topics/${topic}`, { records: [{ data: { i } }], ...extra }));
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
  // Its cause is named, in the body and in the metrics (docs/OPERATIONS.md "Metrics", "Monitoring").
  assert.equal(r.body.error.detail.limit, 'wal_inflight');
  const metrics = await (await fetch(`${srv.url}/v0/metrics`)).text();
  const line = metrics.split('\n').find((l) => l.startsWith('spool_http_throttled_total{cause="wal_inflight"}'));
  assert.ok(line && Number(line.split(' ')[1]) >= refused.length, `a wal_inflight cause is counted (${line})`);
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
    assert.deepEqual(
      seqs,
      Array.from({ length: 40 }, (_, i) => total + i + 1),
    );
    total += 40;
    waited = rs.some((r) => typeof r.body.performance.throttle_wait_ms === 'number');
  }
  assert.ok(waited, 'some append waited for credit');
});

test('over the WAL credit, acks and record deletes are refused too, with nothing applied', async () => {
  const c = client(srv.url);
  await c.put('/v0/topics/bp.q', { type: 'queue', durability: 'fsync' });
  let ackRefused = 0;
  let acked = 0;
  let claimed = 0;
  for (let round = 0; round < 10 && ackRefused === 0; round++) {
    await c.post('/v0/topics/bp.q', { records: Array.from({ length: 40 }, (_, i) => ({ data: i })), disable_backpressure: true });
    const claim = await c.post('/v0/topics/bp.q/claim', { node: 'w', max: 40 });
    const seqs: number[] = claim.body.claimed.map((j: any) => j.$seq);
    claimed += seqs.length;
    const rs = await spread(seqs.length, (i) => c.post('/v0/topics/bp.q/ack', { node: 'w', seqs: [seqs[i]!] }));
    for (const r of rs) assert.ok(r.status === 200 || r.status === 429, `ack status ${r.status} ${r.text}`);
    const refused = rs.filter((r) => r.status === 429);
    ackRefused += refused.length;
    acked += rs.filter((r) => r.status === 200 && r.body.acked === 1).length;
    if (refused.length > 0) {
      assert.equal(refused[0]!.body.error.code, 'throttled');
      assert.ok(refused[0]!.body.error.detail.retry_after_ms > 0);
      assert.equal(refused[0]!.headers.get('retry-after'), '1');
    }
    // A refused ack changed nothing: its job is still leased to w, and acks again later.
    const st = await c.get('/v0/topics/bp.q?touch=false');
    assert.equal(st.body.queue.in_flight, refused.length, 'the refused acks left their leases');
    for (const r of refused) {
      const s = seqs[rs.indexOf(r)]!;
      let again;
      for (let i = 0; i < 50; i++) {
        again = await c.post('/v0/topics/bp.q/ack', { node: 'w', seqs: [s] });
        if (again.status === 200) break;
      }
      assert.equal(again!.body.acked, 1, 'the job was still leased after the refusal');
      acked++;
    }
  }
  assert.ok(ackRefused > 0, 'some acks were refused for credit');
  // Every claimed job was acked exactly once, in its burst or on the retry after its refusal.
  assert.equal(acked, claimed);
  const end = await c.get('/v0/topics/bp.q?touch=false');
  assert.equal(end.body.queue.in_flight, 0);
  // Record deletes: a burst of single-seq deletes; each refused one deleted nothing.
  await c.put('/v0/topics/bp.d', { durability: 'fsync' });
  let delRefused = 0;
  for (let round = 0; round < 10 && delRefused === 0; round++) {
    const first = (
      await c.post('/v0/topics/bp.d', {
        records: Array.from({ length: 40 }, (_, i) => ({ data: i, tag: `t${i}` })),
        disable_backpressure: true,
      })
    ).body.first_seq;
    const rs = await spread(40, (i) => c.post('/v0/topics/bp.d/delete', { match: `t${i}` }));
    for (const r of rs) assert.ok(r.status === 200 || r.status === 429, `delete status ${r.status}`);
    const refused = rs.map((r, i) => (r.status === 429 ? i : -1)).filter((i) => i >= 0);
    delRefused += refused.length;
    const d = await c.post('/v0/topics/bp.d/diff', { from_seq: first - 1, limit: 1000 });
    const left = d.body.records.map((r: any) => r.$seq - first);
    assert.deepEqual(left, refused, 'exactly the refused deletes left their records');
  }
  assert.ok(delRefused > 0, 'some record deletes were refused for credit');
});
