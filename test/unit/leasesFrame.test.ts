// The LEASES frame codec (src/format/leasesFrame.ts; docs/FORMAT.md "Frames" frame type 9,
// docs/QUEUES.md "Durability and restarts"):
// - encodeLeases / decodeLeases round-trip every event kind (claimed, extended, released) with
//   and without the /work flag, nodes with multi-byte UTF-8 and the empty node, and the extreme
//   counters a live server can reach (lease counter near 2^40, seq and deadline near 2^53 - 1,
//   epoch and rand across the whole u32 range);
// - a fast-check property: random event lists round-trip exactly, and the frame probes ok with
//   type LEASES, the topic id and an 8-byte aligned size;
// - a body cut short (every shorter length, as a frame view and as a re-sealed frame with a valid
//   CRC) makes decodeLeases throw, never return fewer or different events;
// - probeFrame refuses a LEASES frame with any single flipped byte (CRC, docs/ARCHITECTURE.md "Invariants" item 9).
// That `spool wal-dump` names the LEASES events a real server wrote: test/cli/walDump.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeLeases, encodeLeases, type LeaseEvent } from '../../src/format/leasesFrame.js';
import { frameSize, probeFrame, sealFrame, type FrameView } from '../../src/format/frame.js';
import {
  FRAME_ALIGN,
  FRAME_HEADER_BYTES,
  FrameType,
  LEASE_EVENT_BYTES,
  LEASES_HEAD_BYTES,
  LeaseEventKind,
} from '../../src/format/constants.js';

const MAX_SAFE = Number.MAX_SAFE_INTEGER; // 2^53 - 1
const U32_MAX = 0xffff_ffff;

function ev(over: Partial<LeaseEvent> = {}): LeaseEvent {
  return {
    kind: LeaseEventKind.CLAIMED,
    seq: 1,
    atMs: 1_767_225_600_000,
    deliveries: 1,
    epoch: 1,
    no: 1,
    rand: 0x1234_5678,
    viaWork: false,
    node: 'w-1',
    ...over,
  };
}

/** Encodes, probes (CRC and all) and decodes; checks the frame envelope on the way. */
function roundTrip(events: readonly LeaseEvent[], topicId = 0x0100_0002): LeaseEvent[] {
  const buf = encodeLeases(topicId, events);
  assert.equal(buf.length % FRAME_ALIGN, 0, 'frames are 8-byte aligned');
  const nodeBytes = events.reduce((s, e) => s + Buffer.byteLength(e.node, 'utf8'), 0);
  assert.equal(buf.length, frameSize(LEASES_HEAD_BYTES + events.length * LEASE_EVENT_BYTES + nodeBytes), 'frame size');
  const p = probeFrame(buf, 0, buf.length);
  assert.ok(p.ok, `the frame probes ok (${p.ok ? '' : p.reason})`);
  assert.equal(p.frame.type, FrameType.LEASES);
  assert.equal(p.frame.topicId, topicId);
  assert.equal(p.frame.size, buf.length);
  return decodeLeases(buf, p.frame);
}

test('every event kind, with and without the /work flag, round-trips exactly', () => {
  const events: LeaseEvent[] = [];
  let seq = 1;
  for (const kind of [LeaseEventKind.CLAIMED, LeaseEventKind.EXTENDED, LeaseEventKind.RELEASED]) {
    for (const viaWork of [false, true]) {
      events.push(
        ev({
          kind,
          viaWork,
          seq: seq++,
          deliveries: kind === LeaseEventKind.CLAIMED ? 3 : 0,
          node: kind === LeaseEventKind.CLAIMED ? `node-${seq}` : '',
        }),
      );
    }
  }
  // released with a nack delay (atMs = ready-at) and at once (atMs 0)
  events.push(ev({ kind: LeaseEventKind.RELEASED, atMs: 0, node: '', deliveries: 0 }));
  assert.deepEqual(roundTrip(events), events);
  // one event at a time too (no dependence on neighbours)
  for (const e of events) assert.deepEqual(roundTrip([e]), [e]);
  // an empty pass is a valid (empty) frame
  assert.deepEqual(roundTrip([]), []);
});

test('nodes: multi-byte UTF-8 (2, 3 and 4 bytes), the empty node, the 128-byte maximum', () => {
  const nodes = ['é', 'ü-wörker', '工作者-七', '🦀🚀', 'a\u0000b', 'x'.repeat(128), '€'.repeat(42) + 'xy', ''];
  for (const n of nodes) assert.ok(Buffer.byteLength(n) <= 128, n);
  const events = nodes.map((node, i) => ev({ seq: i + 1, node }));
  const back = roundTrip(events);
  assert.deepEqual(back, events);
  assert.deepEqual(
    back.map((e) => Buffer.byteLength(e.node)),
    nodes.map((n) => Buffer.byteLength(n)),
  );
  // the node length is in bytes: a 4-byte character followed by another event decodes cleanly
  assert.deepEqual(
    roundTrip([ev({ node: '🦀' }), ev({ node: 'next', seq: 2 })]).map((e) => e.node),
    ['🦀', 'next'],
  );
});

test('extreme counters: lease counter near 2^40, seq and deadline near 2^53 - 1, u32 extremes', () => {
  const cases: LeaseEvent[] = [
    ev({ no: 2 ** 40 - 1, epoch: 0xff_ffff, rand: U32_MAX }),
    ev({ no: 2 ** 40, epoch: 2 ** 24, rand: 0 }),
    ev({ no: MAX_SAFE, seq: MAX_SAFE, atMs: MAX_SAFE }),
    ev({ seq: MAX_SAFE - 1, atMs: 2 ** 32, deliveries: U32_MAX, epoch: U32_MAX }),
    ev({ seq: 2 ** 32 - 1, atMs: 2 ** 32 + 1, no: 2 ** 32 }),
    ev({ seq: 0, atMs: 0, deliveries: 0, epoch: 0, no: 0, rand: 0, node: '' }),
    ev({ kind: LeaseEventKind.RELEASED, atMs: 8_640_000_000_000, node: '' }), // year 275760
  ];
  assert.deepEqual(roundTrip(cases), cases);
});

const eventArb: fc.Arbitrary<LeaseEvent> = fc
  .record({
    kind: fc.constantFrom(LeaseEventKind.CLAIMED, LeaseEventKind.EXTENDED, LeaseEventKind.RELEASED),
    seq: fc.oneof(fc.maxSafeNat(), fc.integer({ min: MAX_SAFE - 1000, max: MAX_SAFE }), fc.nat(1_000_000)),
    atMs: fc.oneof(fc.constant(0), fc.maxSafeNat(), fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 })),
    deliveries: fc.nat({ max: U32_MAX }),
    epoch: fc.nat({ max: U32_MAX }),
    no: fc.oneof(fc.maxSafeNat(), fc.integer({ min: 2 ** 40 - 1000, max: 2 ** 40 + 1000 })),
    rand: fc.nat({ max: U32_MAX }),
    viaWork: fc.boolean(),
    node: fc.oneof(fc.constant(''), fc.string({ unit: 'binary', maxLength: 32 }), fc.string({ unit: 'grapheme', maxLength: 20 })),
  })
  .map((e) => ({ ...e })); // plain objects (fc.record's have a null prototype)

test('property: random event lists round-trip exactly', () => {
  fc.assert(
    fc.property(fc.array(eventArb, { maxLength: 40 }), fc.maxSafeNat(), (events, topicId) => {
      assert.deepEqual(roundTrip(events, topicId), events);
    }),
    { numRuns: 500 },
  );
});

/** A frame view of `buf` whose body is only `bodyLen` bytes long. */
function cutView(buf: Buffer, bodyLen: number): FrameView {
  const p = probeFrame(buf, 0, buf.length);
  assert.ok(p.ok);
  return { ...p.frame, bodyLen };
}

/** The frame re-sealed with only the first `bodyLen` bytes of its body: a valid CRC over a short body. */
function resealed(buf: Buffer, topicId: number, bodyLen: number): Buffer {
  const out = Buffer.alloc(frameSize(bodyLen));
  buf.copy(out, FRAME_HEADER_BYTES, FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + bodyLen);
  sealFrame(out, 0, FrameType.LEASES, 0, topicId, bodyLen);
  return out;
}

test('a body cut short throws at every shorter length (never fewer or garbled events)', () => {
  const events = [
    ev({ node: 'wörker-1' }),
    ev({ kind: LeaseEventKind.EXTENDED, seq: 2, node: '' }),
    ev({ seq: 3, node: '🦀', viaWork: true }),
  ];
  const buf = encodeLeases(7, events);
  const full = probeFrame(buf, 0, buf.length);
  assert.ok(full.ok);
  const bodyLen = full.frame.bodyLen;
  assert.deepEqual(decodeLeases(buf, full.frame), events);
  for (let len = 0; len < bodyLen; len++) {
    assert.throws(() => decodeLeases(buf, cutView(buf, len)), `frame view with body ${len} of ${bodyLen} bytes`);
    const short = resealed(buf, 7, len);
    const p = probeFrame(short, 0, short.length);
    assert.ok(p.ok, `re-sealed ${len}-byte body probes ok (${p.ok ? '' : p.reason})`);
    assert.throws(() => decodeLeases(short, p.frame), `re-sealed frame with body ${len} of ${bodyLen} bytes`);
  }
});

test('property: cutting any random non-empty event list short throws', () => {
  fc.assert(
    fc.property(
      fc.array(eventArb, { minLength: 1, maxLength: 8 }),
      fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
      (events, frac) => {
        const buf = encodeLeases(1, events);
        const p = probeFrame(buf, 0, buf.length);
        assert.ok(p.ok);
        const len = Math.floor(frac * p.frame.bodyLen);
        const short = resealed(buf, 1, len);
        const q = probeFrame(short, 0, short.length);
        assert.ok(q.ok);
        assert.throws(() => decodeLeases(short, q.frame));
      },
    ),
    { numRuns: 300 },
  );
});

test('probeFrame refuses a LEASES frame with any single flipped byte', () => {
  const events = [ev({ node: 'w-é' }), ev({ kind: LeaseEventKind.RELEASED, seq: 9, atMs: 0, node: '', viaWork: true })];
  const buf = encodeLeases(0x0200_0001, events);
  const p = probeFrame(buf, 0, buf.length);
  assert.ok(p.ok);
  const end = FRAME_HEADER_BYTES + p.frame.bodyLen; // prefix, topic id and body: what the CRC covers (not the padding)
  for (let i = 0; i < end; i++) {
    for (const mask of [0x01, 0x80, 0xff]) {
      const bad = Buffer.from(buf);
      bad[i]! ^= mask;
      const q = probeFrame(bad, 0, bad.length);
      assert.equal(q.ok, false, `byte ${i} ^ 0x${mask.toString(16)} still probes ok`);
      // whatever the reason, it is never a frame: length, type, short or crc
      if (!q.ok) assert.ok(['crc', 'length', 'type', 'short', 'end'].includes(q.reason), q.reason);
    }
  }
  // a flipped byte inside the body (past the header fields) is caught by the CRC specifically
  for (let i = FRAME_HEADER_BYTES; i < end; i++) {
    const bad = Buffer.from(buf);
    bad[i]! ^= 0x10;
    const q = probeFrame(bad, 0, bad.length);
    assert.deepEqual(q, { ok: false, reason: 'crc' }, `body byte ${i}`);
  }
});
