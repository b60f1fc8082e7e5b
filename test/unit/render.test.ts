// The record renderer (src/actors/topic/render.ts) writes `$seq`/`$ts` digits and member names
// as bytes; its output must be exactly what building the same object with JSON would give.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderRecordsArray, RenderItem } from '../../src/actors/topic/render.js';
import { readRecordAt, recordExtent } from '../../src/format/frame.js';
import { isPage, PAGE_TAIL_SLACK_BYTES } from '../../src/core/pagePool.js';
import { digitCount, writeUint } from '../../src/core/decimal.js';
import { RecordText } from '../../src/actors/topic/recordText.js';

test('writeUint and digitCount agree with String() across the safe-integer range', () => {
  const values = [
    0,
    1,
    9,
    10,
    99,
    100,
    999_999_999,
    1e9,
    1e9 + 1,
    2 ** 31 - 1,
    2 ** 31,
    2 ** 32,
    1_764_000_000_123,
    999_999_999_999_999,
    2 ** 53 - 1,
  ];
  let x = 1;
  for (let i = 0; i < 2000; i++) {
    x = (x * 48271) % 2147483647;
    values.push(Math.floor((x / 2147483647) * 10 ** (i % 16)));
  }
  const out = new Uint8Array(32);
  for (const v of values) {
    assert.equal(digitCount(v), String(v).length, `digitCount(${v})`);
    const end = writeUint(out, 3, v);
    assert.equal(Buffer.from(out.subarray(3, end)).toString('latin1'), String(v));
  }
});

/** Record texts in the APPEND layout (12-byte head, then node, tag, meta and data), one buffer. */
function records(...recs: { node?: string; tag?: string; meta?: string; data: string }[]): RecordText[] {
  const parts: Buffer[] = [Buffer.from('junk!')];
  for (const r of recs) {
    const h = Buffer.alloc(12);
    h.writeUInt16LE(Buffer.byteLength(r.node ?? ''), 0);
    h.writeUInt16LE(Buffer.byteLength(r.tag ?? ''), 2);
    h.writeUInt32LE(r.meta === undefined ? 0xffffffff : Buffer.byteLength(r.meta), 4);
    h.writeUInt32LE(Buffer.byteLength(r.data), 8);
    parts.push(h, Buffer.from((r.node ?? '') + (r.tag ?? '') + (r.meta ?? '') + r.data));
  }
  const buf = Buffer.concat(parts);
  const out: RecordText[] = [];
  let p = 5;
  for (let i = 0; i < recs.length; i++) {
    out.push(RecordText.at(buf, p));
    p = out[i]!.dataOff + out[i]!.dataLen;
  }
  return out;
}

const ALL = { includeTags: true, includeMeta: true, includeData: true };

test('a rendered page is the JSON of its records, every optional member in its place', () => {
  const [full, bare] = records(
    { node: '"n1"', tag: '"eu"', meta: '{"k":"é"}', data: '{"id":1,"x":[1e400,12345678901234567890]}' },
    { data: '{"id":2}' },
  );
  const items: RenderItem[] = [RenderItem.of(2 ** 40 + 7, 1_764_000_000_123, full!), RenderItem.of(5, 0, bare!, ',"lease_id":"L1"')];
  const out = renderRecordsArray('{"topic":"tö","records":', items, ',"next_from_seq":5', ALL).toString('utf8');
  assert.equal(
    out,
    '{"topic":"tö","records":[{"$seq":1099511627783,"$ts":1764000000123,"$node":"n1","$tag":"eu","data":{"id":1,"x":[1e400,12345678901234567890]},"meta":{"k":"é"}},' +
      '{"$seq":5,"$ts":0,"data":{"id":2},"lease_id":"L1"}],"next_from_seq":5',
  );
  const lean = renderRecordsArray('[', items, ']', { includeTags: false, includeMeta: false, includeData: false }).toString('utf8');
  assert.equal(lean, '[[{"$seq":1099511627783,"$ts":1764000000123,"$node":"n1"},{"$seq":5,"$ts":0,"lease_id":"L1"}]]');
  assert.equal(renderRecordsArray('{"records":', [], '}', ALL).toString('utf8'), '{"records":[]}');
});

test('a page whose records carry more than the estimate allows grows, small or pooled, and stays exact', () => {
  // Long `$node` and `$tag` texts are not in the payload bytes the page is taken for.
  const node = `"${'n'.repeat(3000)}"`;
  const tag = `"${'t'.repeat(5000)}"`;
  for (const count of [1, 3, 40]) {
    const texts = records(...Array.from({ length: count }, (_, i) => ({ node, tag, data: String(i) })));
    const items = texts.map((t, i) => RenderItem.of(i + 1, 7, t));
    const page = renderRecordsArray('{"records":', items, '}', ALL);
    const want = JSON.stringify({
      records: texts.map((_, i) => ({ $seq: i + 1, $ts: 7, $node: JSON.parse(node), $tag: JSON.parse(tag), data: i })),
    });
    assert.equal(page.toString('utf8'), want, `${count} records`);
    assert.equal(page.length, Buffer.byteLength(want));
    if (page.length >= 64 * 1024) assert.ok(isPage(page.buffer), 'a big reply is a pooled page');
    if (isPage(page.buffer)) assert.ok(page.buffer.byteLength - page.length >= PAGE_TAIL_SLACK_BYTES, 'the slack stays behind a page');
  }
});

test('records sharing a $ts (one batch) render their digits right, and a new page starts afresh', () => {
  const [text] = records({ data: '{"a":1}' });
  // Runs of equal timestamps, a change of digit count, a return to an earlier value, and 0.
  const ts = [1_764_000_000_123, 1_764_000_000_123, 1_764_000_000_123, 99, 99, 1_764_000_000_123, 0, 0, 1_764_000_000_124];
  const items: RenderItem[] = ts.map((tsMs, i) => RenderItem.of(i + 1, tsMs, text!));
  const opts = { includeTags: true, includeMeta: true, includeData: true };
  const want = (its: RenderItem[]) => JSON.stringify(its.map((it) => ({ $seq: it.seq, $ts: it.tsMs, data: { a: 1 } })));
  assert.equal(renderRecordsArray('', items, '', opts).toString('utf8'), want(items));
  // The next page's first record has the previous page's last $ts, written into a new buffer.
  const next = [RenderItem.of(10, 1_764_000_000_124, text!)];
  assert.equal(renderRecordsArray('', next, '', opts).toString('utf8'), want(next));
  // A page big enough to be a pooled page (rendered into recycled memory) with long runs.
  const many: RenderItem[] = Array.from({ length: 5000 }, (_, i) => RenderItem.of(i + 1, 1_764_000_000_000 + Math.floor(i / 7), text!));
  assert.equal(renderRecordsArray('', many, '', opts).toString('utf8'), want(many));
});

test('a record text read from its head (as the seq index keeps hot records) has the extents its writer laid out', () => {
  // Records in the APPEND layout, written with Buffer's own writers, after some other bytes: with
  // and without node, tag and meta, and a data text longer than 16 bits can count. The extents
  // each should have come from the texts themselves, so the one head decoder (readRecordAt,
  // which RecordText.at uses) is checked against the layout, not against itself.
  const specs: [node: string, tag: string, meta: string | undefined, data: string][] = [
    ['"n1"', '"t"', '{"m":1}', '{"a":"é"}'],
    ['', '', undefined, '1'],
    ['', '"x"', undefined, 'x'.repeat(70_000)],
  ];
  const rec = ([node, tag, meta, data]: (typeof specs)[number]): Buffer => {
    const h = Buffer.alloc(12);
    h.writeUInt16LE(Buffer.byteLength(node), 0);
    h.writeUInt16LE(Buffer.byteLength(tag), 2);
    h.writeUInt32LE(meta === undefined ? 0xffffffff : Buffer.byteLength(meta), 4);
    h.writeUInt32LE(Buffer.byteLength(data), 8);
    return Buffer.concat([h, Buffer.from(node + tag + (meta ?? '') + data)]);
  };
  const buf = Buffer.concat([Buffer.from('junk!'), ...specs.map(rec)]);
  let p = 5;
  for (let i = 0; i < specs.length; i++) {
    const [node, tag, meta, data] = specs[i]!;
    const nodeOff = p + 12;
    const tagOff = nodeOff + Buffer.byteLength(node);
    const metaOff = tagOff + Buffer.byteLength(tag);
    const dataOff = metaOff + (meta === undefined ? 0 : Buffer.byteLength(meta));
    const want = [
      nodeOff,
      Buffer.byteLength(node),
      tagOff,
      Buffer.byteLength(tag),
      metaOff,
      meta === undefined ? -1 : Buffer.byteLength(meta),
      dataOff,
      Buffer.byteLength(data),
    ];
    const got = RecordText.at(buf, p);
    assert.deepEqual(
      [got.nodeOff, got.nodeLen, got.tagOff, got.tagLen, got.metaOff, got.metaLen, got.dataOff, got.dataLen],
      want,
      `record ${i}`,
    );
    assert.equal(got.headOff, p);
    const r = recordExtent();
    const next = readRecordAt(buf, p, r);
    assert.equal(next, dataOff + Buffer.byteLength(data), `record ${i} ends where its data does`);
    p = next;
  }
});
