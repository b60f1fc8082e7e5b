// The client's JSON codec (src/client/json.ts) and retry timing (src/client/backoff.ts,
// errors.ts): seqs above 2^53 are never rounded (an error in 'number' mode, bigints in 'bigint'
// mode), raw mode returns data/meta as the exact text sent, only record objects' data/meta are
// user content (a topic named "data" is not), and the lossless parser agrees with JSON.parse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeJson, encodeJson, encodeCursor, decodeCursor } from '../../src/client/json.js';
import { SpoolError } from '../../src/client/errors.js';
import { retryAfterHeaderMs, errorFromResponse } from '../../src/client/errors.js';
import { backoffMs, retryDelayMs } from '../../src/client/backoff.js';

const num = { bigint: false, raw: false };
const big = { bigint: true, raw: false };

test('number mode: a seq above 2^53-1 is SpoolError seq_out_of_range, never a rounded number', () => {
  const text =
    '{"topic":"t","records":[{"$seq":9007199254740993,"$ts":1,"data":1}],"next_from_seq":9007199254740993,"head_seq":9007199254740993}';
  assert.throws(
    () => decodeJson(text, num),
    (e: unknown) => e instanceof SpoolError && e.code === 'seq_out_of_range' && /9007199254740993/.test(e.message),
  );
  // 2^53-1 itself is exact and fine
  const ok = decodeJson('{"head_seq":9007199254740991,"seqs":[9007199254740991]}', num);
  assert.equal(ok.head_seq, Number.MAX_SAFE_INTEGER);
});

test('bigint mode: every seq field is a bigint, exact above 2^53; unsafe integers in data too; $ts and counts stay numbers', () => {
  const text =
    '{"topic":"t","records":[{"$seq":18446744073709551615,"$ts":1767225600000,"data":{"n":12345678901234567890,"small":5,"$seq":7},"meta":{"k":1}}],' +
    '"next_from_seq":18446744073709551615,"head_seq":18446744073709551615,"earliest_seq":1,"caught_up":true,"tombstone":{"gap_from":2,"gap_to":3,"reason":"cap","missed_estimate":2,"earliest_seq":4,"head_seq":5},"lag":0}';
  const v = decodeJson(text, big);
  assert.equal(v.records[0].$seq, 18446744073709551615n);
  assert.equal(v.next_from_seq, 18446744073709551615n);
  assert.equal(v.earliest_seq, 1n);
  assert.equal(v.lag, 0n);
  assert.equal(v.tombstone.gap_from, 2n);
  assert.equal(v.tombstone.missed_estimate, 2, 'a count, not a seq');
  assert.equal(v.records[0].$ts, 1767225600000);
  assert.equal(v.records[0].data.n, 12345678901234567890n, 'unsafe integer in data kept exact');
  assert.equal(v.records[0].data.small, 5);
  assert.equal(v.records[0].data.$seq, 7, 'a "$seq" key inside data is user content, not a seq');
  // the fast path (no 16-digit run) gives the same shapes
  const fast = decodeJson('{"records":[{"$seq":3,"$ts":1,"data":{"$seq":7}}],"skipped":[1,2],"head_seq":3}', big);
  assert.equal(fast.records[0].$seq, 3n);
  assert.equal(fast.records[0].data.$seq, 7);
  assert.deepEqual(fast.skipped, [1n, 2n]);
});

test('raw mode: data and meta are the verbatim texts, whatever they hold', () => {
  const data = '{"big":12345678901234567890,"e":1e400,"s":"\\u00e9\\"}","a":[1,{"b":[]}],"n":-0,"f":1.50}';
  const text = `{"topic":"t","records":[{"$seq":1,"$ts":2,"$tag":"x","data":${data},"meta":{"m":"}"}},{"$seq":2,"$ts":2,"data":"str"},{"$seq":3,"$ts":2,"data":null},{"$seq":4,"$ts":2,"data":-1.5e3}],"head_seq":4}`;
  const v = decodeJson(text, { bigint: false, raw: true });
  assert.deepEqual(
    v.records.map((r: { data: string }) => r.data),
    [data, '"str"', 'null', '-1.5e3'],
  );
  assert.equal(v.records[0].meta, '{"m":"}"}');
  assert.equal(v.records[0].$tag, 'x');
  assert.equal(v.head_seq, 4);
});

test('only record objects have user data: a watch session with topics named "data", "records" and "meta" decodes as server fields', () => {
  const text =
    '{"wid":"wid_x","topics":{"data":{"from_seq":1,"head_seq":2,"earliest_seq":1},"records":{"from_seq":3,"head_seq":4,"earliest_seq":1},"meta":{"from_seq":0,"head_seq":0,"earliest_seq":1}}}';
  for (const raw of [false, true]) {
    const v = decodeJson(text, { bigint: true, raw });
    assert.equal(v.topics.data.from_seq, 1n);
    assert.equal(v.topics.records.head_seq, 4n);
    assert.equal(v.topics.meta.earliest_seq, 1n);
  }
});

test('a /work job frame is a record at top level: its data is user content', () => {
  const v = decodeJson('{"topic":"q","$seq":5,"lease_id":"lease_ab","deadline":9,"$ts":1,"deliveries":1,"data":{"head_seq":1}}', {
    bigint: true,
    raw: false,
    topIsRecord: true,
  });
  assert.equal(v.$seq, 5n);
  assert.equal(v.data.head_seq, 1, 'data untouched');
  const r = decodeJson('{"topic":"q","$seq":5,"data":{"x":[1,2]},"deliveries":1}', { bigint: false, raw: true, topIsRecord: true });
  assert.equal(r.data, '{"x":[1,2]}');
});

test('the lossless parser agrees with JSON.parse on any JSON (fast-check)', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 5 }), fc.boolean(), (value, spaced) => {
      const text = JSON.stringify({ records: [{ $seq: 1, $ts: 2, data: value }], x: value }, null, spaced ? 2 : undefined);
      // 'raw' forces the hand-written parser; its raw data must be the exact slice, and parse back equal
      const viaRaw = decodeJson(text, { bigint: false, raw: true });
      assert.deepEqual(JSON.parse(viaRaw.records[0].data), JSON.parse(text).records[0].data);
      assert.deepEqual(viaRaw.x, JSON.parse(text).x);
      // a 16-digit run forces it in non-raw mode too (safe integers stay numbers)
      const padded = text.replace('"$seq":1', '"$seq":1,"pad":1000000000000000');
      assert.deepEqual(decodeJson(padded, num), JSON.parse(padded));
    }),
    { numRuns: 300 },
  );
});

test('malformed server JSON is SpoolError bad_response, on both paths', () => {
  for (const text of ['{"a":', '{"a":1}x', '{"records":[{"$seq":1,"data":}]}', '']) {
    for (const raw of [false, true]) {
      assert.throws(
        () => decodeJson(text, { bigint: false, raw }),
        (e: unknown) => e instanceof SpoolError && e.code === 'bad_response',
        `${text} raw=${raw}`,
      );
    }
  }
});

test('encodeJson writes bigints as exact integer literals and leaves look-alike strings alone', () => {
  assert.equal(
    encodeJson({ from_seq: 18446744073709551615n, s: '18446744073709551615', n: 1 }),
    '{"from_seq":18446744073709551615,"s":"18446744073709551615","n":1}',
  );
  assert.equal(encodeJson({ a: [1n, 2] }), '{"a":[1,2]}');
  assert.equal(encodeJson({ a: 'x' }), JSON.stringify({ a: 'x' }));
});

test('composite cursors round-trip in the server format (docs/API.md "Watch frames": base64url, no padding, sorted keys)', () => {
  const m = new Map<string, number | bigint>([
    ['jobs', 312],
    ['audit', 75],
  ]);
  const c = encodeCursor(m);
  assert.equal(c, 'eyJhdWRpdCI6NzUsImpvYnMiOjMxMn0'); // the example of docs/API.md "Watch frames"
  assert.deepEqual(
    decodeCursor(c, false),
    new Map([
      ['audit', 75],
      ['jobs', 312],
    ]),
  );
  const b = encodeCursor(new Map([['t', 18446744073709551615n]]));
  assert.deepEqual(decodeCursor(b, true), new Map([['t', 18446744073709551615n]]));
  assert.equal(decodeCursor(b, false), undefined, 'not representable as a number: refused, not rounded');
  assert.equal(decodeCursor('not base64!', false), undefined);
  assert.equal(decodeCursor(btoa('[1,2]'), false), undefined);
});

test('Retry-After: seconds or an HTTP date; detail.retry_after_ms wins over the header', () => {
  assert.equal(retryAfterHeaderMs('2', 0), 2000);
  assert.equal(retryAfterHeaderMs(null, 0), undefined);
  assert.equal(retryAfterHeaderMs('soon', 0), undefined);
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(retryAfterHeaderMs('Thu, 01 Jan 2026 00:00:03 GMT', now), 3000);
  const e = errorFromResponse(429, '1', '{"error":{"code":"throttled","message":"slow down","detail":{"retry_after_ms":250}}}', now);
  assert.equal(e.code, 'throttled');
  assert.equal(e.status, 429);
  assert.equal(e.retryAfterMs, 250);
  assert.equal(e.transient, true);
  const h = errorFromResponse(503, '1', '{"error":{"code":"not_ready","message":"recovering","detail":{"replay_progress":0.5}}}', now);
  assert.equal(h.retryAfterMs, 1000);
  assert.deepEqual(h.detail, { replay_progress: 0.5 });
  const odd = errorFromResponse(502, null, '<html>bad gateway</html>', now);
  assert.equal(odd.code, 'http_502');
  assert.equal(odd.transient, false);
});

test('backoff: capped exponential with equal jitter; a server delay is honoured', () => {
  const p = { baseMs: 100, maxMs: 1000 };
  assert.equal(
    backoffMs(p, 0, () => 0),
    50,
  );
  assert.equal(
    backoffMs(p, 0, () => 1),
    100,
  );
  assert.equal(
    backoffMs(p, 3, () => 1),
    800,
  );
  assert.equal(
    backoffMs(p, 10, () => 1),
    1000,
  );
  assert.equal(
    backoffMs(p, 10, () => 0),
    500,
  );
  const e = new SpoolError({ code: 'throttled', message: '', status: 429, retryAfterMs: 2000 });
  assert.equal(
    retryDelayMs(p, 0, e, () => 1),
    2000,
    'the server asked for 2 s',
  );
  const small = new SpoolError({ code: 'throttled', message: '', status: 429, retryAfterMs: 10 });
  assert.equal(
    retryDelayMs(p, 5, small, () => 1),
    500,
    'never less than the fixed half of the backoff',
  );
});
