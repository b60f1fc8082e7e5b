// Reading from a time (src/actors/topic/timeSeek.ts; docs/API.md `from_ts`): the binary search
// over the seq index's `$ts` column against a linear scan, with holes, padding, dead slots and
// front drops, within a bound on probes (a million records: a few dozen, never a scan); then
// through a TopicActor (SimActor): random programs of appends, clock steps both ways, cap and
// TTL changes and deletes by seq and by tag, after each of which a diff from a time must read
// exactly what a diff from the cursor before the first record at or after that time reads, and
// deliver the live records at or after it; the tombstone and long-poll cases; the watch seek.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SeqIndex, SlotState } from '../../src/actors/topic/seqIndex.js';
import { firstPutAtOrAfter } from '../../src/actors/topic/timeSeek.js';
import { SimActor } from '../support/simActor.js';
import { defaultConfig } from '../../src/protocol/topicConfig.js';

// ---- the index search ------------------------------------------------------------------------

type IdxOp = { t: 'put'; n: number; dts: number } | { t: 'pad'; n: number } | { t: 'kill'; back: number } | { t: 'drop'; back: number };

const idxOpArb: fc.Arbitrary<IdxOp> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ t: fc.constant('put' as const), n: fc.integer({ min: 1, max: 900 }), dts: fc.integer({ min: 0, max: 3 }) }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('pad' as const), n: fc.integer({ min: 1, max: 3000 }) }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('kill' as const), back: fc.nat(2000) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('drop' as const), back: fc.nat(3000) }) },
);

/** An index built the way topics build theirs: `$ts` never decreases over the put seqs. */
function buildIndex(ops: IdxOp[]): { idx: SeqIndex; ts: Map<number, number>; last: number; dropped: number } {
  const idx = new SeqIndex();
  const ts = new Map<number, number>(); // put seq → $ts (dead ones too); padded seqs are absent
  let last = 0;
  let dropped = 0;
  let now = 1000;
  for (const op of ops) {
    if (op.t === 'put') {
      // A batch shares one $ts; the next batch is at the same time or later.
      for (let k = 0; k < op.n; k++) {
        idx.put(++last, now, 10, 0, 0, 64, 0, undefined, 0);
        ts.set(last, now);
      }
      now += op.dts;
    } else if (op.t === 'pad') {
      idx.pad((last += op.n));
    } else if (op.t === 'kill') {
      // A dead run (a tag delete): its slots keep their $ts.
      for (let s = last - op.back; s <= Math.min(last, last - op.back + 50); s++)
        if (ts.has(s) && s > dropped) idx.setState(s, SlotState.DELETED);
    } else {
      const s = Math.max(1, last - op.back);
      for (let k = dropped + 1; k < s; k++) if (ts.has(k) && idx.state(k) === SlotState.LIVE) idx.setState(k, SlotState.EVICTED);
      idx.dropBelow(s);
      dropped = Math.max(dropped, s - 1);
    }
  }
  return { idx, ts, last, dropped };
}

test('firstPutAtOrAfter finds what a linear scan finds, in O(log n) probes', () => {
  fc.assert(
    fc.property(
      fc.array(idxOpArb, { maxLength: 30 }),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: -1, max: 1 })), { minLength: 1, maxLength: 8 }),
      (ops, picks) => {
        const { idx, ts, last, dropped } = buildIndex(ops);
        // Times at and around the $ts of put seqs (dead ones included), and before and after all.
        const stamps = [...ts.values()];
        const times = [0, 99_999, ...picks.map(([k, d]) => (stamps.length ? stamps[k % stamps.length]! + d : d))];
        // Ranges the index still fully knows (dropBelow may have dropped chunks below `dropped`).
        const ranges: [number, number][] = [
          [dropped + 1, last],
          [Math.floor((dropped + last) / 2), last],
          [dropped + 1, Math.floor((dropped + last) / 2)],
        ];
        for (const t of times) {
          for (const [lo, hi] of ranges) {
            if (lo < 1) continue;
            let want = hi + 1;
            for (let s = lo; s <= hi; s++) {
              const v = ts.get(s);
              if (v !== undefined && v >= t) {
                want = s;
                break;
              }
            }
            const got = firstPutAtOrAfter(idx, t, lo, hi);
            assert.equal(got.seq, want, `first put seq with $ts >= ${t} in [${lo}, ${hi}]`);
            const bound = 2 * Math.ceil(Math.log2(Math.max(2, hi - lo + 2))) + 2;
            assert.ok(got.probes <= bound, `${got.probes} probes over ${hi - lo + 1} seqs (bound ${bound})`);
          }
        }
      },
    ),
    { numRuns: 150 },
  );
});

test('a million records: the search probes a few dozen slots, whatever the time', () => {
  const idx = new SeqIndex();
  const N = 1_000_000;
  // 1000 records per millisecond, then a deleted run of 200k in the middle (tag deletes).
  for (let s = 1; s <= N; s++) idx.put(s, 5_000 + Math.floor(s / 1000), 10, 0, 0, 64, 0, undefined, 0);
  for (let s = 400_000; s < 600_000; s++) idx.setState(s, SlotState.DELETED);
  for (const [t, want] of [
    [0, 1],
    [5_000, 1],
    [5_001, 1000],
    [5_500, 500_000], // inside the deleted run: the first record at or after it (dead, the read skips it)
    [5_999, 999_000],
    [6_000, 1_000_000],
    [6_001, N + 1],
  ] as const) {
    const r = firstPutAtOrAfter(idx, t, 1, N);
    assert.equal(r.seq, want, `from ${t}`);
    assert.ok(r.probes <= 2 * 20 + 2, `${r.probes} probes for a million seqs`);
  }
});

// ---- through the actor -----------------------------------------------------------------------

type Op =
  | { k: 'append'; n: number; tag: 'a' | 'b' }
  | { k: 'clock'; ms: number }
  | { k: 'config'; cap: number; ttl: number }
  | { k: 'deleteBefore'; back: number }
  | { k: 'deleteTag'; tag: 'a' | 'b' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      k: fc.constant('append' as const),
      n: fc.integer({ min: 1, max: 6 }),
      tag: fc.constantFrom('a' as const, 'b' as const),
    }),
  },
  // Both ways: $ts never decreases within a topic even when the clock steps back.
  { weight: 5, arbitrary: fc.record({ k: fc.constant('clock' as const), ms: fc.integer({ min: -2000, max: 1500 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('config' as const),
      cap: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 12 })),
      ttl: fc.oneof(fc.constant(0), fc.integer({ min: 100, max: 3000 })),
    }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('deleteBefore' as const), back: fc.nat(10) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('deleteTag' as const), tag: fc.constantFrom('a' as const, 'b' as const) }) },
);

const memory = (over: Record<string, unknown> = {}) => ({ ...defaultConfig(), durability: 'memory', durable: false, ...over });

function diffReq(over: Record<string, unknown>) {
  return { op: 'diff', fromSeq: 0, limit: 1000, nodes: null, includeTags: true, includeMeta: true, waitMs: 0, maxBatchBytes: 0, ...over };
}

function call(sim: SimActor, req: Record<string, unknown>): any {
  const id = sim.send(req as never);
  sim.ackAll();
  const r = sim.reply(id);
  assert.ok(r && !r.error, `answered: ${JSON.stringify(req)} → ${JSON.stringify(r)}`);
  return r.body;
}

/** Drives one program; `stamps` gets every appended seq's $ts (read back right after the append). */
function runProgram(ops: Op[]): void {
  const sim = new SimActor();
  call(sim, { op: 'put', config: memory() });
  const stamps: number[] = []; // stamps[seq - 1]
  for (const [i, op] of ops.entries()) {
    const what = `step ${i + 1} ${JSON.stringify(op)}`;
    if (op.k === 'clock') sim.now += op.ms;
    else if (op.k === 'config') call(sim, { op: 'put', config: memory({ cap_records: op.cap, ttl_ms: op.ttl }) });
    else if (op.k === 'deleteBefore') call(sim, { op: 'deleteRecords', beforeSeq: Math.max(0, stamps.length - op.back), match: null });
    else if (op.k === 'deleteTag') call(sim, { op: 'deleteRecords', beforeSeq: null, match: { op: 'Eq', value: op.tag } });
    else {
      const a = call(sim, {
        op: 'append',
        body: Buffer.from(JSON.stringify({ records: Array.from({ length: op.n }, (_, k) => ({ data: k, tag: op.tag })) })),
        returnSeqs: true,
      });
      // The newest record always survives its own append (a cap keeps at least one; TTL needs time).
      const last = call(sim, diffReq({ fromSeq: a.last_seq - 1, limit: 1 })).records[0];
      assert.equal(last.$seq, a.last_seq, `${what}: the batch's last record reads back`);
      for (let s = a.first_seq; s <= a.last_seq; s++) stamps[s - 1] = last.$ts;
    }
    checkTimes(sim, stamps, what);
  }
}

/** Diffs from times around every distinct $ts: each equals the diff from the cursor a scan finds. */
function checkTimes(sim: SimActor, stamps: number[], what: string): void {
  const times = new Set<number>([0, Number.MAX_SAFE_INTEGER]);
  for (const t of stamps) for (const d of [-1, 0, 1]) times.add(t + d);
  const all = call(sim, diffReq({ fromSeq: 0 }));
  const head = all.head_seq as number;
  for (const t of times) {
    const w = `${what}: from_ts ${t}`;
    const byTime = call(sim, diffReq({ fromTsMs: t }));
    let first = stamps.findIndex((ts) => ts >= t) + 1; // the first seq at or after t, 0 if none
    if (first === 0 || first > head) first = head + 1;
    const bySeq = call(sim, diffReq({ fromSeq: first - 1 }));
    assert.deepEqual(byTime, bySeq, `${w}: reads as from_seq ${first - 1}`);
    // And what that means, independently: the live records at or after t, none before.
    const want = all.records.filter((r: any) => r.$ts >= t).map((r: any) => r.$seq);
    assert.deepEqual(
      byTime.records.map((r: any) => r.$seq),
      want,
      `${w}: the live records at or after the time`,
    );
    if (byTime.tombstone) {
      for (let s = byTime.tombstone.gap_from; s <= byTime.tombstone.gap_to; s++)
        assert.ok(stamps[s - 1]! >= t, `${w}: the tombstone covers seq ${s}, older than the time`);
    }
    assert.equal(byTime.next_from_seq, head, `${w}: a single page reaches the head`);
  }
}

test('a diff from a time reads from the cursor before the first record at or after it (fast-check)', () => {
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 40 }), (ops) => runProgram(ops)),
    { numRuns: Number(process.env.TIME_SEEK_RUNS ?? 120) },
  );
});

test('records lost below the oldest record the index knows get the from_seq 0 tombstone', () => {
  const sim = new SimActor();
  call(sim, { op: 'put', config: memory({ cap_records: 500 }) });
  // 3000 records, one batch per ms: the cap evicts 2500, and the index drops whole chunks below
  // the earliest, so seqs 1..2048 are no longer known.
  for (let i = 0; i < 30; i++) {
    call(sim, {
      op: 'append',
      body: Buffer.from(JSON.stringify({ records: Array.from({ length: 100 }, (_, k) => ({ data: k })) })),
      returnSeqs: true,
    });
    sim.now += 1;
  }
  const t0 = sim.now - 30; // the first batch (seqs 1..100)
  const early = call(sim, diffReq({ fromTsMs: t0 + 5 }));
  assert.equal(early.records[0].$seq, 2501);
  assert.deepEqual(
    [early.tombstone.gap_from, early.tombstone.gap_to, early.tombstone.reason],
    [1, 2500, 'cap'],
    'the dropped seqs cannot be dated: the whole loss',
  );
  // A time the index can still place (dead slots of the earliest's chunk keep their $ts).
  const known = call(sim, diffReq({ fromTsMs: t0 + 22 })); // the 23rd batch: seqs 2201..2300
  assert.deepEqual([known.tombstone.gap_from, known.tombstone.gap_to], [2201, 2500], 'only the records at or after the time');
  const kept = call(sim, diffReq({ fromTsMs: t0 + 27 })); // the 28th batch: seqs 2701..
  assert.equal(kept.tombstone, null);
  assert.equal(kept.records[0].$seq, 2701);
});

test('a time past the newest record reads as a tail: empty at the head, and a long-poll waits there', () => {
  const sim = new SimActor();
  call(sim, { op: 'put', config: memory() });
  const empty = call(sim, diffReq({ fromTsMs: sim.now }));
  assert.deepEqual([empty.records, empty.next_from_seq, empty.caught_up], [[], 0, true], 'an empty topic');
  call(sim, { op: 'append', body: Buffer.from('{"records":[{"data":1},{"data":2}]}'), returnSeqs: true });
  const past = call(sim, diffReq({ fromTsMs: sim.now + 1 }));
  assert.deepEqual([past.records, past.next_from_seq, past.caught_up, past.tombstone], [[], 2, true, null]);
  const d = sim.send(diffReq({ fromTsMs: sim.now + 1, waitMs: 5000 }) as never);
  assert.equal(sim.reply(d), undefined, 'parked at the head');
  sim.now += 10;
  sim.append({ records: [{ data: 3 }] });
  sim.ackAll();
  assert.deepEqual(
    sim.reply(d).body.records.map((r: any) => r.data),
    [3],
  );
});

test('seek: the cursor a watch starts at, with the watermarks; absent topics are not found', () => {
  const sim = new SimActor();
  call(sim, { op: 'put', config: memory() });
  call(sim, { op: 'append', body: Buffer.from('{"records":[{"data":1},{"data":2}]}'), returnSeqs: true });
  const at = sim.now;
  sim.now += 50;
  call(sim, { op: 'append', body: Buffer.from('{"records":[{"data":3}]}'), returnSeqs: true });
  const seek = (tsMs: number) => {
    const id = sim.send({ op: 'seek', tsMs } as never);
    return sim.replies.get(id)!;
  };
  assert.deepEqual(seek(at + 1), { ok: true, status: 200, json: Buffer.alloc(0), perf: {}, seek: { fromSeq: 2, head: 3, earliest: 1 } });
  assert.equal((seek(at) as any).seek.fromSeq, 0);
  assert.equal((seek(at + 51) as any).seek.fromSeq, 3);
  call(sim, { op: 'deleteTopic', ifEmpty: false });
  const gone = seek(at) as any;
  assert.equal(gone.ok, false);
  assert.equal(gone.code, 'topic_not_found');
});
