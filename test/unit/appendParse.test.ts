// Tests for the append body parser (src/actors/topic/appendParse.ts): every shape rule and limit at
// and past its edge, error precedence, verbatim data/meta extents, whitespace-laden bodies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseAppendBody, type ParsedAppend } from '../../src/actors/topic/appendParse.js';
import { LIMITS, type ParseFailure } from '../../src/actors/topic/appendRecord.js';
import { copyCompact } from '../../src/core/jsonScan.js';
import { assertBufferReleased } from '../support/released.js';

function parse(body: string | Buffer): ReturnType<typeof parseAppendBody> {
  return parseAppendBody(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
}

function ok(body: string | Buffer): ParsedAppend {
  const r = parse(body);
  if (!r.ok) assert.fail(`expected ok, got ${JSON.stringify(r)}`);
  return r.value;
}

function err(body: string | Buffer, code: string, detail?: Record<string, unknown>): ParseFailure {
  const r = parse(body);
  if (r.ok) assert.fail(`expected ${code}, got ok`);
  assert.equal(r.status, 400);
  assert.equal(r.code, code, r.message);
  assert.ok(r.message.length > 0);
  assert.deepEqual(r.detail, detail);
  return r;
}

/** Body with the given records (raw JSON texts) and extra top-level members (raw text). */
function body(records: string[], extra = ''): string {
  return `{"records":[${records.join(',')}]${extra ? ',' + extra : ''}}`;
}

function dataText(b: Buffer, a: ParsedAppend, i: number): string {
  const r = a.records[i]!;
  const dst = Buffer.alloc(r.dataLen);
  assert.equal(copyCompact(b, r.dataStart, r.dataEnd, dst, 0), r.dataLen);
  return dst.toString('utf8');
}

function metaText(b: Buffer, a: ParsedAppend, i: number): string | undefined {
  const r = a.records[i]!;
  if (r.metaLen < 0) return undefined;
  const dst = Buffer.alloc(r.metaLen);
  assert.equal(copyCompact(b, r.metaStart, r.metaEnd, dst, 0), r.metaLen);
  return dst.toString('utf8');
}

test('LIMITS', () => {
  assert.deepEqual(LIMITS, {
    maxRecords: 10000,
    maxRecordBytes: 1048576,
    maxMetaBytes: 16384,
    maxMetaKeys: 64,
    maxTagBytes: 256,
    maxNodeBytes: 128,
    maxIdempotencyKeyChars: 256,
  });
});

test('minimal body and defaults', () => {
  const a = ok('{"records":[{"data":1}]}');
  assert.equal(a.records.length, 1);
  assert.deepEqual(a.records[0], {
    dataStart: 20,
    dataEnd: 21,
    dataLen: 1,
    metaStart: 0,
    metaEnd: 0,
    metaLen: -1,
    tag: undefined,
    tagLit: undefined,
    node: undefined,
    nodeLit: undefined,
  });
  assert.equal(a.node, undefined);
  assert.equal(a.nodeLit, undefined);
  assert.equal(a.idempotencyKey, undefined);
  assert.equal(a.create, undefined);
  assert.equal(a.config, undefined);
  assert.equal(a.disableBackpressure, false);
});

test('verbatim data and meta extents', () => {
  const cases: Array<[string, string]> = [
    ['1e400', '1e400'],
    ['12345678901234567890', '12345678901234567890'],
    ['"\\u00e9"', '"\\u00e9"'],
    ['-0', '-0'],
    ['1.50', '1.50'],
    ['null', 'null'],
    ['{"a":1,"a":2}', '{"a":1,"a":2}'],
    ['{ "a" : [ 1 , 2 ] }', '{"a":[1,2]}'],
    ['[ " x  y " , { } ]', '[" x  y ",{}]'],
    ['"é😀"', '"é😀"'],
  ];
  for (const [raw, expected] of cases) {
    const b = Buffer.from(body([`{"data": ${raw} , "meta": { "k" : ${raw} } }`]));
    const a = ok(b);
    assert.equal(dataText(b, a, 0), expected);
    assert.equal(a.records[0]!.dataLen, Buffer.byteLength(expected));
    assert.equal(b.subarray(a.records[0]!.dataStart, a.records[0]!.dataEnd).toString(), raw);
    assert.equal(metaText(b, a, 0), `{"k":${expected}}`);
    assert.equal(a.records[0]!.metaLen, Buffer.byteLength(`{"k":${expected}}`));
  }
});

test('whitespace-laden body', () => {
  const text =
    '\r\n { "node" : "n1" ,\n\t"records" : [\n  { "tag" : "t\\u00e9" , "data" : { "a" : [ 1 , 2 ] , "s" : " x y " } ,\n "meta" : { "k" : 1 , "j" : [ ] } , "node" : "nn" } ,\n' +
    '  { "data" : "two" }\n ] , "create" : true , "disable_backpressure" : false ,\n "idempotency_key" : "k-1" , "config" : { "type" : "log" } , "unknown" : [ 1 , { } ] }\n\n';
  const b = Buffer.from(text);
  const a = ok(b);
  assert.equal(a.records.length, 2);
  assert.equal(dataText(b, a, 0), '{"a":[1,2],"s":" x y "}');
  assert.equal(metaText(b, a, 0), '{"k":1,"j":[]}');
  assert.equal(a.records[0]!.metaLen, 14);
  assert.equal(a.records[0]!.tag, 'té');
  assert.equal(a.records[0]!.tagLit, '"t\\u00e9"');
  assert.equal(a.records[0]!.node, 'nn');
  assert.equal(a.records[0]!.nodeLit, '"nn"');
  assert.equal(dataText(b, a, 1), '"two"');
  assert.equal(a.records[1]!.metaLen, -1);
  assert.equal(a.records[1]!.node, undefined); // not defaulted to the batch node
  assert.equal(a.node, 'n1');
  assert.equal(a.nodeLit, '"n1"');
  assert.equal(a.create, true);
  assert.equal(a.disableBackpressure, false);
  assert.equal(a.idempotencyKey, 'k-1');
  assert.deepEqual(a.config, { type: 'log' });
});

test('copyCompact of all records into one buffer', () => {
  const recs = Array.from({ length: 50 }, (_, i) => `{ "data" : { "i" : ${i} , "v" : [ ${i}.50 , "a b" ] } , "meta" : { "m" : ${i} } }`);
  const b = Buffer.from(body(recs));
  const a = ok(b);
  let total = 0;
  for (const r of a.records) total += r.dataLen + r.metaLen;
  const out = Buffer.alloc(total);
  let off = 0;
  for (const r of a.records) {
    off += copyCompact(b, r.dataStart, r.dataEnd, out, off, r.dataLen);
    off += copyCompact(b, r.metaStart, r.metaEnd, out, off, r.metaLen);
  }
  assert.equal(off, total);
  const expected = Array.from({ length: 50 }, (_, i) => `{"i":${i},"v":[${i}.50,"a b"]}{"m":${i}}`).join('');
  assert.equal(out.toString(), expected);
});

test('tagLit and nodeLit are the literals as sent', () => {
  const a = ok(body(['{"data":1,"tag":"a\\/b\\u0041","node":"\\u00e9x"}'], '"node":"b\\"q"'));
  assert.equal(a.records[0]!.tag, 'a/bA');
  assert.equal(a.records[0]!.tagLit, '"a\\/b\\u0041"');
  assert.equal(a.records[0]!.node, 'éx');
  assert.equal(a.records[0]!.nodeLit, '"\\u00e9x"');
  assert.equal(a.node, 'b"q');
  assert.equal(a.nodeLit, '"b\\"q"');
  const u = ok(body(['{"data":1,"tag":"é😀"}']));
  assert.equal(u.records[0]!.tag, 'é😀');
  assert.equal(u.records[0]!.tagLit, '"é😀"');
});

test('malformed or non-object bodies -> invalid_request', () => {
  for (const b of [
    '',
    '   \n',
    '{',
    '{"records":[{"data":1}]',
    '{"records":[{"data":1}]} x',
    '{"records":[{"data":1}],}',
    '{"records":[{"data":01}]}',
    '{"records":[{"data":1,}]}',
    '{"records":[{"data":1}], "x": tru}',
    '{"records":[{"data":"\u0001"}]}',
    '{"records":[{"data":NaN}]}',
    '[{"data":1}]',
    '1',
    'null',
    '"records"',
    '[]',
    'nonsense',
  ]) {
    const r = err(b, 'invalid_request', undefined);
    assert.ok(r.message.length > 0);
  }
  // Invalid UTF-8 inside a string of an ignored member is still malformed.
  err(Buffer.concat([Buffer.from('{"records":[{"data":1}],"x":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), 'invalid_request');
  err(Buffer.concat([Buffer.from('{"records":[{"data":"'), Buffer.from([0xc3]), Buffer.from('"}]}')]), 'invalid_request');
});

test('malformed JSON takes precedence over shape errors', () => {
  err('{"records":[1], "x": [1,]}', 'invalid_request', undefined);
  err('{"records":[{"tag":5}], "x": 01}', 'invalid_request', undefined);
  err(`{"records":[${Array(10001).fill('1').join(',')}], "x": }`, 'invalid_request', undefined);
});

test('depth limit applies to the whole body', () => {
  // body object (1) + records array (2) + record object (3) + data nesting
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
  ok(body([`{"data":${deep(509)}}`]));
  err(body([`{"data":${deep(510)}}`]), 'invalid_request', { limit: 'max_depth', max: 512 });
  ok(`{"records":[{"data":1}],"x":${deep(511)}}`);
  err(`{"records":[{"data":1}],"x":${deep(512)}}`, 'invalid_request', { limit: 'max_depth', max: 512 });
});

test('records: missing, not an array, empty', () => {
  err('{}', 'invalid_request', { field: 'records' });
  err('{"node":"x"}', 'invalid_request', { field: 'records' });
  err('{"records":{}}', 'invalid_request', { field: 'records' });
  err('{"records":null}', 'invalid_request', { field: 'records' });
  err('{"records":"[]"}', 'invalid_request', { field: 'records' });
  err('{"records":[]}', 'invalid_request', { field: 'records' });
  err('{"records":[ ]}', 'invalid_request', { field: 'records' });
});

test('batch size: 10000 ok, 10001 -> batch_too_large', () => {
  const rec = '{"data":1}';
  const a = ok(body(Array(10000).fill(rec)));
  assert.equal(a.records.length, 10000);
  err(body(Array(10001).fill(rec)), 'batch_too_large', { count: 10001, max: 10000 });
  err(body(Array(12345).fill('1')), 'batch_too_large', { count: 12345, max: 10000 });
  // Batch size is checked before per-record problems.
  err(body(['{}', ...Array(10000).fill(rec)]), 'batch_too_large', { count: 10001, max: 10000 });
});

test('each record must be an object with data', () => {
  err(body(['1']), 'invalid_request', { field: 'records', index: 0 });
  err(body(['{"data":1}', 'null']), 'invalid_request', { field: 'records', index: 1 });
  err(body(['{"data":1}', '[{"data":1}]']), 'invalid_request', { field: 'records', index: 1 });
  err(body(['{"data":1}', '"x"']), 'invalid_request', { field: 'records', index: 1 });
  err(body(['{}']), 'invalid_request', { field: 'data', index: 0 });
  err(body(['{"data":1}', '{"meta":{}}']), 'invalid_request', { field: 'data', index: 1 });
  err(body(['{"Data":1}']), 'invalid_request', { field: 'data', index: 0 });
  const a = ok(body(['{"data":null}', '{"data":false}', '{"data":[]}', '{"data":{}}', '{"data":""}']));
  assert.deepEqual(
    a.records.map((r) => r.dataLen),
    [4, 5, 2, 2, 2],
  );
});

test('tag, node, meta types', () => {
  for (const v of ['1', 'null', 'true', '[]', '{}', '["x"]']) {
    err(body([`{"data":1,"tag":${v}}`]), 'invalid_request', { field: 'tag', index: 0 });
    err(body([`{"data":1,"node":${v}}`]), 'invalid_request', { field: 'node', index: 0 });
  }
  for (const v of ['1', 'null', 'true', '[]', '"{}"', '[{}]']) {
    err(body([`{"data":1,"meta":${v}}`]), 'invalid_request', { field: 'meta', index: 0 });
  }
  ok(body(['{"data":1,"tag":"","node":"","meta":{}}']));
  // First problem within a record: data, then tag, node, meta.
  err(body(['{"tag":1,"node":1,"meta":1}']), 'invalid_request', { field: 'data', index: 0 });
  err(body(['{"data":1,"meta":1,"node":1,"tag":1}']), 'invalid_request', { field: 'tag', index: 0 });
  err(body(['{"data":1,"meta":1,"node":1}']), 'invalid_request', { field: 'node', index: 0 });
});

test('unknown keys ignored, duplicate keys: last wins', () => {
  const b = Buffer.from(
    body(['{"x":{"deep":[1]},"data":1,"tag":5,"tag":"t","data":"second","node":null,"node":"n"}'], '"zzz":[1,2,{"a":null}]'),
  );
  const a = ok(b);
  assert.equal(dataText(b, a, 0), '"second"');
  assert.equal(a.records[0]!.tag, 't');
  assert.equal(a.records[0]!.node, 'n');
  err(body(['{"data":1,"tag":"t","tag":5}']), 'invalid_request', { field: 'tag', index: 0 });
  // Top-level duplicates.
  assert.equal(ok('{"records":[1],"records":[{"data":2}]}').records.length, 1);
  err('{"records":[{"data":2}],"records":[1]}', 'invalid_request', { field: 'records', index: 0 });
  err('{"records":[{"data":2}],"records":{}}', 'invalid_request', { field: 'records' });
  assert.equal(ok(body(['{"data":1}'], '"node":1,"node":"x"')).node, 'x');
  assert.equal(ok(body(['{"data":1}'], '"create":true,"create":false')).create, false);
});

test('keys written with escapes are the same keys', () => {
  const b = Buffer.from('{"rec\\u006frds":[{"d\\u0061ta":[1],"t\\u0061g":"x","\\u006eode":"n","met\\u0061":{"a":1}}],"n\\u006fde":"b"}');
  const a = ok(b);
  assert.equal(dataText(b, a, 0), '[1]');
  assert.equal(a.records[0]!.tag, 'x');
  assert.equal(a.records[0]!.node, 'n');
  assert.equal(metaText(b, a, 0), '{"a":1}');
  assert.equal(a.node, 'b');
});

test('the first record with a problem is reported', () => {
  const long = 'x'.repeat(300);
  err(body([`{"data":1,"tag":"${long}"}`, '{}']), 'record_too_large', { index: 0, limit: 'tag_bytes' });
  err(body(['{}', `{"data":1,"tag":"${long}"}`]), 'invalid_request', { field: 'data', index: 0 });
  err(body(['{"data":1}', '{"data":1}', '7', '{}']), 'invalid_request', { field: 'records', index: 2 });
});

test('tag bytes: 256 ok, 257 -> record_too_large; counted in UTF-8 bytes of the decoded value', () => {
  const t = (s: string) => body([`{"data":1,"tag":"${s}"}`]);
  assert.equal(ok(t('a'.repeat(256))).records[0]!.tag, 'a'.repeat(256));
  err(t('a'.repeat(257)), 'record_too_large', { index: 0, limit: 'tag_bytes' });
  ok(t('é'.repeat(128))); // 256 bytes, 128 chars
  err(t('é'.repeat(128) + 'a'), 'record_too_large', { index: 0, limit: 'tag_bytes' }); // 257 bytes, 129 chars
  ok(t('😀'.repeat(64))); // 256 bytes
  err(t('€'.repeat(86)), 'record_too_large', { index: 0, limit: 'tag_bytes' }); // 258 bytes
  ok(t('\\u0061'.repeat(256))); // escapes: 1536 bytes as sent, 256 decoded
  ok(t('\\u00e9'.repeat(128)));
  err(t('\\u00e9'.repeat(128) + 'a'), 'record_too_large', { index: 0, limit: 'tag_bytes' });
  err(body(['{"data":1}', `{"data":1,"tag":"${'a'.repeat(257)}"}`]), 'record_too_large', { index: 1, limit: 'tag_bytes' });
});

test('record node bytes: 128 ok, 129 -> record_too_large', () => {
  const n = (s: string) => body([`{"data":1,"node":"${s}"}`]);
  ok(n('a'.repeat(128)));
  err(n('a'.repeat(129)), 'record_too_large', { index: 0, limit: 'node_bytes' });
  ok(n('é'.repeat(64)));
  err(n('é'.repeat(64) + 'a'), 'record_too_large', { index: 0, limit: 'node_bytes' });
});

test('batch node: string, 128 ok, 129 -> record_too_large', () => {
  assert.equal(ok(body(['{"data":1}'], `"node":"${'a'.repeat(128)}"`)).node, 'a'.repeat(128));
  err(body(['{"data":1}'], `"node":"${'a'.repeat(129)}"`), 'record_too_large', { limit: 'node_bytes' });
  err(body(['{"data":1}'], `"node":"${'é'.repeat(65)}"`), 'record_too_large', { limit: 'node_bytes' });
  for (const v of ['1', 'null', 'false', '[]', '{}']) {
    err(body(['{"data":1}'], `"node":${v}`), 'invalid_request', { field: 'node' });
  }
  // Record problems come before batch-level ones.
  err(body(['{}'], '"node":1'), 'invalid_request', { field: 'data', index: 0 });
});

test('meta keys: 64 ok, 65 -> record_too_large', () => {
  const m = (n: number) => '{' + Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',') + '}';
  ok(body([`{"data":1,"meta":${m(64)}}`]));
  err(body([`{"data":1,"meta":${m(65)}}`]), 'record_too_large', { index: 0, limit: 'meta_keys' });
  // Duplicate keys count as written.
  const dup = '{' + Array(65).fill('"k":1').join(',') + '}';
  err(body([`{"data":1,"meta":${dup}}`]), 'record_too_large', { index: 0, limit: 'meta_keys' });
  // Only top-level keys count.
  ok(body([`{"data":1,"meta":{"a":${m(100)}}}`]));
});

test('meta bytes: 16384 ok, 16385 -> record_too_large (compact length)', () => {
  const m = (n: number) => `{"k":"${'x'.repeat(n - 8)}"}`; // n bytes
  assert.equal(m(16384).length, 16384);
  const a = ok(body([`{"data":1,"meta":${m(16384)}}`]));
  assert.equal(a.records[0]!.metaLen, 16384);
  err(body([`{"data":1,"meta":${m(16385)}}`]), 'record_too_large', { index: 0, limit: 'meta_bytes' });
  // Whitespace outside strings does not count.
  const spaced = `{ \n "k" :  "${'x'.repeat(16376)}" \n }`;
  assert.equal(ok(body([`{"data":1,"meta":${spaced}}`])).records[0]!.metaLen, 16384);
  // meta_bytes is reported before meta_keys.
  const big = '{' + Array.from({ length: 65 }, (_, i) => `"k${i}":"${'y'.repeat(300)}"`).join(',') + '}';
  err(body([`{"data":1,"meta":${big}}`]), 'record_too_large', { index: 0, limit: 'meta_bytes' });
});

test('record bytes: data + meta exactly 1 MiB ok, 1 MiB + 1 -> record_too_large', () => {
  const MiB = 1048576;
  const meta = '{"a":1}'; // 7 bytes
  const withMeta = (n: number) => body([`{"data":"${'x'.repeat(n - 2 - 7)}","meta":${meta}}`]);
  const a = ok(withMeta(MiB));
  assert.equal(a.records[0]!.dataLen + a.records[0]!.metaLen, MiB);
  err(withMeta(MiB + 1), 'record_too_large', { index: 0, limit: 'record_bytes' });
  const dataOnly = (n: number) => body([`{"data":"${'x'.repeat(n - 2)}"}`]);
  assert.equal(ok(dataOnly(MiB)).records[0]!.dataLen, MiB);
  err(dataOnly(MiB + 1), 'record_too_large', { index: 0, limit: 'record_bytes' });
  // Whitespace outside strings in data does not count.
  const spacedData = `[ "${'x'.repeat(MiB - 4)}" ]`;
  assert.equal(ok(body([`{"data":${spacedData}}`])).records[0]!.dataLen, MiB);
  // Multi-byte characters count in bytes.
  err(body([`{"data":"${'é'.repeat(MiB / 2)}"}`]), 'record_too_large', { index: 0, limit: 'record_bytes' });
});

test('idempotency_key: string, 256 characters (code points) ok, 257 -> invalid_request, "" -> invalid_request', () => {
  const k = (s: string) => body(['{"data":1}'], `"idempotency_key":"${s}"`);
  assert.equal(ok(k('a'.repeat(256))).idempotencyKey, 'a'.repeat(256));
  err(k('a'.repeat(257)), 'invalid_request', { field: 'idempotency_key' });
  assert.equal(ok(k('é'.repeat(256))).idempotencyKey, 'é'.repeat(256)); // 512 bytes, 256 chars
  ok(k('😀'.repeat(256))); // 512 UTF-16 units, 256 characters
  err(k('😀'.repeat(256) + 'a'), 'invalid_request', { field: 'idempotency_key' });
  ok(k('\\u0061'.repeat(256)));
  err(k(''), 'invalid_request', { field: 'idempotency_key' });
  for (const v of ['1', 'null', 'true', '[]', '{}']) {
    err(body(['{"data":1}'], `"idempotency_key":${v}`), 'invalid_request', { field: 'idempotency_key' });
  }
});

test('create and disable_backpressure: booleans', () => {
  assert.equal(ok(body(['{"data":1}'], '"create":true')).create, true);
  assert.equal(ok(body(['{"data":1}'], '"create":false')).create, false);
  assert.equal(ok(body(['{"data":1}'], '"disable_backpressure":true')).disableBackpressure, true);
  assert.equal(ok(body(['{"data":1}'], '"disable_backpressure":false')).disableBackpressure, false);
  for (const v of ['1', '0', 'null', '"true"', '[]', '{}']) {
    err(body(['{"data":1}'], `"create":${v}`), 'invalid_request', { field: 'create' });
    err(body(['{"data":1}'], `"disable_backpressure":${v}`), 'invalid_request', { field: 'disable_backpressure' });
  }
});

test('config: object materialized, anything else invalid_request', () => {
  const a = ok(body(['{"data":1}'], '"config": { "type" : "queue" , "ttl_ms" : 1000 , "x" : [ null ] }'));
  assert.deepEqual(a.config, { type: 'queue', ttl_ms: 1000, x: [null] });
  assert.deepEqual(ok(body(['{"data":1}'], '"config":{}')).config, {});
  for (const v of ['1', 'null', 'true', '"x"', '[]', '[{}]']) {
    err(body(['{"data":1}'], `"config":${v}`), 'invalid_request', { field: 'config' });
  }
});

test('batch-level error order: node, idempotency_key, create, disable_backpressure, config', () => {
  const all = '"config":1,"disable_backpressure":1,"create":1,"idempotency_key":1,"node":1';
  err(body(['{"data":1}'], all), 'invalid_request', { field: 'node' });
  err(body(['{"data":1}'], all.replace('"node":1', '"node":"n"')), 'invalid_request', { field: 'idempotency_key' });
  err(body(['{"data":1}'], '"config":1,"disable_backpressure":1,"create":1'), 'invalid_request', { field: 'create' });
  err(body(['{"data":1}'], '"config":1,"disable_backpressure":1'), 'invalid_request', { field: 'disable_backpressure' });
});

test('offsets are relative to the given buffer (leading whitespace, Uint8Array views)', () => {
  const b = Buffer.from('   {"records":[{"data":"abc"}]}   ');
  const a = ok(b);
  assert.equal(b.subarray(a.records[0]!.dataStart, a.records[0]!.dataEnd).toString(), '"abc"');
  // A Uint8Array view with a non-zero byteOffset works the same.
  const big = Buffer.from('xxxx{"records":[{"data":[1, 2]}]}');
  const view = new Uint8Array(big.buffer, big.byteOffset + 4, big.length - 4);
  const v = parseAppendBody(view);
  assert.ok(v.ok);
  if (v.ok) {
    const r = v.value.records[0]!;
    assert.equal(Buffer.from(view.subarray(r.dataStart, r.dataEnd)).toString(), '[1, 2]');
    assert.equal(r.dataLen, 5);
  }
});

// fc.jsonValue can produce -0, which JSON.stringify prints as "0".
const recordArb = fc.record(
  {
    data: fc.jsonValue({ maxDepth: 3 }),
    meta: fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }),
    tag: fc.string({ maxLength: 10 }),
    node: fc.string({ maxLength: 10 }),
  },
  { requiredKeys: ['data'] },
);

test('property: random valid batches round-trip data/meta/tag/node verbatim', () => {
  fc.assert(
    fc.property(fc.array(recordArb, { minLength: 1, maxLength: 10 }), fc.boolean(), (records, pretty) => {
      const b = Buffer.from(JSON.stringify({ records }, null, pretty ? 1 : 0));
      const a = ok(b);
      assert.equal(a.records.length, records.length);
      records.forEach((rec, i) => {
        const p = a.records[i]!;
        assert.equal(dataText(b, a, i), JSON.stringify(rec.data));
        assert.equal(metaText(b, a, i), rec.meta === undefined ? undefined : JSON.stringify(rec.meta));
        assert.equal(p.tag, rec.tag);
        assert.equal(p.tagLit, rec.tag === undefined ? undefined : JSON.stringify(rec.tag));
        assert.equal(p.node, rec.node);
      });
    }),
    { numRuns: 300 },
  );
});

test('property: a body is rejected as malformed iff JSON.parse rejects it', () => {
  const chars = [...'{}[]",:0123456789.eE+-tfnrulsa \\', 'é'];
  const mutated = fc
    .tuple(
      fc.array(recordArb, { minLength: 1, maxLength: 3 }),
      fc.array(fc.record({ at: fc.nat(), ch: fc.constantFrom(...chars), del: fc.boolean() }), { maxLength: 3 }),
    )
    .map(([records, muts]) => {
      const cps = Array.from(JSON.stringify({ records }));
      for (const m of muts) {
        const at = m.at % cps.length;
        if (m.del) cps.splice(at, 1);
        else cps.splice(at, 0, m.ch);
      }
      return cps.join('');
    });
  fc.assert(
    fc.property(mutated, (text) => {
      let valid = true;
      try {
        JSON.parse(text);
      } catch {
        valid = false;
      }
      const r = parse(text);
      const malformed = !r.ok && r.code === 'invalid_request' && r.detail === undefined;
      if (!valid) assert.ok(malformed, `accepted invalid JSON ${JSON.stringify(text)}: ${JSON.stringify(r)}`);
      if (valid) assert.ok(r.ok || !/not valid JSON/.test(r.message), `rejected valid JSON ${JSON.stringify(text)}`);
    }),
    { numRuns: 1000 },
  );
});

test('a parsed body keeps no hold on its buffer: the long-string word view is let go', async () => {
  // The scanner reads strings longer than 64 bytes four bytes at a time through an Int32Array
  // over the body's whole buffer (a request batch's shared buffer, or a big body's own); that
  // view must not outlive the parse, or it would pin the buffer until the next long string.
  const text = Buffer.from(JSON.stringify({ records: [{ data: 'x'.repeat(300) }, { data: 'y'.repeat(200) }] }));
  await assertBufferReleased(
    text.length + 64,
    (ab) => {
      const body = new Uint8Array(ab, 16, text.length);
      body.set(text);
      assert.ok(parseAppendBody(body).ok);
      // A body that is not an object (here malformed: a long unterminated string) takes the
      // validating path, which scans with the same view.
      const badText = Buffer.from('["' + 'z'.repeat(120));
      const bad = new Uint8Array(ab, 0, badText.length);
      bad.set(badText);
      assert.ok(!parseAppendBody(bad).ok);
    },
    'parseAppendBody',
  );
});
