// The record renderer (src/actors/topic/render.ts) writes `$seq`/`$ts` digits and member names
// as bytes; its output must be exactly what building the same object with JSON would give.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderRecordsArray, type RenderItem } from '../../src/actors/topic/render.js';
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

test('a rendered page is the JSON of its records, every optional member in its place', () => {
  // One frame-like buffer holding node, tag, meta and data texts of two records.
  const parts = ['"n1"', '"eu"', '{"k":"é"}', '{"id":1,"x":[1e400,12345678901234567890]}', '{"id":2}'];
  const buf = Buffer.from(parts.join(''), 'utf8');
  const at = (i: number) => Buffer.byteLength(parts.slice(0, i).join(''), 'utf8');
  const len = (i: number) => Buffer.byteLength(parts[i]!, 'utf8');
  const full = new RecordText(buf, at(0), len(0), at(1), len(1), at(2), len(2), at(3), len(3));
  const bare = new RecordText(buf, 0, 0, 0, 0, 0, -1, at(4), len(4));
  const items: RenderItem[] = [
    { seq: 2 ** 40 + 7, tsMs: 1_764_000_000_123, text: full },
    { seq: 5, tsMs: 0, text: bare, extra: ',"lease_id":"L1"' },
  ];
  const out = renderRecordsArray('{"topic":"tö","records":', items, ',"next_from_seq":5', {
    includeTags: true,
    includeMeta: true,
    includeData: true,
  }).toString('utf8');
  assert.equal(
    out,
    '{"topic":"tö","records":[{"$seq":1099511627783,"$ts":1764000000123,"$node":"n1","$tag":"eu","data":{"id":1,"x":[1e400,12345678901234567890]},"meta":{"k":"é"}},' +
      '{"$seq":5,"$ts":0,"data":{"id":2},"lease_id":"L1"}],"next_from_seq":5',
  );
  const lean = renderRecordsArray('[', items, ']', { includeTags: false, includeMeta: false, includeData: false }).toString('utf8');
  assert.equal(lean, '[[{"$seq":1099511627783,"$ts":1764000000123,"$node":"n1"},{"$seq":5,"$ts":0,"lease_id":"L1"}]]');
});

test('records sharing a $ts (one batch) render their digits right, and a new page starts afresh', () => {
  const buf = Buffer.from('{"a":1}', 'utf8');
  const text = new RecordText(buf, 0, 0, 0, 0, 0, -1, 0, buf.length);
  // Runs of equal timestamps, a change of digit count, a return to an earlier value, and 0.
  const ts = [1_764_000_000_123, 1_764_000_000_123, 1_764_000_000_123, 99, 99, 1_764_000_000_123, 0, 0, 1_764_000_000_124];
  const items: RenderItem[] = ts.map((tsMs, i) => ({ seq: i + 1, tsMs, text }));
  const opts = { includeTags: true, includeMeta: true, includeData: true };
  const want = (its: RenderItem[]) => JSON.stringify(its.map((it) => ({ $seq: it.seq, $ts: it.tsMs, data: { a: 1 } })));
  assert.equal(renderRecordsArray('', items, '', opts).toString('utf8'), want(items));
  // The next page's first record has the previous page's last $ts, written into a new buffer.
  const next = [{ seq: 10, tsMs: 1_764_000_000_124, text }];
  assert.equal(renderRecordsArray('', next, '', opts).toString('utf8'), want(next));
  // A page big enough to be a pooled page (rendered into recycled memory) with long runs.
  const many: RenderItem[] = Array.from({ length: 5000 }, (_, i) => ({ seq: i + 1, tsMs: 1_764_000_000_000 + Math.floor(i / 7), text }));
  assert.equal(renderRecordsArray('', many, '', opts).toString('utf8'), want(many));
});
