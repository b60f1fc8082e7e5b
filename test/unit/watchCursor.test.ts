// The composite watch cursor (docs/API.md "Watch frames", "POST /v0/watch"): encoding, strict decoding and the round trip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeCursor, encodeCursor } from '../../src/streams/watch/cursor.js';

const b64u = (s: string) => Buffer.from(s, 'utf8').toString('base64url');

test('encodeCursor: the docs/API.md "Watch frames" example, base64url without padding', () => {
  const id = encodeCursor(['audit', 'jobs'], [75, 312]);
  assert.equal(id, 'eyJhdWRpdCI6NzUsImpvYnMiOjMxMn0');
  assert.equal(Buffer.from(id, 'base64url').toString('utf8'), '{"audit":75,"jobs":312}');
  assert.doesNotMatch(id, /[=+/]/);
});

test('encodeCursor: compact JSON in the given (ascending) key order; empty map; big seqs', () => {
  assert.equal(Buffer.from(encodeCursor(['a', 'b.c', 'b:d'], [0, 1, 2]), 'base64url').toString(), '{"a":0,"b.c":1,"b:d":2}');
  assert.equal(encodeCursor([], []), 'e30'); // {}
  const big = Number.MAX_SAFE_INTEGER;
  assert.equal(Buffer.from(encodeCursor(['x'], [big]), 'base64url').toString(), `{"x":${big}}`);
  // Lengths needing padding in standard base64 carry none.
  for (const name of ['a', 'ab', 'abc']) {
    const id = encodeCursor([name], [1]);
    assert.ok(!id.endsWith('='), id);
    assert.deepEqual(decodeCursor(id), new Map([[name, 1]]));
  }
});

test('decodeCursor: the docs/API.md "Watch frames" example, with and without padding', () => {
  const want = new Map([
    ['audit', 75],
    ['jobs', 312],
  ]);
  assert.deepEqual(decodeCursor('eyJhdWRpdCI6NzUsImpvYnMiOjMxMn0'), want);
  assert.deepEqual(decodeCursor('eyJhdWRpdCI6NzUsImpvYnMiOjMxMn0='), want);
  // {"a":1} is 7 bytes: two padding chars in standard base64.
  assert.equal(Buffer.from('{"a":1}').toString('base64'), 'eyJhIjoxfQ==');
  assert.deepEqual(decodeCursor('eyJhIjoxfQ'), new Map([['a', 1]]));
  assert.deepEqual(decodeCursor('eyJhIjoxfQ=='), new Map([['a', 1]]));
  assert.deepEqual(decodeCursor('e30'), new Map());
  assert.deepEqual(decodeCursor(b64u('{"a":0}')), new Map([['a', 0]]));
  assert.deepEqual(decodeCursor(b64u(`{"a":${Number.MAX_SAFE_INTEGER}}`)), new Map([['a', Number.MAX_SAFE_INTEGER]]));
});

test('decodeCursor: rejects text that is not base64url', () => {
  const good = 'eyJhIjoxfQ';
  const std = Buffer.from('{"a":1}>?').toString('base64'); // standard alphabet with + or /
  assert.match(std, /[+/]/);
  for (const bad of [std, `${good}===`, `${good}=x`, `=${good}`, `${good} `, ` ${good}`, `${good}.`, 'eyJhIjox\nfQ', `${good}%3D`]) {
    assert.equal(decodeCursor(bad), undefined, JSON.stringify(bad));
  }
});

test('decodeCursor: rejects non-JSON, non-objects and values that are not u64', () => {
  const cases = [
    '', // empty text
    'not json',
    '{"a":1',
    '{"a":1}x',
    '[]',
    '[1,2]',
    '[["a",1]]',
    'null',
    '1',
    '"a"',
    'true',
    '{"a":-1}',
    '{"a":1.5}',
    '{"a":0.1}',
    `{"a":${Number.MAX_SAFE_INTEGER + 1}}`,
    '{"a":1e300}',
    '{"a":"1"}',
    '{"a":null}',
    '{"a":true}',
    '{"a":[1]}',
    '{"a":{"b":1}}',
    '{"a":1,"b":-2}',
    '{"a":1,"b":"x"}',
  ];
  for (const json of cases) assert.equal(decodeCursor(b64u(json)), undefined, json);
  assert.equal(decodeCursor(''), undefined);
  // Base64url of invalid UTF-8 / binary garbage.
  assert.equal(decodeCursor(Buffer.from([0xff, 0xfe, 0x00, 0x7b]).toString('base64url')), undefined);
});

const topicName = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,20}$/);
const u64 = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });

test('round trip: decode(encode(m)) == m, and re-encoding the decoded map sorted is identical', () => {
  fc.assert(
    fc.property(fc.dictionary(topicName, u64, { maxKeys: 20, noNullPrototype: true }), (dict) => {
      const names = Object.keys(dict).sort();
      const seqs = names.map((n) => dict[n]!);
      const id = encodeCursor(names, seqs);
      assert.match(id, /^[A-Za-z0-9_-]*$/);
      const back = decodeCursor(id);
      assert.ok(back);
      assert.deepEqual(back, new Map(names.map((n, i) => [n, seqs[i]!])));
      // The JSON inside is exactly compact and ascending.
      assert.equal(Buffer.from(id, 'base64url').toString('utf8'), `{${names.map((n, i) => `"${n}":${seqs[i]}`).join(',')}}`);
      const again = [...back.keys()].sort();
      assert.equal(
        encodeCursor(
          again,
          again.map((k) => back.get(k)!),
        ),
        id,
      );
      // Padding is optional on the way back in.
      const padded = id + '='.repeat((4 - (id.length % 4)) % 4);
      assert.deepEqual(decodeCursor(padded), back);
    }),
    { numRuns: 300 },
  );
});
