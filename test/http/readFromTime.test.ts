// Reading from a time over HTTP (docs/API.md `from_ts` on diff and on watch topics): records
// appended at different times (a 50 ms gap), then a diff, a long-poll and a watch from a time
// between them start at the first record at or after it; a time before everything reads from the
// start, one past the newest is a tail; cursors from a time resume by seq; `from_ts` is u64 and
// excludes `from_seq` (and `tail: true`), else 400 in the error body. Also on topics that sleep
// and whose texts are cold (SERVICE_TOPIC_SLEEP_MS, SERVICE_SEGMENT_CACHE_BYTES small).
import { test, afterEach, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, client } from '../helpers/server.js';
import { openStream, type SseStream } from '../helpers/sse.js';
import { assertError, assertInvalid, assertOk, namer, raw, sleep } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('rft');
const { srv, c } = httpSuite({ SERVICE_WORKERS: '1' });

const open: SseStream[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

interface Timed {
  t: string;
  /** $ts of the first batch (seqs 1..3) and of the second (seqs 4..5), as the server stamped them. */
  tsA: number;
  tsB: number;
  /** The client's clock between the two batches. */
  between: number;
}

/** Two batches 50 ms apart: seqs 1..3, then 4..5. */
async function timed(cl = c, config: Record<string, unknown> = {}, t = name('t')): Promise<Timed> {
  assertOk(await cl.put(`/v0/topics/${t}`, config), 201);
  assertOk(await cl.post(`/v0/topics/${t}`, { records: [{ data: 'a1' }, { data: 'a2' }, { data: 'a3' }] }), 200);
  await sleep(25);
  const between = Date.now();
  await sleep(25);
  assertOk(await cl.post(`/v0/topics/${t}`, { records: [{ data: 'b1' }, { data: 'b2' }] }), 200);
  const all = assertOk(await cl.post(`/v0/topics/${t}/diff`, {}), 200);
  const ts = all.records.map((r: any) => r.$ts);
  assert.equal(new Set(ts.slice(0, 3)).size, 1, 'a batch shares one $ts');
  assert.ok(ts[3] - ts[0] >= 40, `the batches are apart: ${ts}`);
  assert.ok(ts[0] < between && between <= ts[3], `the client's clock between the batches: ${ts[0]} < ${between} <= ${ts[3]}`);
  return { t, tsA: ts[0], tsB: ts[3], between };
}

const seqs = (b: any) => b.records.map((r: any) => r.$seq);

/** 400 invalid_request whose detail.field is `field` (required, not just allowed); returns the message. */
function invalid(r: Parameters<typeof assertInvalid>[0], field: string, what = ''): string {
  const detail = assertInvalid(r, field, what);
  assert.equal(detail?.field, field, `${what}: detail.field`);
  return (r.body as any).error.message;
}

describe('diff from_ts', () => {
  test('starts at the first record at or after the time', async () => {
    const { t, tsA, tsB, between } = await timed();
    const diff = (body: unknown) => c.post(`/v0/topics/${t}/diff`, body);
    for (const [ts, want] of [
      [between, [4, 5]],
      [tsA + 1, [4, 5]],
      [tsB, [4, 5]],
      [tsA, [1, 2, 3, 4, 5]],
      [tsA - 1000, [1, 2, 3, 4, 5]],
      [0, [1, 2, 3, 4, 5]],
    ] as const) {
      const b = assertOk(await diff({ from_ts: ts }), 200, `from_ts ${ts}`);
      assert.deepEqual(seqs(b), want, `from_ts ${ts}`);
      assert.deepEqual([b.next_from_seq, b.head_seq, b.caught_up, b.tombstone], [5, 5, true, null]);
    }
    // Paged: the next page goes on by seq from next_from_seq.
    const p1 = assertOk(await diff({ from_ts: tsA, limit: 2 }), 200);
    assert.deepEqual([seqs(p1), p1.next_from_seq, p1.caught_up], [[1, 2], 2, false]);
    const p2 = assertOk(await diff({ from_seq: p1.next_from_seq, limit: 2 }), 200);
    assert.deepEqual(seqs(p2), [3, 4]);
    // Filters and options apply as to any diff.
    const opts = assertOk(await diff({ from_ts: between, include_tags: true, include_meta: false, limit: 1 }), 200);
    assert.deepEqual([seqs(opts), opts.next_from_seq, opts.lag], [[4], 4, 1]);
  });

  test('a time past the newest record is a tail: an empty page at the head; a long-poll waits for the next record', async () => {
    const { t, tsB } = await timed();
    const tail = assertOk(await c.post(`/v0/topics/${t}/diff`, { from_ts: tsB + 1 }), 200);
    assert.deepEqual([tail.records, tail.next_from_seq, tail.caught_up, tail.lag, tail.tombstone], [[], 5, true, 0, null]);
    const future = assertOk(await c.post(`/v0/topics/${t}/diff`, { from_ts: Number.MAX_SAFE_INTEGER }), 200);
    assert.deepEqual([future.records, future.next_from_seq], [[], 5]);
    const started = Date.now();
    const parked = c.post(`/v0/topics/${t}/diff`, { from_ts: Date.now() + 10, wait_ms: 10_000 });
    await sleep(150);
    assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 'c1' }] }), 200);
    const got = assertOk(await parked, 200);
    assert.deepEqual(
      got.records.map((r: any) => r.data),
      ['c1'],
    );
    assert.ok(Date.now() - started < 5000, 'answered when the record came, not at the timeout');
  });

  test('deleted records before the time are skipped silently; cap-evicted ones at or after it get a tombstone', async () => {
    const { t, between } = await timed(c, { cap_records: 10 });
    assertOk(await c.post(`/v0/topics/${t}/delete`, { before_seq: 5 }), 200);
    const b = assertOk(await c.post(`/v0/topics/${t}/diff`, { from_ts: between }), 200);
    assert.deepEqual([seqs(b), b.tombstone], [[5], null], 'seq 4 was deleted: no tombstone');
    // A cap of 2 evicts seqs 5 and 6 once two more arrive: a read from the time of 4..5 was owed them.
    assertOk(await c.put(`/v0/topics/${t}`, { cap_records: 2 }), 200);
    assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 'c1' }, { data: 'c2' }, { data: 'c3' }] }), 200);
    const lost = assertOk(await c.post(`/v0/topics/${t}/diff`, { from_ts: between }), 200);
    assert.deepEqual(seqs(lost), [7, 8]);
    assert.equal(lost.tombstone?.reason, 'cap');
    assert.deepEqual([lost.tombstone.gap_from, lost.tombstone.gap_to], [4, 6], 'the records at or after the time that are gone');
  });

  test('bad values are 400 invalid_request naming from_ts; with from_seq too, 400', async () => {
    const { t } = await timed();
    for (const bad of [-1, 1.5, '1700000000000', '2026-01-01T00:00:00Z', null, true, 2 ** 53, [1]]) {
      invalid(await c.post(`/v0/topics/${t}/diff`, { from_ts: bad }), 'from_ts', `from_ts ${JSON.stringify(bad)}`);
    }
    assert.match(invalid(await c.post(`/v0/topics/${t}/diff`, { from_ts: 1, from_seq: 0 }), 'from_ts'), /from_seq or from_ts/);
    // A known field: no unknown-field warning.
    const r = await raw(srv.url, 'POST', `/v0/topics/${t}/diff`, {
      body: JSON.stringify({ from_ts: 1 }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers['warning'], undefined);
    assertError(await c.post(`/v0/topics/${name('absent')}/diff`, { from_ts: 1 }), 404, 'topic_not_found');
  });
});

describe('watch from_ts', () => {
  async function watch(body: unknown): Promise<any> {
    return assertOk(await c.post('/v0/watch', body), 200, `POST /v0/watch ${JSON.stringify(body)}`);
  }
  async function stream(wid: string): Promise<SseStream> {
    const s = await openStream(srv.url, wid);
    open.push(s);
    assert.equal(s.status, 200);
    return s;
  }

  test('the session starts at the record at or after the time, resolved once into a seq', async () => {
    const x = await timed();
    const y = await timed();
    const w = await watch({ topics: { [x.t]: { from_ts: x.between }, [y.t]: { from_ts: 0 } } });
    assert.deepEqual(w.topics[x.t], { from_seq: 3, head_seq: 5, earliest_seq: 1 });
    assert.deepEqual(w.topics[y.t], { from_seq: 0, head_seq: 5, earliest_seq: 1 });
    const s = await stream(w.wid);
    const caughtUp = new Set<string>();
    while (caughtUp.size < 2) caughtUp.add((await s.nextEvent('caught-up')).data.topic);
    const records = (t: string) => s.frames.filter((f) => f.event === 'record' && f.data.topic === t);
    const [fx, ...moreX] = records(x.t);
    assert.deepEqual([fx!.data.from_seq, fx!.data.records.map((r: any) => r.data), moreX.length], [3, ['b1', 'b2'], 0]);
    assert.deepEqual(
      records(y.t).flatMap((f) => f.data.records.map((r: any) => r.$seq)),
      [1, 2, 3, 4, 5],
    );
    // Live records follow by seq.
    assertOk(await c.post(`/v0/topics/${x.t}`, { records: [{ data: 'c1' }] }), 200);
    const live = await s.nextEvent('record', 5000, (f) => f.data.topic === x.t);
    assert.deepEqual([live.data.from_seq, live.data.records.map((r: any) => r.data)], [5, ['c1']]);
    // A resume with the cursor of the last frame: the cursor wins over from_ts (docs/API.md).
    const again = await watch({ topics: { [x.t]: { from_ts: x.between }, [y.t]: { from_ts: 0 } }, cursor: live.id });
    assert.equal(again.topics[x.t].from_seq, 6);
  });

  test('a time past the newest record starts at the head; mixed with tail and from_seq', async () => {
    const x = await timed();
    const y = await timed();
    const z = await timed();
    const w = await watch({ topics: { [x.t]: { from_ts: x.tsB + 1 }, [y.t]: { tail: true }, [z.t]: { from_seq: 2, tail: false } } });
    assert.deepEqual([w.topics[x.t].from_seq, w.topics[y.t].from_seq, w.topics[z.t].from_seq], [5, 5, 2]);
    const tailFalse = await watch({ topics: { [x.t]: { from_ts: x.between, tail: false } } });
    assert.equal(tailFalse.topics[x.t].from_seq, 3, 'tail: false is the default, not a conflict');
  });

  test('bad values and conflicts are 400; an absent topic is 404, or left out with lenient', async () => {
    const x = await timed();
    for (const bad of [-5, 0.5, 'yesterday', null]) {
      invalid(await c.post('/v0/watch', { topics: { [x.t]: { from_ts: bad } } }), 'topics', `from_ts ${JSON.stringify(bad)}`);
    }
    assert.match(
      invalid(await c.post('/v0/watch', { topics: { [x.t]: { from_ts: 1, tail: true } } }), `topics.${x.t}.from_ts`),
      /tail or from_ts/,
    );
    assert.match(
      invalid(await c.post('/v0/watch', { topics: { [x.t]: { from_ts: 1, from_seq: 0 } } }), `topics.${x.t}.from_ts`),
      /from_seq or from_ts/,
    );
    const absent = name('absent');
    assertError(await c.post('/v0/watch', { topics: { [x.t]: { from_ts: 1 }, [absent]: { from_ts: 1 } } }), 404, 'topic_not_found');
    const lenient = assertOk(
      await c.post('/v0/watch?lenient=true', { topics: { [x.t]: { from_ts: x.between }, [absent]: { from_ts: 1 } } }),
      200,
    );
    assert.deepEqual(Object.keys(lenient.topics), [x.t]);
    assert.equal(lenient.topics[x.t].from_seq, 3);
  });
});

test('sleeping topics with cold records: diff and watch from a time wake them and find the record', { timeout: 120_000 }, async () => {
  const sleepy = await startServer({ env: { SERVICE_WORKERS: '1', SERVICE_TOPIC_SLEEP_MS: '200', SERVICE_SEGMENT_CACHE_BYTES: '4096' } });
  try {
    const sc = client(sleepy.url);
    const x = await timed(sc);
    // Enough records for the cache budget to drop texts: the first ones are read back from segments.
    const big = 'x'.repeat(2000);
    assertOk(await sc.post(`/v0/topics/${x.t}`, { records: Array.from({ length: 20 }, (_, i) => ({ data: `${big}${i}` })) }), 200);
    const metric = async () => Number(/^spool_topics_sleeping (\d+)$/m.exec((await raw(sleepy.url, 'GET', '/v0/metrics')).text)?.[1]);
    const deadline = Date.now() + 20_000;
    while ((await metric()) < 1) {
      assert.ok(Date.now() < deadline, 'the topic went to sleep');
      await sleep(100);
    }
    const b = assertOk(await sc.post(`/v0/topics/${x.t}/diff`, { from_ts: x.between, limit: 3 }), 200);
    assert.deepEqual(
      b.records.map((r: any) => r.data),
      ['b1', 'b2', `${big}0`],
    );
    while ((await metric()) < 1) {
      assert.ok(Date.now() < deadline, 'the topic went to sleep again');
      await sleep(100);
    }
    const w = assertOk(await sc.post('/v0/watch', { topics: { [x.t]: { from_ts: x.between } } }), 200);
    assert.equal(w.topics[x.t].from_seq, 3);
  } finally {
    await sleepy.stop();
  }
});
