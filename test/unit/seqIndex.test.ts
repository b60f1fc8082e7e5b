// SeqIndex against a plain Map model (many-topics issue: chunks start small and grow): any
// sequence of puts (dense, with reservation gaps padded), state changes, text changes and front
// drops reads back exactly what the model holds, across the 16 -> 4096 growth steps and chunk
// boundaries. A small topic holds small columns, and padding allocates no slots.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SeqIndex, SlotState } from '../../src/actors/topic/seqIndex.js';
import { RecordText } from '../../src/actors/topic/recordText.js';

interface Slot {
  state: number;
  ts: number;
  bytes: number;
  nodeId: number;
  loc: number;
  frameLen: number;
  recIdx: number;
  text: RecordText | undefined;
}

const text = (n: number) => new RecordText(Buffer.from(`{"data":${n}}`), 0, 0, 0, 0, 0, -1, 8, String(n).length);

type Op = { t: 'put'; n: number; hot: boolean } | { t: 'pad'; n: number } | { t: 'state'; back: number; st: number } | { t: 'cold'; back: number } | { t: 'drop'; back: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ t: fc.constant('put' as const), n: fc.integer({ min: 1, max: 700 }), hot: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('pad' as const), n: fc.integer({ min: 1, max: 5000 }) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('state' as const), back: fc.nat(9000), st: fc.constantFrom(SlotState.DELETED, SlotState.EVICTED) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('cold' as const), back: fc.nat(9000) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('drop' as const), back: fc.nat(3000) }) },
);

test('SeqIndex reads back what a Map model holds, whatever the growth and drops', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
      const idx = new SeqIndex();
      const model = new Map<number, Slot>();
      let last = 0;
      let dropped = 0; // every seq <= dropped may be gone from the index
      for (const op of ops) {
        if (op.t === 'put') {
          for (let k = 0; k < op.n; k++) {
            const seq = ++last;
            const slot: Slot = { state: SlotState.LIVE, ts: seq * 3, bytes: seq % 977, nodeId: seq % 5, loc: seq * 2 ** 20, frameLen: 64 + (seq % 7), recIdx: (seq * 7919) % 65536, text: op.hot ? text(seq) : undefined };
            idx.put(seq, slot.ts, slot.bytes, slot.nodeId, slot.loc, slot.frameLen, slot.recIdx, slot.text);
            model.set(seq, slot);
          }
        } else if (op.t === 'pad') {
          idx.pad(last + op.n);
          for (let s = last + 1; s <= last + op.n; s++) model.set(s, { state: SlotState.EMPTY, ts: 0, bytes: 0, nodeId: 0, loc: 0, frameLen: 0, recIdx: 0, text: undefined });
          last += op.n;
        } else if (op.t === 'state' || op.t === 'cold') {
          const seq = last - op.back;
          const m = model.get(seq);
          // Callers change only slots that held a record; padded seqs stay EMPTY.
          if (!m || seq <= dropped || m.state === SlotState.EMPTY) continue;
          if (op.t === 'state') {
            idx.setState(seq, op.st);
            m.state = op.st;
            m.text = undefined;
          } else {
            idx.setText(seq, undefined);
            m.text = undefined;
          }
        } else {
          const seq = Math.max(1, last - op.back);
          // The caller's contract: every slot below the drop point is dead.
          for (let s = dropped + 1; s < seq; s++) {
            if (model.get(s)!.state === SlotState.EMPTY) continue;
            idx.setState(s, SlotState.DELETED);
            model.get(s)!.state = SlotState.DELETED;
            model.get(s)!.text = undefined;
          }
          idx.dropBelow(seq);
          dropped = Math.max(dropped, seq - 1);
        }
      }
      assert.equal(idx.last, last);
      for (const [seq, m] of model) {
        if (seq <= dropped) continue;
        assert.equal(idx.state(seq), m.state, `state of ${seq}`);
        if (m.state === SlotState.EMPTY) continue;
        assert.equal(idx.ts(seq), m.ts, `ts of ${seq}`);
        assert.equal(idx.bytes(seq), m.bytes, `bytes of ${seq}`);
        assert.equal(idx.nodeId(seq), m.nodeId, `nodeId of ${seq}`);
        assert.deepEqual(idx.loc(seq), { loc: m.loc, frameLen: m.frameLen, recIdx: m.recIdx }, `loc of ${seq}`);
        assert.equal(idx.text(seq), m.text, `text of ${seq}`);
      }
      assert.equal(idx.state(last + 1), SlotState.EMPTY, 'past the end is empty');
      assert.equal(idx.state(last + 5000), SlotState.EMPTY, 'far past the end is empty');
    }),
    { numRuns: 150 },
  );
});

test('a topic of ten records holds columns for 16 slots, not 4096', () => {
  const idx = new SeqIndex();
  for (let s = 1; s <= 10; s++) idx.put(s, s, 1, 0, s, 64, 0, text(s));
  const chunks = (idx as unknown as { chunks: { cap: number; f: Float64Array }[] }).chunks;
  assert.equal(chunks.length, 1);
  assert.equal(chunks[0]!.cap, 16);
  assert.equal(chunks[0]!.f.buffer.byteLength, 16 * 32, 'one buffer of 32 bytes a slot');
  for (let s = 11; s <= 5000; s++) idx.put(s, s, 1, 0, s, 64, 0, undefined);
  assert.deepEqual(
    chunks.map((c) => c.cap),
    [4096, 1024],
    'a full chunk, then a growing one',
  );
  assert.equal(idx.ts(4097), 4097);
  assert.equal(idx.text(10)?.dataLen, 2);
});

test('padding a reservation block after a crash allocates no slots', () => {
  const idx = new SeqIndex();
  for (let s = 1; s <= 10; s++) idx.put(s, s, 1, 0, s, 64, 0, undefined);
  idx.pad(1034);
  const chunks = (idx as unknown as { chunks: { cap: number }[] }).chunks;
  assert.deepEqual(chunks.map((c) => c.cap), [16], 'still the 16 slots of the ten records');
  assert.equal(idx.last, 1034);
  assert.equal(idx.state(500), SlotState.EMPTY);
  idx.put(1035, 1, 1, 0, 1, 64, 0, undefined);
  assert.equal(idx.state(1035), SlotState.LIVE);
  assert.equal(idx.state(1034), SlotState.EMPTY);
});
