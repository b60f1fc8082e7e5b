// Router forwarding over HTTP (docs/API.md "Routers", "Diff"; docs/ARCHITECTURE.md "Routers") on a server with two
// topic workers, each case with source and dest on different workers and on the same one:
// no backfill, the filter (delete match language), preserve_node / preserve_tag, meta of
// at_least_once (unchanged) and exactly_once (`_spool_router`), deletes never propagate,
// read-your-writes (diff, state, router GET and a chain a→b→c on the next read, no polling),
// a refused forward (full `reject` dest) retried with backoff and never lost, and an allow_cycle
// mirror A↔B making exactly one copy per write, with `$node` kept so a reader never sees its own;
// and a chain of ten routers.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { routerSuite } from '../support/routerSuite.js';
import { assertOk, namer, sleep } from './util.js';

const name = namer('fw');
const { c, pair, route } = routerSuite({ name });

const append = (t: string, records: unknown[]) => c.post(`/v0/topics/${t}`, { records });
const diff = async (t: string, extra: Record<string, unknown> = {}) =>
  assertOk(await c.post(`/v0/topics/${t}/diff`, { include_tags: true, ...extra }), 200).records;

for (const same of [false, true]) {
  describe(same ? 'source and dest on the same worker' : 'source and dest on different workers', () => {
    test('no backfill; every later record copied in order with data, meta, $tag and $node', async () => {
      const [s, d] = pair(same);
      assertOk(await append(s, [{ data: 'before' }]), 201);
      assertOk(await route(s, d), 201);
      assertOk(
        await append(s, [
          { data: { a: 1 }, tag: 't1', node: 'n1', meta: { m: 1 } },
          { data: [1, 2], meta: { '1e400': 1e3 } },
          { data: null },
        ]),
        200,
      );
      const got = await diff(d);
      assert.deepEqual(
        got.map((r: any) => ({ data: r.data, tag: r.$tag, node: r.$node, meta: r.meta })),
        [
          { data: { a: 1 }, tag: 't1', node: 'n1', meta: { m: 1 } },
          { data: [1, 2], tag: undefined, node: undefined, meta: { '1e400': 1000 } },
          { data: null, tag: undefined, node: undefined, meta: undefined },
        ],
      );
      const r = assertOk(await c.get(`/v0/routers/${encodeURIComponent(`${s}->${d}`)}`), 200);
      assert.equal(r.forwarded_total, 3);
    });

    test('filter: Eq and Glob on the tag; untagged records never match', async () => {
      const [s, d] = pair(same);
      const [s2, d2] = pair(same);
      assertOk(await route(s, d, { filter: ['tag', 'Glob', 'ord*'] }), 201);
      assertOk(await route(s2, d2, { filter: ['tag', 'Eq', 'x'] }), 201);
      const recs = [
        { data: 1, tag: 'orders' },
        { data: 2, tag: 'or' },
        { data: 3 },
        { data: 4, tag: 'ord' },
        { data: 5, tag: 'x' },
        { data: 6, tag: 'xx' },
      ];
      assertOk(await append(s, recs), 200);
      assertOk(await append(s2, recs), 200);
      assert.deepEqual(
        (await diff(d)).map((r: any) => r.data),
        [1, 4],
      );
      assert.deepEqual(
        (await diff(d2)).map((r: any) => r.data),
        [5],
      );
    });

    test('preserve_node false clears $node, preserve_tag false drops $tag; at_least_once meta unchanged', async () => {
      const [s, d] = pair(same);
      assertOk(await route(s, d, { preserve_node: false, preserve_tag: false }), 201);
      assertOk(
        await c.post(`/v0/topics/${s}`, {
          node: 'batchnode',
          records: [
            { data: 1, tag: 't', meta: { k: 'v' } },
            { data: 2, node: 'own' },
          ],
        }),
        200,
      );
      const got = await diff(d);
      assert.deepEqual(
        got.map((r: any) => [r.$node, r.$tag, r.meta]),
        [
          [undefined, undefined, { k: 'v' }],
          [undefined, undefined, undefined],
        ],
      );
    });

    test('exactly_once copies carry _spool_router = router:source id:source seq at the end of meta', async () => {
      const [s, d] = pair(same);
      assertOk(await route(s, d, { guarantee: 'exactly_once' }), 201);
      const a = assertOk(await append(s, [{ data: 1, meta: { x: 1 } }, { data: 2 }]), 200);
      const got = await diff(d);
      const keys = got.map((r: any) => r.meta._spool_router as string);
      assert.match(keys[0]!, new RegExp(`^${s.replace(/\./g, '\\.')}->${d.replace(/\./g, '\\.')}:\\d+:${a.first_seq}$`));
      assert.ok(keys[1]!.endsWith(`:${a.first_seq + 1}`));
      assert.deepEqual(Object.keys(got[0].meta), ['x', '_spool_router']);
    });

    test('deletes never propagate: a source delete leaves copies; a record deleted before forwarding is skipped', async () => {
      const [s, d] = pair(same);
      assertOk(await route(s, d), 201);
      assertOk(
        await append(s, [
          { data: 1, tag: 'a' },
          { data: 2, tag: 'b' },
        ]),
        200,
      );
      assert.equal((await diff(d)).length, 2);
      assertOk(await c.post(`/v0/topics/${s}/delete`, { match: 'a' }), 200);
      assert.deepEqual(
        (await diff(d)).map((r: any) => r.data),
        [1, 2],
      );
      assertOk(await c.post(`/v0/topics/${d}/delete`, { match: 'b' }), 200);
      assertOk(await append(s, [{ data: 3 }]), 200);
      assert.deepEqual(
        (await diff(d)).map((r: any) => r.data),
        [1, 3],
      );
    });

    test('read-your-writes: state, diff and a chain a→b→c see a write on the very next read', async () => {
      const [a, b] = pair(same);
      const cc = `${b}.c`;
      assertOk(await route(a, b), 201);
      assertOk(await route(b, cc), 201);
      for (let i = 0; i < 20; i++) {
        assertOk(await append(a, [{ data: i }]), 200);
        assert.equal(assertOk(await c.get(`/v0/topics/${b}`), 200).count, i + 1);
        assert.equal((await diff(cc, { from_seq: 0, limit: 1000 })).length, i + 1);
      }
    });

    test('a refused forward (full reject dest) is retried with backoff and never lost', async () => {
      const [s, d] = pair(same);
      assertOk(await c.put(`/v0/topics/${d}`, { discard: 'reject', cap_records: 1 }), 201);
      assertOk(await route(s, d, { guarantee: 'exactly_once' }), 201);
      assertOk(await append(s, [{ data: 1 }]), 200);
      assertOk(await append(s, [{ data: 2 }, { data: 3 }]), 200); // the source never refuses
      await sleep(300);
      assert.deepEqual(
        (await diff(d)).map((r: any) => r.data),
        [1],
      );
      const metrics = await c.get('/v0/metrics', { accept: 'application/json' });
      assert.ok(metrics.body.routers >= 1);
      const st = metrics.body.router_stats.find((x: any) => x.router === `${s}->${d}`);
      assert.deepEqual({ ...st, forwarded_total: 0 }, { router: `${s}->${d}`, forwarded_total: 0, lag: 2, last_error: 'topic_full' });
      const prom = (await c.get('/v0/metrics')).text;
      assert.match(
        prom,
        new RegExp(`spool_router_blocked\\{router="${s.replace(/\./g, '\\.')}->${d.replace(/\./g, '\\.')}",code="topic_full"\\} 1`),
      );
      assertOk(await c.put(`/v0/topics/${d}`, { discard: 'reject', cap_records: 10 }), 200);
      const deadline = Date.now() + 10_000;
      let got: any[] = [];
      while (Date.now() < deadline) {
        got = await diff(d);
        if (got.length === 3) break;
        await sleep(50);
      }
      assert.deepEqual(
        got.map((r: any) => r.data),
        [1, 2, 3],
      );
    });

    test('a batch larger than the room a full reject dest has left: what fits goes on, the rest waits', async () => {
      const [s, d] = pair(same);
      assertOk(await c.put(`/v0/topics/${d}`, { discard: 'reject', cap_records: 5 }), 201);
      assertOk(await route(s, d), 201);
      assertOk(
        await append(
          s,
          [1, 2, 3, 4].map((data) => ({ data })),
        ),
        200,
      );
      assertOk(await append(s, [{ data: 5 }, { data: 6 }]), 200);
      // The read drains the forwarder: 5 fits (the batch of two is halved), 6 waits for room.
      assert.deepEqual(
        (await diff(d)).map((r: any) => r.data),
        [1, 2, 3, 4, 5],
      );
      assertOk(await c.post(`/v0/topics/${d}/delete`, { before_seq: 2 }), 200);
      assert.deepEqual(
        (await diff(d)).map((r: any) => r.data),
        [2, 3, 4, 5, 6],
      );
    });

    test('a diff on a dest applies a refused forward at once once room is freed, not at the next backoff', async () => {
      const [s, d] = pair(same);
      assertOk(await c.put(`/v0/topics/${d}`, { discard: 'reject', cap_records: 2 }), 201);
      assertOk(await route(s, d), 201);
      assertOk(await append(s, [{ data: 1 }, { data: 2 }]), 200);
      assertOk(await append(s, [{ data: 3 }]), 200);
      await sleep(300); // refused: the forwarder backs off (its next try is a second or more away)
      assert.deepEqual(
        (await diff(d)).map((r: any) => r.data),
        [1, 2],
      );
      assertOk(await c.post(`/v0/topics/${d}/delete`, { before_seq: 2 }), 200); // room for one
      assert.deepEqual(
        (await diff(d)).map((r: any) => r.data),
        [2, 3],
        'the first diff after the delete has the pending record',
      );
    });

    test('records evicted from the source before forwarding give dest readers a source_trim tombstone', async () => {
      const [s, d] = pair(same);
      assertOk(await c.put(`/v0/topics/${s}`, { cap_records: 2 }), 201);
      assertOk(await c.put(`/v0/topics/${d}`, { discard: 'reject', cap_records: 1 }), 201);
      assertOk(await route(s, d), 201);
      assertOk(await append(s, [{ data: 1 }]), 200);
      for (const v of [2, 3, 4, 5, 6]) assertOk(await append(s, [{ data: v }]), 200); // 2-4 evicted at the source
      assertOk(await c.put(`/v0/topics/${d}`, { discard: 'reject', cap_records: 100 }), 200);
      const deadline = Date.now() + 10_000;
      let first: any;
      while (Date.now() < deadline) {
        first = assertOk(await c.post(`/v0/topics/${d}/diff`, {}), 200);
        if (first.head_seq >= 4) break;
        await sleep(50);
      }
      assert.deepEqual(
        first.records.map((r: any) => r.data),
        [1],
      );
      assert.equal(first.tombstone, null);
      const second = assertOk(await c.post(`/v0/topics/${d}/diff`, { from_seq: first.next_from_seq }), 200);
      assert.deepEqual(second.tombstone, {
        gap_from: 2,
        gap_to: 2,
        reason: 'source_trim',
        missed_estimate: 3,
        earliest_seq: 1,
        head_seq: 4,
      });
      assert.deepEqual(
        second.records.map((r: any) => r.data),
        [5, 6],
      );
      // forwarded_total counts copies, not the marker.
      assert.equal(assertOk(await c.get(`/v0/routers/${encodeURIComponent(`${s}->${d}`)}`), 200).forwarded_total, 3);
    });

    test('a queue dest never hands out a source_trim marker as a job, and its count leaves the marker out', async () => {
      const [s, d] = pair(same);
      assertOk(await c.put(`/v0/topics/${s}`, { cap_records: 2 }), 201);
      assertOk(await c.put(`/v0/topics/${d}`, { type: 'queue', discard: 'reject', cap_records: 1 }), 201);
      assertOk(await route(s, d), 201);
      assertOk(await append(s, [{ data: 1 }]), 200);
      for (const v of [2, 3, 4, 5, 6]) assertOk(await append(s, [{ data: v }]), 200); // 2-4 evicted at the source
      assertOk(await c.put(`/v0/topics/${d}`, { type: 'queue', discard: 'reject', cap_records: 100 }), 200);
      const deadline = Date.now() + 10_000;
      let st: any;
      while (Date.now() < deadline) {
        st = assertOk(await c.get(`/v0/topics/${d}`), 200);
        if (st.head_seq >= 4) break;
        await sleep(50);
      }
      assert.deepEqual([st.head_seq, st.count, st.queue.ready], [4, 3, 3]);
      const claimed = assertOk(await c.post(`/v0/topics/${d}/claim`, { node: 'w', max: 10 }), 200);
      assert.deepEqual(
        claimed.claimed.map((j: any) => [j.$seq, j.data]),
        [
          [1, 1],
          [3, 5],
          [4, 6],
        ],
      );
      const acked = assertOk(await c.post(`/v0/topics/${d}/ack`, { node: 'w', seqs: [1, 3, 4] }), 200);
      assert.equal(acked.acked, 3);
      const after = assertOk(await c.get(`/v0/topics/${d}`), 200);
      assert.deepEqual([after.count, after.earliest_seq, after.queue.ready, after.queue.in_flight], [0, 5, 0, 0]);
      // The loss still reads as a tombstone from the start: the marker is the only seq left.
      const read = assertOk(await c.post(`/v0/topics/${d}/diff`, { from_seq: 0 }), 200);
      assert.deepEqual(read.tombstone, { gap_from: 2, gap_to: 2, reason: 'source_trim', missed_estimate: 3, earliest_seq: 5, head_seq: 4 });
      assert.deepEqual(read.records, []);
    });

    test('allow_cycle mirror A↔B: exactly one copy per write, and a reader never sees its own node', async () => {
      const [a, b] = pair(same);
      assertOk(await route(a, b, { allow_cycle: true }), 201);
      assertOk(await route(b, a, { allow_cycle: true }), 201);
      assertOk(await append(a, [{ data: 'from-a', node: 'na' }]), 200);
      assertOk(await append(b, [{ data: 'from-b', node: 'nb' }]), 200);
      await sleep(100);
      assert.deepEqual((await diff(a)).map((r: any) => r.data).sort(), ['from-a', 'from-b']);
      assert.deepEqual((await diff(b)).map((r: any) => r.data).sort(), ['from-a', 'from-b']);
      await sleep(200);
      assert.equal(assertOk(await c.get(`/v0/topics/${a}`), 200).count, 2);
      assert.equal(assertOk(await c.get(`/v0/topics/${b}`), 200).count, 2);
      assert.deepEqual(
        (await diff(b, { node: 'na' })).map((r: any) => r.data),
        ['from-b'],
      );
    });
  });
}

test('a copy travels a whole chain of 10 routers, across workers (the hop limit is far past it)', async () => {
  const base = name('chain');
  const t = Array.from({ length: 11 }, (_, i) => `${base}.${i}`);
  for (let i = 0; i < 10; i++) assertOk(await route(t[i]!, t[i + 1]!), 201);
  assertOk(await append(t[0]!, [{ data: 'x' }]), 200);
  for (let i = 1; i <= 10; i++)
    assert.deepEqual(
      (await diff(t[i]!)).map((r: any) => r.data),
      ['x'],
      `hop ${i}`,
    );
});
