// WAL frame codec (src/format/frame.ts, src/format/constants.ts): round trips of every encoder, and the
// invariant that torn or damaged bytes never decode as data (docs/FORMAT.md "Frames"; docs/ARCHITECTURE.md "Invariants" 2 and 9):
// a frame probes ok only when its length, type, version and CRC all hold, so a flipped bit, a
// truncation or an overwritten range yields "no frame here", never different content.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  alignUp,
  appendBodySize,
  appendRecordsOf,
  decodeJsonBody,
  encodeAppend,
  encodeJsonFrame,
  encodeSeqReserve,
  encodeTopicCreate,
  forEachAppendRecord,
  frameSize,
  probeFrame,
  readAppendHead,
  readU64,
  writeU64,
  type AppendRecordInput,
  type FrameView,
} from '../../src/format/frame.js';
import {
  APPEND_HEAD_BYTES,
  FRAME_ALIGN,
  FRAME_BODY_MAX_BYTES,
  FRAME_BODY_VERSION,
  FRAME_HEADER_BYTES,
  FRAME_PREFIX_BYTES,
  FrameFlag,
  FrameType,
  type FrameTypeCode,
} from '../../src/format/constants.js';
import { encodeLeases } from '../../src/format/leasesFrame.js';

// ---- helpers -------------------------------------------------------------------------------

interface RecSpec {
  node?: string;
  tag?: string;
  meta?: string;
  data: string;
}

function input(r: RecSpec): AppendRecordInput {
  const meta = r.meta === undefined ? undefined : Buffer.from(r.meta, 'utf8');
  const data = Buffer.from(r.data, 'utf8');
  return {
    nodeLit: r.node === undefined ? undefined : Buffer.from(JSON.stringify(r.node), 'utf8'),
    tagLit: r.tag === undefined ? undefined : Buffer.from(JSON.stringify(r.tag), 'utf8'),
    metaLen: meta ? meta.length : -1,
    dataLen: data.length,
    writeMeta: (dst, off) => void meta!.copy(dst, off),
    writeData: (dst, off) => void data.copy(dst, off),
  };
}

function probeOk(buf: Buffer, off = 0, end = buf.length): FrameView {
  const p = probeFrame(buf, off, end);
  if (!p.ok) assert.fail(`expected a valid frame at ${off}, got ${p.reason}`);
  return p.frame;
}

interface DecodedRecord {
  node?: string;
  tag?: string;
  meta?: string;
  data: string;
}

interface DecodedAppend {
  topicId: number;
  flags: number;
  firstSeq: number;
  tsMs: number;
  idemKey: string | undefined;
  records: DecodedRecord[];
}

function decodeAppend(buf: Buffer, f: FrameView): DecodedAppend {
  assert.equal(f.type, FrameType.APPEND);
  const head = readAppendHead(buf, f);
  const records: DecodedRecord[] = [];
  forEachAppendRecord(buf, f, head, (i, r) => {
    assert.equal(i, records.length);
    const rec: DecodedRecord = { data: buf.toString('utf8', r.dataOff, r.dataOff + r.dataLen) };
    if (r.nodeLen > 0) rec.node = JSON.parse(buf.toString('utf8', r.nodeOff, r.nodeOff + r.nodeLen)) as string;
    if (r.tagLen > 0) rec.tag = JSON.parse(buf.toString('utf8', r.tagOff, r.tagOff + r.tagLen)) as string;
    if (r.metaLen >= 0) rec.meta = buf.toString('utf8', r.metaOff, r.metaOff + r.metaLen);
    records.push(rec);
  });
  assert.equal(records.length, head.count);
  return { topicId: f.topicId, flags: f.flags, firstSeq: head.firstSeq, tsMs: head.tsMs, idemKey: head.idemKey, records };
}

/** Everything a frame means: header fields and the exact body bytes (padding excluded). */
function content(buf: Buffer, f: FrameView): string {
  return `${f.type}/${f.flags}/${f.topicId}/${f.bodyLen}/${buf.subarray(f.bodyOff, f.bodyOff + f.bodyLen).toString('hex')}`;
}

// ---- arbitraries ---------------------------------------------------------------------------

const arbTopicId = fc.integer({ min: 0, max: 2 ** 48 - 1 });
const arbU53 = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
const arbText = fc.string({ unit: 'grapheme', maxLength: 24 });
const arbRec: fc.Arbitrary<RecSpec> = fc.record(
  {
    node: fc.string({ minLength: 1, maxLength: 12 }),
    tag: arbText,
    meta: fc.json({ maxDepth: 2 }).map((j) => `{"m":${j}}`),
    data: fc.json({ maxDepth: 3 }),
  },
  { requiredKeys: ['data'] },
);
const arbAppend = fc.record({
  topicId: arbTopicId,
  firstSeq: fc.integer({ min: 1, max: 2 ** 52 }),
  tsMs: arbU53,
  idemKey: fc.option(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }), { nil: undefined }),
  records: fc.array(arbRec, { minLength: 1, maxLength: 8 }),
  flags: fc.constantFrom(0, FrameFlag.NEEDS_DURABLE),
});

/** A random frame of any encoder, as bytes. */
const arbFrame: fc.Arbitrary<Buffer> = fc.oneof(
  arbAppend.map((a) =>
    encodeAppend(
      a.topicId,
      a.firstSeq,
      a.tsMs,
      a.idemKey === undefined ? undefined : Buffer.from(a.idemKey, 'utf8'),
      a.records.map(input),
      a.flags,
    ),
  ),
  fc
    .record({
      type: fc.constantFrom<FrameTypeCode>(FrameType.TOPIC_CREATE, FrameType.TOPIC_CONFIG, FrameType.TOPIC_DELETE, FrameType.BOOT),
      id: arbTopicId,
      body: fc.json({ maxDepth: 3 }),
    })
    .map((j) => encodeJsonFrame(j.type, j.id, JSON.parse(j.body))),
  fc.record({ id: arbTopicId, ceiling: arbU53 }).map((s) => encodeSeqReserve(s.id, s.ceiling)),
);

// ---- round trips ---------------------------------------------------------------------------

test('u64 helpers round-trip values below 2^53', () => {
  const b = Buffer.alloc(16);
  for (const v of [0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 48 - 1, Number.MAX_SAFE_INTEGER]) {
    writeU64(b, 4, v);
    assert.equal(readU64(b, 4), v);
    assert.equal(readU64(new Uint8Array(b.buffer, b.byteOffset, b.byteLength), 4), v);
  }
});

test('encodeAppend / readAppendHead / forEachAppendRecord round trip (fixed example)', () => {
  const recs: RecSpec[] = [
    { data: '1e400' },
    { data: '{"id":"a","v":12345678901234567890}', node: 'n1', tag: 't\u00e9g', meta: '{"a":1.50}' },
    { data: '"\\u00e9"', meta: '{}' },
    { data: 'null', node: 'x' },
  ];
  const key = Buffer.from('idem-\u2713', 'utf8');
  const buf = encodeAppend(0x1234_5678_9abc, 2 ** 40 + 7, 1767225600123, key, recs.map(input), FrameFlag.NEEDS_DURABLE);
  assert.equal(buf.length % FRAME_ALIGN, 0);
  assert.equal(buf.length, frameSize(appendBodySize(key, appendRecordsOf(recs.map(input)))));
  const f = probeOk(buf);
  assert.equal(f.size, buf.length);
  assert.equal(f.bodyOff, FRAME_HEADER_BYTES);
  assert.equal(f.bodyLen, appendBodySize(key, appendRecordsOf(recs.map(input))));
  const d = decodeAppend(buf, f);
  assert.deepEqual(d, {
    topicId: 0x1234_5678_9abc,
    flags: FrameFlag.NEEDS_DURABLE,
    firstSeq: 2 ** 40 + 7,
    tsMs: 1767225600123,
    idemKey: 'idem-\u2713',
    records: recs,
  });
  assert.equal(readAppendHead(buf, f).recordsOff, FRAME_HEADER_BYTES + APPEND_HEAD_BYTES + key.length);
  // Padding is zero.
  for (let i = FRAME_PREFIX_BYTES + 8 + f.bodyLen; i < buf.length; i++) assert.equal(buf[i], 0);
});

test('encodeAppend round trip (property)', () => {
  fc.assert(
    fc.property(arbAppend, (a) => {
      const buf = encodeAppend(
        a.topicId,
        a.firstSeq,
        a.tsMs,
        a.idemKey === undefined ? undefined : Buffer.from(a.idemKey, 'utf8'),
        a.records.map(input),
        a.flags,
      );
      assert.equal(buf.length % FRAME_ALIGN, 0);
      const f = probeOk(buf);
      assert.equal(f.size, buf.length);
      const d = decodeAppend(buf, f);
      assert.deepEqual(d, {
        topicId: a.topicId,
        flags: a.flags,
        firstSeq: a.firstSeq,
        tsMs: a.tsMs,
        idemKey: a.idemKey,
        records: a.records.map((r) => ({ ...r })),
      });
    }),
    { numRuns: 300 },
  );
});

test('encodeTopicCreate writes the bytes encodeJsonFrame writes for {name, config, created_ms}', () => {
  // Frozen configs have their text cached: the same config twice, and a fresh one, must agree.
  const frozen = Object.freeze({ durability: 'disk', cap_records: null, n: 1.5 });
  fc.assert(
    // Topic names (ASCII) take the byte-writing path with a frozen config; any other name, the string path.
    fc.property(
      arbTopicId,
      fc.oneof(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,40}$/), fc.string({ unit: 'grapheme', maxLength: 40 })),
      fc.constantFrom<object>(frozen, { durability: 'fsync', ttl_ms: 5 }),
      fc.oneof(fc.nat(), fc.constantFrom(0, 1767225600000, 2 ** 53 - 1)),
      (id, name, config, ms) => {
        const want = encodeJsonFrame(FrameType.TOPIC_CREATE, id, { name, config, created_ms: ms });
        assert.deepEqual(encodeTopicCreate(id, name, config, ms), want);
        assert.deepEqual(encodeTopicCreate(id, name, config, ms), want);
      },
    ),
    { numRuns: 300 },
  );
});

test('encodeJsonFrame round trip', () => {
  const body = { name: 'orders', config: { durability: 'fsync', n: 1.5 }, created_ms: 1767225600000, s: '\u00e9\u2713' };
  const buf = encodeJsonFrame(FrameType.TOPIC_CREATE, 77, body, FrameFlag.NEEDS_DURABLE);
  const f = probeOk(buf);
  assert.equal(f.type, FrameType.TOPIC_CREATE);
  assert.equal(f.flags, FrameFlag.NEEDS_DURABLE);
  assert.equal(f.topicId, 77);
  assert.equal(f.size, buf.length);
  assert.deepEqual(decodeJsonBody(buf, f), body);
  fc.assert(
    fc.property(
      fc.constantFrom<FrameTypeCode>(FrameType.BOOT, FrameType.TOPIC_CONFIG, FrameType.TOPIC_DELETE),
      arbTopicId,
      fc.jsonValue(),
      (type, id, v) => {
        const b = encodeJsonFrame(type, id, v);
        const g = probeOk(b);
        assert.equal(g.type, type);
        assert.equal(g.topicId, id);
        assert.deepEqual(decodeJsonBody(b, g), JSON.parse(JSON.stringify(v)));
      },
    ),
    { numRuns: 200 },
  );
});

test('encodeSeqReserve round trip', () => {
  for (const [id, ceiling] of [
    [1, 0],
    [2 ** 48 - 1, 1024],
    [5, Number.MAX_SAFE_INTEGER],
  ] as const) {
    const buf = encodeSeqReserve(id, ceiling);
    assert.equal(buf.length, 32);
    const f = probeOk(buf);
    assert.equal(f.type, FrameType.SEQ_RESERVE);
    assert.equal(f.topicId, id);
    assert.equal(f.bodyLen, 8);
    assert.equal(readU64(buf, f.bodyOff), ceiling);
  }
});

test('frames concatenate: probing walks a buffer of several frames in order', () => {
  fc.assert(
    fc.property(fc.array(arbFrame, { minLength: 1, maxLength: 6 }), (frames) => {
      const all = Buffer.concat([...frames, Buffer.alloc(40)]);
      let off = 0;
      for (const fr of frames) {
        const f = probeOk(all, off);
        assert.equal(f.size, fr.length);
        assert.equal(content(all, f), content(fr, probeOk(fr)));
        off += f.size;
      }
      const end = probeFrame(all, off, all.length);
      assert.deepEqual(end, { ok: false, reason: 'end' });
    }),
    { numRuns: 100 },
  );
});

// ---- damage never decodes as different data ------------------------------------------------

test('flipping any single bit never yields a valid frame with different content', () => {
  fc.assert(
    fc.property(arbFrame, (orig) => {
      const want = content(orig, probeOk(orig));
      const bodyEnd = FRAME_PREFIX_BYTES + orig.readUInt32LE(0);
      const buf = Buffer.from(orig);
      for (let byte = 0; byte < buf.length; byte++) {
        for (let bit = 0; bit < 8; bit++) {
          buf[byte] = buf[byte]! ^ (1 << bit);
          const p = probeFrame(buf, 0, buf.length);
          if (p.ok) {
            // Only the zero padding after the body is outside the CRC; a flip there changes nothing.
            assert.ok(byte >= bodyEnd, `bit ${bit} of byte ${byte} flipped (body ends at ${bodyEnd}) and the frame still probes ok`);
            assert.equal(content(buf, p.frame), want);
          }
          buf[byte] = orig[byte]!;
        }
      }
    }),
    { numRuns: 120 },
  );
});

test('truncating a frame at any byte offset is never ok before the body ends', () => {
  fc.assert(
    fc.property(arbFrame, (orig) => {
      const f = probeOk(orig);
      const want = content(orig, f);
      const bodyEnd = FRAME_PREFIX_BYTES + 8 + f.bodyLen;
      for (let k = 0; k < orig.length; k++) {
        // Truncation as a shorter buffer, and as a shorter readable end inside a longer one.
        for (const p of [probeFrame(orig.subarray(0, k), 0, k), probeFrame(orig, 0, k)]) {
          if (k < bodyEnd) {
            assert.equal(p.ok, false, `truncated at ${k} of ${orig.length} but probed ok`);
            if (!p.ok) {
              if (k >= FRAME_PREFIX_BYTES) assert.equal(p.reason, 'short', `truncated at ${k}`);
              else assert.ok(p.reason === 'short' || p.reason === 'end', `truncated at ${k}: ${p.reason}`);
            }
          } else if (p.ok) {
            // Only padding was cut: the body is whole and identical.
            assert.equal(content(orig, p.frame), want);
          }
        }
      }
    }),
    { numRuns: 150 },
  );
});

test('overwriting a random range never yields a valid frame with different content', () => {
  fc.assert(
    fc.property(
      arbFrame.chain((orig) =>
        fc.tuple(
          fc.constant(orig),
          fc
            .integer({ min: 0, max: orig.length - 1 })
            .chain((start) => fc.tuple(fc.constant(start), fc.uint8Array({ minLength: 1, maxLength: orig.length - start }))),
        ),
      ),
      ([orig, [start, bytes]]) => {
        const want = content(orig, probeOk(orig));
        const buf = Buffer.from(orig);
        buf.set(bytes, start);
        const p = probeFrame(buf, 0, buf.length);
        if (p.ok) assert.equal(content(buf, p.frame), want, `overwrite at ${start}+${bytes.length} decoded as different content`);
        // The same damage inside a longer log (room to read past the frame).
        const log = Buffer.concat([buf, Buffer.alloc(64)]);
        const q = probeFrame(log, 0, log.length);
        if (q.ok) assert.equal(content(log, q.frame), want);
      },
    ),
    { numRuns: 2000 },
  );
});

test('random bytes almost never probe ok, and never crash the prober', () => {
  let ok = 0;
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 0, maxLength: 200 }), fc.nat(), (bytes, o) => {
      const buf = Buffer.from(bytes);
      const off = buf.length === 0 ? 0 : o % buf.length;
      const p = probeFrame(buf, off, buf.length);
      if (p.ok) ok++;
    }),
    { numRuns: 3000 },
  );
  assert.equal(ok, 0);
});

// ---- special prefixes ----------------------------------------------------------------------

test("probeFrame on zeros, or at/after the end, returns 'end'", () => {
  const zeros = Buffer.alloc(256);
  for (const [off, end] of [
    [0, 256],
    [8, 256],
    [248, 256],
    [250, 256],
    [256, 256],
    [0, 0],
    [0, 10],
  ] as const) {
    assert.deepEqual(probeFrame(zeros, off, end), { ok: false, reason: 'end' }, `zeros [${off}, ${end})`);
  }
  // A frame followed by zeros: the frame, then 'end'.
  const fr = encodeSeqReserve(3, 99);
  const log = Buffer.concat([fr, Buffer.alloc(100)]);
  assert.equal(probeOk(log).size, fr.length);
  assert.deepEqual(probeFrame(log, fr.length, log.length), { ok: false, reason: 'end' });
});

test('a bodyLen above the cap (or below the topic id) is rejected as length, before reading further', () => {
  // Only the 16-byte prefix exists: the decision must come from the length field alone.
  for (const bodyLen of [FRAME_BODY_MAX_BYTES + 9, FRAME_BODY_MAX_BYTES + 4096, 0x7fff_ffff, 0xffff_ffff]) {
    const b = Buffer.alloc(FRAME_HEADER_BYTES);
    b.writeUInt32LE(bodyLen, 0);
    b.writeUInt8(FrameType.APPEND, 8);
    b.writeUInt16LE(FRAME_BODY_VERSION, 10);
    const before = process.memoryUsage().arrayBuffers;
    const p = probeFrame(b, 0, b.length);
    assert.deepEqual(p, { ok: false, reason: 'length' }, `bodyLen ${bodyLen}`);
    // No allocation proportional to the claimed length (tolerance: 1 MiB of unrelated noise).
    assert.ok(process.memoryUsage().arrayBuffers - before < 1 << 20);
  }
  for (const bodyLen of [1, 7]) {
    const b = Buffer.alloc(64);
    b.writeUInt32LE(bodyLen, 0);
    assert.deepEqual(probeFrame(b, 0, b.length), { ok: false, reason: 'length' }, `bodyLen ${bodyLen}`);
  }
  // Exactly at the cap is a plausible length: with the bytes missing it is 'short', not 'length'.
  const atCap = Buffer.alloc(FRAME_HEADER_BYTES);
  atCap.writeUInt32LE(FRAME_BODY_MAX_BYTES + 8, 0);
  atCap.writeUInt8(FrameType.APPEND, 8);
  atCap.writeUInt16LE(FRAME_BODY_VERSION, 10);
  assert.deepEqual(probeFrame(atCap, 0, atCap.length), { ok: false, reason: 'short' });
});

test('unknown frame type or body version is rejected as type', () => {
  const good = encodeSeqReserve(9, 1000);
  for (const type of [0, 200, 255]) {
    const b = Buffer.from(good);
    b.writeUInt8(type, 8);
    assert.deepEqual(probeFrame(b, 0, b.length), { ok: false, reason: 'type' });
  }
  const v = Buffer.from(good);
  v.writeUInt16LE(FRAME_BODY_VERSION + 1, 10);
  assert.deepEqual(probeFrame(v, 0, v.length), { ok: false, reason: 'type' });
  const c = Buffer.from(good);
  c.writeUInt32LE((c.readUInt32LE(4) ^ 1) >>> 0, 4);
  assert.deepEqual(probeFrame(c, 0, c.length), { ok: false, reason: 'crc' });
});

test('frame sizes are 8-byte aligned', () => {
  for (let n = 0; n < 40; n++) {
    assert.equal(frameSize(n), alignUp(FRAME_HEADER_BYTES + n));
    assert.equal(frameSize(n) % FRAME_ALIGN, 0);
    assert.ok(frameSize(n) - (FRAME_HEADER_BYTES + n) < FRAME_ALIGN);
  }
});

test('small frames come from the shared pool and write every byte: pool garbage never reaches a frame', () => {
  // Each encoder runs twice, with the rest of Node's current pool (where the next small
  // allocUnsafe slices from) set to 0x00 and then to 0xff; the frames must be identical (a byte
  // the encoder left unwritten would differ).
  const poison = (v: number): ArrayBufferLike => {
    let probe = Buffer.allocUnsafe(8);
    const rest = probe.buffer.byteLength - (probe.byteOffset + 8);
    if (rest < 2048) {
      Buffer.allocUnsafe(rest + 8); // does not fit: Node starts a fresh pool with it
      probe = Buffer.allocUnsafe(8);
    }
    new Uint8Array(probe.buffer, probe.byteOffset + 8).fill(v);
    return probe.buffer;
  };
  // The append encoder's inputs are made first: their own buffers come from the pool too.
  const appendKey = Buffer.from('idem-\u2713', 'utf8');
  const appendRecords = [{ data: '{"a":1}', node: 'n1', tag: 'tg', meta: '{"m":2}' }, { data: '"odd length"' }].map(input);
  const encoders: [string, () => Buffer][] = [
    ['json', () => encodeJsonFrame(FrameType.DELETE, 7, { seqs: [1, 2, 3], reason: 'ack' })],
    ['seq reserve', () => encodeSeqReserve(9, 123456789)],
    ['topic create', () => encodeTopicCreate(3, 'jobs', Object.freeze({ durability: 'disk' }), 1_700_000_000_000)],
    ['topic create, slow path', () => encodeTopicCreate(3, 'jöbs', { durability: 'disk' }, 1_700_000_000_000)],
    [
      'append, pooled',
      () => encodeAppend(11, 2 ** 40 + 7, 1767225600123, appendKey, appendRecords, 0, undefined, undefined, undefined, true),
    ],
    [
      'leases',
      () =>
        encodeLeases(5, [
          { kind: 1, seq: 10, atMs: 99, deliveries: 1, epoch: 2, no: 3, rand: 4, viaWork: false, node: 'w1' },
          { kind: 3, seq: 11, atMs: 0, deliveries: 2, epoch: 2, no: 5, rand: 6, viaWork: true, node: '' },
        ]),
    ],
  ];
  for (const [name, encode] of encoders) {
    const zeroed = poison(0x00);
    const a = encode();
    assert.equal(a.buffer, zeroed, `${name}: a slice of the pool`);
    const saved = Buffer.from(a);
    const filled = poison(0xff);
    const b = encode();
    assert.equal(b.buffer, filled, `${name}: a slice of the pool`);
    assert.deepEqual(b, saved, `${name}: same bytes over a poisoned pool`);
  }
  // Unpooled (an ephemeral topic's frames, and every big one), an APPEND frame owns its buffer.
  const own = encodeAppend(11, 1, 1, undefined, [{ data: '1' }].map(input));
  assert.equal(own.byteOffset, 0);
  assert.equal(own.buffer.byteLength, own.length);
});
