// Unit tests of the router parts (docs/ARCHITECTURE.md "Routers"): the graph rules (docs/API.md "Routers" cycle path, fan-in, upstream
// drain order), the filter (delete match language), provenance runs and trim markers, the
// applied table, the APPEND frame's forward header round trip, and the copy section's bytes
// (the record section the dest would frame from the equivalent JSON body, `_spool_router` last
// in meta, preserve_* honoured) and its limit checks on the dest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cycleThrough, fanInConflict, longestChainThrough, upstreamOrder, type Edge } from '../../src/supervisor/routerGraph.js';
import { filterTuple, passesFilter } from '../../src/actors/router/filter.js';
import { Provenance } from '../../src/actors/router/provenance.js';
import { AppliedTable } from '../../src/actors/router/appliedTable.js';
import { CopySection, storedWhole } from '../../src/actors/router/copySection.js';
import { bufferView } from '../../src/format/frame.js';
import { scanCopySection } from '../../src/actors/router/copyLimits.js';
import { CorruptionError } from '../../src/core/corruption.js';
import {
  appendSectionHeadBytes,
  encodeAppend,
  frameAppendSection,
  probeFrame,
  readAppendHead,
  forEachAppendRecord,
  headOffOf,
  type AppendRecordInput,
} from '../../src/format/frame.js';
import { RecordText } from '../../src/actors/topic/recordText.js';
import type { RouterDef } from '../../src/protocol/messages/router.js';

const e = (name: string, source: string, dest: string): Edge => ({ name, source, dest });

test('cycle path: the new source, then the shortest path from its dest back to it (docs/API.md "Routers" example)', () => {
  const edges = [e('r1', 'a', 'b'), e('r2', 'b', 'c')];
  assert.deepEqual(cycleThrough(edges, 'c', 'a'), ['c', 'a', 'b', 'c']);
  assert.deepEqual(cycleThrough(edges, 'b', 'a'), ['b', 'a', 'b']);
  assert.equal(cycleThrough(edges, 'a', 'c'), null);
  assert.equal(cycleThrough(edges, 'x', 'y'), null);
  // A router being updated (allow_cycle turned off) is judged against the others.
  assert.deepEqual(cycleThrough([...edges, e('r3', 'c', 'a')], 'c', 'a', 'r3'), ['c', 'a', 'b', 'c']);
  assert.deepEqual(cycleThrough([e('1', 'a', 'b'), e('2', 'b', 'c'), e('3', 'c', 'd'), e('4', 'b', 'd')], 'd', 'a'), ['d', 'a', 'b', 'd']);
});

test('longest chain through a new router: up the one chain into its source, the longest way on from its dest', () => {
  const chain = (n: number, p = 't') => Array.from({ length: n }, (_, i) => e(`r${p}${i}`, `${p}${i}`, `${p}${i + 1}`));
  // t0 -> ... -> t3 upstream, a new t3 -> u0, u0 -> u1 -> u2 and a longer branch u0 -> v1 -> v2 -> v3.
  const edges = [...chain(3), e('a', 'u0', 'u1'), e('b', 'u1', 'u2'), e('c', 'u0', 'v1'), e('d', 'v1', 'v2'), e('f', 'v2', 'v3')];
  assert.deepEqual(longestChainThrough(edges, 't3', 'u0', 64), ['t0', 't1', 't2', 't3', 'u0', 'v1', 'v2', 'v3']);
  assert.deepEqual(longestChainThrough([], 'a', 'b', 64), ['a', 'b']);
  // Cut off once longer than the limit: 10 routers and the new one, limit 8.
  assert.equal(longestChainThrough(chain(10), 't10', 'x', 8).length, 10);
  // A cycle ends where it meets itself: with a -> b -> c, adding c -> a (allow_cycle), a copy
  // travels two routers at most before the next one would take it back to where it started.
  assert.deepEqual(longestChainThrough([e('1', 'a', 'b'), e('2', 'b', 'c')], 'c', 'a', 64), ['b', 'c', 'a']);
});

test('fan-in: another source into the same dest conflicts; the same source does not', () => {
  const edges = [e('r1', 'a', 'd')];
  assert.equal(fanInConflict(edges, 'a', 'd'), undefined);
  assert.equal(fanInConflict(edges, 'b', 'd')?.name, 'r1');
  assert.equal(fanInConflict(edges, 'b', 'd', 'r1'), undefined);
});

test('upstream drain order: upstream first, cycles cut', () => {
  const edges = [e('ab', 'a', 'b'), e('bc', 'b', 'c'), e('xb', 'x', 'b'), e('cb', 'c', 'b')];
  const into = (t: string) => edges.filter((x) => x.dest === t);
  const order = upstreamOrder(into, 'c').map((x) => x.name);
  assert.ok(order.indexOf('ab') < order.indexOf('bc'));
  assert.ok(order.indexOf('xb') < order.indexOf('bc'));
  assert.equal(new Set(order).size, order.length);
  assert.deepEqual(upstreamOrder(into, 'a'), []);
});

test('filter: Eq, Glob prefix, untagged never matches, null forwards all; tuple echo', () => {
  assert.ok(passesFilter(null, undefined));
  assert.ok(passesFilter({ op: 'Eq', value: 'x' }, 'x'));
  assert.ok(!passesFilter({ op: 'Eq', value: 'x' }, 'xy'));
  assert.ok(passesFilter({ op: 'Glob', value: 'or' }, 'orders'));
  assert.ok(passesFilter({ op: 'Glob', value: '' }, 'anything'));
  assert.ok(!passesFilter({ op: 'Glob', value: '' }, undefined));
  assert.deepEqual(filterTuple({ op: 'Glob', value: 'or' }), ['tag', 'Glob', 'or*']);
  assert.equal(filterTuple(null), null);
});

test('provenance: runs by seq, lookups, trim markers, pruning', () => {
  const p = new Provenance();
  p.add(10, [
    [2, 'a', 1],
    [3, 'b', 2],
  ]);
  p.add(20, [[1, 'a', 3]]);
  p.add(12, [[5, 'z', 9]]); // a replay of an older frame adds nothing
  assert.deepEqual(p.of(10), { origin: 'a', hops: 1 });
  assert.deepEqual(p.of(14), { origin: 'b', hops: 2 });
  assert.equal(p.of(15), undefined);
  assert.deepEqual(p.of(20), { origin: 'a', hops: 3 });
  p.markLost(16, 4);
  assert.ok(p.hasLostIn(15, 16));
  assert.ok(!p.hasLostIn(17, 30));
  p.dropBelow(17);
  assert.equal(p.of(10), undefined);
  assert.equal(p.size, 1);
  // Markers outlive the runs: only the evict floor drops them.
  assert.equal(p.lostAt(16), 4);
  p.dropMarkersBelow(17);
  assert.equal(p.markerCount, 0);
});

test('provenance: trim markers stay sorted, count once, and answer range questions', () => {
  const p = new Provenance();
  p.markLost(30, 2);
  p.markLost(10, 5); // a snapshot's marker, then replayed frames: any order
  p.markLost(20, 1);
  p.markLost(20, 1); // the same marker from its frame and the snapshot
  assert.deepEqual(p.markers(), [
    [10, 5],
    [20, 1],
    [30, 2],
  ]);
  assert.equal(p.lostAt(20), 1);
  assert.equal(p.lostAt(21), undefined);
  assert.equal(p.firstMarkerIn(11, 40), 20);
  assert.equal(p.firstMarkerIn(31, 40), 41);
  assert.equal(p.firstMarkerIn(21, 29), 30);
  assert.equal(p.lostIn(10, 20), 6);
  assert.equal(p.lostIn(11, 19), 0);
  p.dropMarkersBelow(20);
  assert.deepEqual(p.markers(), [
    [20, 1],
    [30, 2],
  ]);
});

test('applied table: progress only moves forward; snapshot part round trip', () => {
  const t = new AppliedTable();
  assert.deepEqual(t.get(1), { srcLast: 0, total: 0 });
  t.note(1, 10, 4);
  t.note(1, 7, 2);
  assert.deepEqual(t.get(1), { srcLast: 10, total: 4 });
  const u = new AppliedTable();
  u.load(t.part());
  assert.deepEqual(u.get(1), { srcLast: 10, total: 4 });
  assert.equal(new AppliedTable().part(), undefined);
});

function rec(data: string, meta?: string, tag?: string, node?: string): AppendRecordInput {
  const d = Buffer.from(data);
  const m = meta === undefined ? undefined : Buffer.from(meta);
  return {
    nodeLit: node === undefined ? undefined : Buffer.from(JSON.stringify(node)),
    tagLit: tag === undefined ? undefined : Buffer.from(JSON.stringify(tag)),
    metaLen: m ? m.length : -1,
    dataLen: d.length,
    writeMeta: (dst, off) => void m?.copy(dst, off),
    writeData: (dst, off) => void d.copy(dst, off),
  };
}

test('APPEND forward header: flag, bytes and records round trip; frames without it read as before', () => {
  const fwd = Buffer.from('{"r":3,"n":"a->b","s":42,"t":7,"o":[[2,"a",1]]}');
  const frame = encodeAppend(9, 5, 1000, Buffer.from('idem'), [rec('1'), rec('"x"', '{"k":1}', 't', 'n')], 0, undefined, fwd);
  const p = probeFrame(frame, 0, frame.length);
  assert.ok(p.ok);
  const head = readAppendHead(frame, p.frame);
  assert.equal(head.idemKey, 'idem');
  assert.deepEqual(head.fwd && JSON.parse(head.fwd.toString()), JSON.parse(fwd.toString()));
  const datas: string[] = [];
  forEachAppendRecord(frame, p.frame, head, (_i, r) => datas.push(frame.toString('utf8', r.dataOff, r.dataOff + r.dataLen)));
  assert.deepEqual(datas, ['1', '"x"']);
  const plain = encodeAppend(9, 5, 1000, undefined, [rec('1')]);
  const q = probeFrame(plain, 0, plain.length);
  assert.ok(q.ok);
  assert.equal(readAppendHead(plain, q.frame).fwd, undefined);
});

/** The record section of an APPEND frame (what a copy section must equal, byte for byte). */
function sectionOf(frame: Buffer): Buffer {
  const p = probeFrame(frame, 0, frame.length);
  assert.ok(p.ok);
  return frame.subarray(readAppendHead(frame, p.frame).recordsOff, p.frame.bodyOff + p.frame.bodyLen);
}

function textsOf(frame: Buffer): RecordText[] {
  const p = probeFrame(frame, 0, frame.length);
  assert.ok(p.ok);
  const texts: RecordText[] = [];
  forEachAppendRecord(frame, p.frame, readAppendHead(frame, p.frame), (_i, r) => texts.push(RecordText.at(frame, headOffOf(r))));
  return texts;
}

const copyDef: RouterDef = {
  name: 'a->b',
  id: 1,
  source: 'a',
  dest: 'b',
  preserveNode: true,
  preserveTag: false,
  filter: null,
  allowCycle: false,
  guarantee: 'exactly_once',
};

function section(def: RouterDef, texts: RecordText[], seqs: number[]): Buffer {
  const b = new CopySection(def, 77);
  seqs.forEach((s, i) => b.add(s, texts[i]!));
  assert.equal(b.count, seqs.length);
  const { body, layout } = b.finish(5);
  assert.equal(layout.count, seqs.length);
  assert.equal(layout.offset, 5);
  assert.equal(body.length, 5 + layout.bytes + 7);
  return body.subarray(layout.offset, layout.offset + layout.bytes);
}

test('copy section: exactly_once stamps `_spool_router` last in meta, stored bytes otherwise, preserve_* honoured', () => {
  const texts = textsOf(encodeAppend(9, 1, 1000, undefined, [rec('{"a":1}', '{"k":1}', 't', 'n'), rec('2'), rec('3', '{}', 't')]));
  const seqs = [1, 2, 3_000_000_000];
  const expected = encodeAppend(9, 5, 2000, undefined, [
    rec('{"a":1}', '{"k":1,"_spool_router":"a->b:77:1"}', undefined, 'n'),
    rec('2', '{"_spool_router":"a->b:77:2"}'),
    rec('3', '{"_spool_router":"a->b:77:3000000000"}'),
  ]);
  assert.deepEqual(section(copyDef, texts, seqs), sectionOf(expected));
  // A router name that JSON escapes, in UTF-8.
  const odd = { ...copyDef, name: 'q"é' };
  const oddExpected = encodeAppend(9, 5, 2000, undefined, [rec('2', `{"_spool_router":${JSON.stringify('q"é:77:2')}}`)]);
  assert.deepEqual(section(odd, [texts[1]!], [2]), sectionOf(oddExpected));
  const plain = { ...copyDef, guarantee: 'at_least_once' as const, preserveNode: false, preserveTag: true };
  const plainExpected = encodeAppend(9, 5, 2000, undefined, [rec('{"a":1}', '{"k":1}', 't'), rec('2'), rec('3', '{}', 't')]);
  assert.deepEqual(section(plain, texts, seqs), sectionOf(plainExpected));
});

test('copy section: records kept whole are copied as runs, a skipped record splits a run', () => {
  const frame = encodeAppend(9, 1, 1000, undefined, [rec('1', '{"k":1}', 't', 'n'), rec('2'), rec('3', undefined, 'u'), rec('4')]);
  const texts = textsOf(frame);
  const whole = { ...copyDef, guarantee: 'at_least_once' as const, preserveNode: true, preserveTag: true };
  assert.deepEqual(section(whole, texts, [1, 2, 3, 4]), sectionOf(frame));
  const some = encodeAppend(9, 1, 1000, undefined, [rec('1', '{"k":1}', 't', 'n'), rec('3', undefined, 'u'), rec('4')]);
  assert.deepEqual(section(whole, [texts[0]!, texts[2]!, texts[3]!], [1, 3, 4]), sectionOf(some));
  // Texts of two frames in one batch.
  const other = textsOf(encodeAppend(9, 5, 1000, undefined, [rec('5', '{"z":2}')]));
  const both = encodeAppend(9, 1, 1000, undefined, [rec('4'), rec('5', '{"z":2}')]);
  assert.deepEqual(section(whole, [texts[3]!, other[0]!], [4, 5]), sectionOf(both));
  assert.equal(scanCopySection(sectionOf(both), 2).bytes, 1 + 1 + 7);
});

/** The frame's bytes `at` bytes into a larger ArrayBuffer (as a pooled or sliced Buffer lies). */
function shifted(frame: Buffer, at: number): Buffer {
  const big = Buffer.alloc(at + frame.length + 9, 0xee);
  frame.copy(big, at);
  return big.subarray(at, at + frame.length);
}

test('copy section heads are read through a view of exactly the buffer, wherever it starts in its ArrayBuffer', () => {
  const records = [rec('1', '{"k":1}', 't', 'n'), rec('"two"'), rec('3', undefined, 'u')];
  const frame = shifted(encodeAppend(9, 1, 1000, undefined, records), 13);
  assert.notEqual(frame.byteOffset, 0);
  const texts = textsOf(frame);
  for (const t of texts) assert.equal(storedWhole(t, bufferView(t.buf)), true);
  // A head that does not match its texts is not whole (the record is then written field by field).
  const bad = Buffer.from(frame);
  bad.writeUInt32LE(99, texts[1]!.nodeOff - 4);
  const badText = textsOf(frame).map(
    (t) => new RecordText(bad, t.nodeOff, t.nodeLen, t.tagOff, t.tagLen, t.metaOff, t.metaLen, t.dataOff, t.dataLen),
  )[1]!;
  assert.equal(storedWhole(badText, bufferView(bad)), false);
  // The dest's one pass over a section: its payload bytes, and damage is corruption, not a refusal.
  const sec = sectionOf(frame);
  assert.deepEqual(scanCopySection(sec, 3), { refusal: undefined, bytes: 1 + 7 + 5 + 1 });
  assert.deepEqual(scanCopySection(shifted(sec, 5), 3), { refusal: undefined, bytes: 14 });
  assert.throws(() => scanCopySection(sec.subarray(0, sec.length - 1), 3), CorruptionError);
  assert.throws(() => scanCopySection(sec.subarray(0, 20), 3), CorruptionError);
});

test('a copy section is framed where it lies: the same frame as encodeAppend, or a copy without room', () => {
  const fwd = Buffer.from('{"r":3,"n":"a->b","s":42,"t":7,"o":[[2,"a",1]]}');
  const records = [rec('{"a":1}', '{"k":1}', 't', 'n'), rec('2')];
  const expected = encodeAppend(9, 11, 1000, undefined, records, 0, undefined, fwd);
  const sec = sectionOf(encodeAppend(9, 1, 1, undefined, records));
  for (const room of [appendSectionHeadBytes(fwd.length), appendSectionHeadBytes(fwd.length) + 13, 3]) {
    const body = Buffer.alloc(room + sec.length + 7, 0xee);
    sec.copy(body, room);
    const frame = frameAppendSection(body, room, sec.length, 9, 11, 1000, 2, fwd);
    assert.deepEqual(frame, expected, `room ${room}`);
    assert.equal(frame.buffer === body.buffer, room >= appendSectionHeadBytes(fwd.length), `room ${room}: framed in place`);
  }
});

test("copy limits on the dest: the append parser's errors for a stamp too many, none within the allowance", () => {
  const keys = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',')}}`;
  const ok = encodeAppend(9, 1, 1000, undefined, [rec('1', keys(72)), rec('2', `{"m":"${'x'.repeat(16384 + 4800 - 8)}"}`)]);
  assert.equal(scanCopySection(sectionOf(ok), 2).refusal, undefined);
  const manyKeys = encodeAppend(9, 1, 1000, undefined, [rec('1'), rec('2', keys(73))]);
  assert.deepEqual(scanCopySection(sectionOf(manyKeys), 2).refusal, {
    ok: false,
    status: 400,
    code: 'record_too_large',
    message: 'records[1].meta has more than 64 keys',
    detail: { index: 1, limit: 'meta_keys' },
  });
  const bigMeta = encodeAppend(9, 1, 1000, undefined, [rec('2', `{"m":"${'x'.repeat(16384 + 4800 - 7)}"}`)]);
  assert.equal(scanCopySection(sectionOf(bigMeta), 1).refusal?.detail?.limit, 'meta_bytes');
  const bigRecord = encodeAppend(9, 1, 1000, undefined, [rec(`"${'x'.repeat(1048576 + 4800 - 8)}"`, '{"a":1}')]);
  assert.equal(scanCopySection(sectionOf(bigRecord), 1).refusal?.detail?.limit, 'record_bytes');
  assert.throws(() => scanCopySection(sectionOf(ok), 1).refusal, /copy section/);
});
