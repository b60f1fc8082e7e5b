// SeqIndex against a plain Map model (many-topics issue: chunks start small and grow): any
// sequence of puts (dense, with reservation gaps padded), state changes, text changes and front
// drops reads back exactly what the model holds, across the 16 -> 1024 growth steps, chunk
// boundaries and holes, and nextLive (nextPut) finds the model's next live (put) seq. A small topic holds small columns, and padding allocates no slots. Several indexes
// interleaved share the column slabs without ever sharing a block; a collected index gives its
// blocks back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import v8 from 'node:v8';
import vm from 'node:vm';
import { SeqIndex, SlotState, type SlotRead } from '../../src/actors/topic/seqIndex.js';
import { slabBlocksInUse } from '../../src/core/columns/columnSlabs.js';

interface Slot {
  state: number;
  ts: number;
  bytes: number;
  nodeId: number;
  loc: number;
  frameLen: number;
  recIdx: number;
  text: HotText | undefined;
}

/** A hot record's text as the index takes it: a buffer and where the record's head starts in it. */
type HotText = readonly [buf: Buffer, off: number];
/** What `put` takes for a record's text: none is `[undefined, 0]`. */
type TextArgs = readonly [buf: Buffer | undefined, off: number];
const NO_TEXT: TextArgs = [undefined, 0];

/** Record `n` in the APPEND record layout (12-byte head, data `n`), after a few bytes of padding. */
function hot(n: number): HotText {
  const data = Buffer.from(String(n));
  const head = Buffer.alloc(12);
  head.writeUInt32LE(0xffffffff, 4); // no meta
  head.writeUInt32LE(data.length, 8);
  const pad = n % 5;
  return [Buffer.concat([Buffer.alloc(pad), head, data]), pad];
}

type Op =
  | { t: 'put'; n: number; hot: boolean }
  | { t: 'pad'; n: number }
  | { t: 'state'; back: number; st: number }
  | { t: 'cold'; back: number }
  | { t: 'drop'; back: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ t: fc.constant('put' as const), n: fc.integer({ min: 1, max: 700 }), hot: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('pad' as const), n: fc.integer({ min: 1, max: 5000 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('state' as const),
      back: fc.nat(9000),
      st: fc.constantFrom(SlotState.DELETED, SlotState.EVICTED),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('cold' as const), back: fc.nat(9000) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('drop' as const), back: fc.nat(3000) }) },
);

/** A SeqIndex and its Map model, driven by the same ops. */
class Driver {
  readonly idx = new SeqIndex();
  readonly model = new Map<number, Slot>();
  last = 0;
  dropped = 0; // every seq <= dropped may be gone from the index

  apply(op: Op): void {
    const { idx, model } = this;
    if (op.t === 'put') {
      for (let k = 0; k < op.n; k++) {
        const seq = ++this.last;
        const slot: Slot = {
          state: SlotState.LIVE,
          ts: seq * 3,
          bytes: seq % 977,
          nodeId: seq % 5,
          loc: seq * 2 ** 20,
          frameLen: 64 + (seq % 7),
          recIdx: (seq * 7919) % 65536,
          text: op.hot ? hot(seq) : undefined,
        };
        idx.put(seq, slot.ts, slot.bytes, slot.nodeId, slot.loc, slot.frameLen, slot.recIdx, ...((slot.text ?? NO_TEXT) as TextArgs));
        model.set(seq, slot);
      }
    } else if (op.t === 'pad') {
      idx.pad(this.last + op.n);
      for (let s = this.last + 1; s <= this.last + op.n; s++)
        model.set(s, { state: SlotState.EMPTY, ts: 0, bytes: 0, nodeId: 0, loc: 0, frameLen: 0, recIdx: 0, text: undefined });
      this.last += op.n;
    } else if (op.t === 'state' || op.t === 'cold') {
      const seq = this.last - op.back;
      const m = model.get(seq);
      // Callers change only slots that held a record; padded seqs stay EMPTY.
      if (!m || seq <= this.dropped || m.state === SlotState.EMPTY) return;
      if (op.t === 'state') {
        idx.setState(seq, op.st);
        m.state = op.st;
        m.text = undefined;
      } else {
        idx.dropText(seq);
        m.text = undefined;
      }
    } else {
      const seq = Math.max(1, this.last - op.back);
      // The caller's contract: every slot below the drop point is dead.
      for (let s = this.dropped + 1; s < seq; s++) {
        if (model.get(s)!.state === SlotState.EMPTY) continue;
        idx.setState(s, SlotState.DELETED);
        model.get(s)!.state = SlotState.DELETED;
        model.get(s)!.text = undefined;
      }
      idx.dropBelow(seq);
      this.dropped = Math.max(this.dropped, seq - 1);
    }
  }

  check(label = ''): void {
    const { idx, last } = this;
    assert.equal(idx.last, last);
    const v: SlotRead = { state: -1, bytes: -1, tsMs: -1, nodeId: -1, textBuf: undefined, textOff: -1 };
    for (const [seq, m] of this.model) {
      if (seq <= this.dropped) continue;
      assert.equal(idx.state(seq), m.state, `${label}state of ${seq}`);
      // A scan's one-lookup read agrees with the per-column getters.
      assert.equal(idx.readSlot(seq, v), m.state, `${label}readSlot state of ${seq}`);
      if (m.state === SlotState.EMPTY) continue;
      assert.deepEqual([v.bytes, v.tsMs, v.nodeId], [m.bytes, m.ts, m.nodeId], `${label}readSlot of ${seq}`);
      assert.equal(v.textBuf, m.text?.[0], `${label}readSlot text buffer of ${seq}`);
      if (m.text !== undefined) assert.equal(v.textOff, m.text[1], `${label}readSlot text offset of ${seq}`);
      assert.equal(idx.ts(seq), m.ts, `${label}ts of ${seq}`);
      assert.equal(idx.bytes(seq), m.bytes, `${label}bytes of ${seq}`);
      assert.equal(idx.nodeId(seq), m.nodeId, `${label}nodeId of ${seq}`);
      assert.deepEqual(idx.loc(seq), { loc: m.loc, frameLen: m.frameLen, recIdx: m.recIdx }, `${label}loc of ${seq}`);
      assert.equal(idx.hasText(seq), m.text !== undefined, `${label}hasText of ${seq}`);
      const t = idx.text(seq);
      assert.equal(t?.buf, m.text?.[0], `${label}text of ${seq}`);
      if (t !== undefined)
        assert.deepEqual([t.headOff, t.dataLen, t.metaLen], [m.text![1], String(seq).length, -1], `${label}text of ${seq}`);
    }
    // nextLive from a few points (every point would make the property quadratic).
    const live = [...this.model].filter(([seq, m]) => seq > this.dropped && m.state === SlotState.LIVE).map(([seq]) => seq);
    for (const from of [this.dropped + 1, ...live.filter((_, k) => k % 97 === 0).map((s) => s + 1), Math.floor(last / 2)]) {
      const to = Math.min(last, from + 3000);
      const want = live.find((s) => s >= from && s <= to) ?? to + 1;
      assert.equal(idx.nextLive(from, to), want, `${label}nextLive(${from}, ${to})`);
    }
    // nextPut: the next slot that held a record, live or dead (reading from a time probes with it).
    const put = [...this.model].filter(([seq, m]) => seq > this.dropped && m.state !== SlotState.EMPTY).map(([seq]) => seq);
    for (const from of [
      this.dropped + 1,
      ...put.filter((_, k) => k % 89 === 0).map((s) => s + 1),
      Math.max(this.dropped + 1, Math.floor(last / 2)),
    ]) {
      const to = Math.min(last, from + 3000);
      const want = put.find((s) => s >= from && s <= to) ?? to + 1;
      assert.equal(idx.nextPut(from, to), want, `${label}nextPut(${from}, ${to})`);
    }
    assert.equal(idx.state(last + 1), SlotState.EMPTY, 'past the end is empty');
    assert.equal(idx.readSlot(last + 1, v), SlotState.EMPTY, 'readSlot past the end is empty');
    assert.equal(idx.readSlot(0, v), SlotState.EMPTY, 'readSlot below the first seq is empty');
    assert.equal(idx.state(last + 5000), SlotState.EMPTY, 'far past the end is empty');
  }
}

test('SeqIndex reads back what a Map model holds, whatever the growth and drops', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
      const d = new Driver();
      for (const op of ops) d.apply(op);
      d.check();
    }),
    { numRuns: 150 },
  );
});

test('small chunks of several indexes share slabs: growth frees blocks that other indexes reuse, zeroed', () => {
  // Many-topics issue: the columns of chunks up to 256 slots live in shared slabs (core/columns/columnSlabs.ts).
  // A block freed by one index's growth and reused by another must never still be in use, and a
  // reused block must read as empty slots.
  const small: fc.Arbitrary<Op> = fc.oneof(
    { weight: 6, arbitrary: fc.record({ t: fc.constant('put' as const), n: fc.integer({ min: 1, max: 40 }), hot: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('pad' as const), n: fc.integer({ min: 1, max: 30 }) }) },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('state' as const),
        back: fc.nat(60),
        st: fc.constantFrom(SlotState.DELETED, SlotState.EVICTED),
      }),
    },
  );
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.nat(5), small), { maxLength: 80 }), (ops) => {
      const drivers = Array.from({ length: 6 }, () => new Driver());
      for (const [k, op] of ops) drivers[k]!.apply(op);
      drivers.forEach((d, k) => d.check(`index ${k}: `));
    }),
    { numRuns: 200 },
  );
});

test('a topic of ten records holds columns for 16 slots, not a whole chunk', () => {
  const idx = new SeqIndex();
  for (let s = 1; s <= 10; s++) idx.put(s, s, 1, 0, s, 64, 0, ...hot(s));
  const chunks = (idx as unknown as { chunks: { cap: number; slab: number }[] }).chunks;
  assert.equal(chunks.length, 1);
  assert.equal(chunks[0]!.cap, 16);
  assert.ok(chunks[0]!.slab >= 0, 'a block of 16 × 36 bytes in a shared slab, not a buffer of its own');
  for (let s = 11; s <= 5000; s++) idx.put(s, s, 1, 0, s, 64, 0, ...NO_TEXT);
  assert.deepEqual(
    chunks.map((c) => c.cap),
    [1024, 1024, 1024, 1024, 1024],
    'full chunks, then a growing one (904 of its slots put)',
  );
  assert.ok(
    chunks.every((c) => c.slab === -1),
    'chunks past 256 slots have buffers of their own',
  );
  assert.equal(idx.ts(4097), 4097);
  assert.equal(idx.text(10)?.dataLen, 2);
});

test('padding a reservation block after a crash allocates no slots, nor do the records after it', () => {
  // A topic recovered after a crash is padded to its reservation ceiling (10 + 1024); the next
  // records start a small run of their own: growing the first chunk across the gap cost 64 KB
  // per topic written again after a restart.
  const idx = new SeqIndex();
  for (let s = 1; s <= 10; s++) idx.put(s, s, 1, 0, s, 64, 0, ...NO_TEXT);
  idx.pad(1034);
  const chunks = (idx as unknown as { chunks: ({ cap: number; lo: number } | undefined)[] }).chunks;
  assert.deepEqual(
    chunks.map((c) => c?.cap),
    [16],
    'still the 16 slots of the ten records',
  );
  assert.equal(idx.last, 1034);
  assert.equal(idx.state(500), SlotState.EMPTY);
  for (let s = 1035; s <= 1044; s++) idx.put(s, s, 1, 0, s, 64, 0, ...hot(s));
  assert.deepEqual(
    chunks.map((c) => c?.cap),
    [16, 16],
    'ten more records, sixteen more slots',
  );
  assert.equal(chunks[1]!.lo, 10, 'the second chunk has columns from its first put on');
  assert.equal(idx.state(1035), SlotState.LIVE);
  assert.equal(idx.state(1034), SlotState.EMPTY);
  assert.equal(idx.text(1040)?.dataLen, 4);
  assert.equal(idx.nextLive(11, 1044), 1035, 'the padded seqs are skipped');
  // Three crashes later the run starts late in its chunk: it still holds only what was put.
  idx.pad(5000);
  for (let s = 5001; s <= 5010; s++) idx.put(s, s, 1, 0, s, 64, 0, ...NO_TEXT);
  assert.deepEqual(
    chunks.map((c) => c?.cap),
    [16, 16, undefined, undefined, 16],
  );
  assert.equal(idx.nextLive(1045, 6000), 5001);
  // A run that reaches the end of its chunk moves its columns down instead of past the end.
  for (let s = 5011; s <= 5120; s++) idx.put(s, s, 1, 0, s, 64, 0, ...((s === 5100 ? hot(s) : NO_TEXT) as TextArgs));
  assert.equal(chunks[4]!.lo + chunks[4]!.cap <= 1024, true);
  assert.equal(idx.ts(5001), 5001);
  assert.equal(idx.ts(5120), 5120);
  assert.equal(idx.text(5100)?.dataLen, 4);
});

test('a chunk grows downwards too (a put below its first one) and keeps its texts in place', () => {
  const idx = new SeqIndex();
  idx.put(600, 600, 1, 0, 600, 64, 0, ...hot(600));
  idx.put(10, 10, 1, 0, 10, 64, 0, ...hot(10));
  const chunks = (idx as unknown as { chunks: { cap: number; lo: number }[] }).chunks;
  assert.ok(chunks[0]!.lo <= 9 && chunks[0]!.lo + chunks[0]!.cap > 599);
  assert.equal(idx.text(600)?.dataLen, 3);
  assert.equal(idx.text(10)?.dataLen, 2);
  assert.equal(idx.ts(600), 600);
  assert.equal(idx.nextLive(1, 1000), 10);
  assert.equal(idx.nextLive(11, 1000), 600);
});

test('a collected index gives its slab blocks back', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const settle = async () => {
    for (let i = 0; i < 5; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  await settle(); // the indexes of earlier tests first
  const before = slabBlocksInUse;
  let idx: SeqIndex | undefined = new SeqIndex();
  for (let s = 1; s <= 100; s++) idx.put(s, s, 1, 0, s, 64, 0, ...NO_TEXT); // 16 -> 128 slots
  assert.equal(slabBlocksInUse, before + 1, 'growth gave the smaller blocks back at once');
  idx = undefined;
  await settle();
  assert.equal(slabBlocksInUse, before);
});
