// Unit and property tests for the byte-level JSON scanner (src/core/jsonScan.ts): verbatim
// compaction, RFC 8259 rejection cases, UTF-8 validation, depth limit, and accept/reject agreement
// with JSON.parse on mutated text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { assertBufferReleased } from '../support/released.js';
import {
  JsonScanError,
  MAX_DEPTH,
  compactLength,
  copyCompact,
  countTopLevelKeys,
  decodeStringLiteral,
  forEachElement,
  forEachMember,
  scanStats,
  scanString,
  scanValue,
  skipWs,
  validateDocument,
} from '../../src/core/jsonScan.js';

/** Validates `input` as a document and returns its compacted text, checking all length paths agree. */
function compact(input: string | Uint8Array): string {
  const buf = typeof input === 'string' ? Buffer.from(input, 'utf8') : Buffer.from(input);
  validateDocument(buf);
  const s = skipWs(buf, 0, buf.length);
  const e = scanValue(buf, s, buf.length);
  const fromStats = e - s - scanStats.ws;
  const len = compactLength(buf, s, e);
  assert.equal(len, fromStats, 'compactLength vs scanStats.ws');
  const dst = Buffer.alloc(len + 8, 0xaa);
  const n = copyCompact(buf, s, e, dst, 4);
  assert.equal(n, len, 'copyCompact bytes written');
  assert.equal(dst[3], 0xaa, 'no write before dstOff');
  assert.equal(dst[4 + n], 0xaa, 'no write after the value');
  const dst2 = Buffer.alloc(len);
  assert.equal(copyCompact(buf, s, e, dst2, 0, len), len, 'copyCompact with known length');
  assert.deepEqual(dst2, dst.subarray(4, 4 + n));
  return dst.subarray(4, 4 + n).toString('utf8');
}

function rejects(input: string | Uint8Array | number[], why?: string): void {
  const buf = typeof input === 'string' ? Buffer.from(input, 'utf8') : Buffer.from(input as Uint8Array);
  assert.throws(() => validateDocument(buf), JsonScanError, why ?? `should reject ${JSON.stringify(String(input))}`);
}

test('verbatim: numbers keep their lexical form', () => {
  for (const s of ['12345678901234567890', '1e400', '-0', '1.50', '0', '-0.0e-0', '1E+2', '123.456e-789', '-1']) {
    assert.equal(compact(s), s);
    assert.equal(compact(`  ${s}\n`), s);
  }
  assert.equal(compact('{"a":1e400}'), '{"a":1e400}');
  assert.equal(compact('[ 1.50 , -0 , 12345678901234567890 ]'), '[1.50,-0,12345678901234567890]');
});

test('verbatim: strings keep escapes, whitespace inside strings is preserved', () => {
  assert.equal(compact('"\\u00e9"'), '"\\u00e9"');
  assert.equal(compact('"\\u00e9"').length, 8);
  assert.equal(compact('"é"'), '"é"');
  assert.equal(compact('[ "a b" , " \\t\\n " , "\\"  \\\\ " ]'), '["a b"," \\t\\n ","\\"  \\\\ "]');
  assert.equal(compact('{ " k e y " : " v a l " }'), '{" k e y ":" v a l "}');
  assert.equal(compact('"\\ud800"'), '"\\ud800"'); // escaped lone surrogate is valid JSON text
  assert.equal(compact('"\\/\\b\\f\\n\\r\\t\\"\\\\"'), '"\\/\\b\\f\\n\\r\\t\\"\\\\"');
  assert.equal(compact('"\x7f"'), '"\x7f"'); // DEL is not a control character for JSON
});

test('verbatim: key order and duplicate keys are kept', () => {
  assert.equal(compact('{"b":1,"a":2,"b":3}'), '{"b":1,"a":2,"b":3}');
  assert.equal(compact('{ "z" : 1 , "a" : 2 , "z" : 3 }'), '{"z":1,"a":2,"z":3}');
});

test('whitespace removal in nested values', () => {
  assert.equal(compact('{ "a" : [ 1 , 2 ] }'), '{"a":[1,2]}');
  assert.equal(
    compact('\r\n\t{\n\t"a"\r:\n[\t1\n,\r2 ]\n,"b":{ } , "c" : [ ] , "d" : { "e" : null } }\n'),
    '{"a":[1,2],"b":{},"c":[],"d":{"e":null}}',
  );
  assert.equal(compact('[ true , false , null , [ [ ] ] ]'), '[true,false,null,[[]]]');
  const long = '[ ' + Array.from({ length: 200 }, (_, i) => `"item number ${i} with spaces"`).join(' ,\n ') + ' ]';
  assert.equal(compact(long), JSON.stringify(JSON.parse(long)));
});

test('valid UTF-8 in strings', () => {
  for (const ch of ['é', '€', '😀', '\u{10FFFF}', '\uD7FF', '\uE000', '\uFFFD', '\u0080', '\u07FF', '\u0800', '\u{10000}']) {
    assert.equal(compact(`"${ch}"`), `"${ch}"`);
  }
});

test('rejects grammar errors', () => {
  const bad = [
    '',
    ' ',
    '[1,]',
    '{"a":1,}',
    '[,1]',
    '{,"a":1}',
    '[1 2]',
    '{"a" 1}',
    '{"a":}',
    '{a:1}',
    "{'a':1}",
    "'a'",
    '[',
    ']',
    '{',
    '}',
    '{"a":1',
    '[1',
    '"abc',
    '[}',
    '{]',
    '{"a":1]',
    '[1}',
    '{"a"}',
    '{1:1}',
    '{null:1}',
    '01',
    '00',
    '-01',
    '1.',
    '.5',
    '+1',
    '-',
    '1e',
    '1e+',
    '1E-',
    '1.e5',
    '0x10',
    '- 1',
    '1 2',
    '--1',
    '1..2',
    '1ee2',
    'NaN',
    'Infinity',
    '-Infinity',
    'undefined',
    'tru',
    'nul',
    'fals',
    'True',
    'NULL',
    'nulll',
    'truefalse',
    '"a"x',
    '{} {}',
    '[] ,',
    '1 /* c */',
    '// c\n1',
    '[1]]',
    '{"a":1}}',
    '\uFEFF1',
    '\f1',
    '\v1',
    '\u00a01',
    '1\u00a0',
  ];
  for (const s of bad) rejects(s);
});

test('rejects bad escapes and raw control characters', () => {
  for (const s of ['"\\x"', '"\\u12"', '"\\u12g4"', '"\\\'"', '"\\U0041"', '"\\"', '"\\', '"\\u"', '"\\a"', '"\\0"']) rejects(s);
  for (let c = 0; c < 0x20; c++) rejects([0x22, 0x61, c, 0x22], `raw control 0x${c.toString(16)}`);
  rejects('{"a\nb":1}');
});

test('rejects invalid UTF-8', () => {
  const cases: number[][] = [
    [0x22, 0xed, 0xa0, 0x80, 0x22], // U+D800 encoded (lone high surrogate)
    [0x22, 0xed, 0xbf, 0xbf, 0x22], // U+DFFF encoded
    [0x22, 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80, 0x22], // CESU-8 surrogate pair
    [0x22, 0xc0, 0xaf, 0x22], // overlong '/'
    [0x22, 0xc1, 0xbf, 0x22], // overlong
    [0x22, 0xe0, 0x80, 0xaf, 0x22], // overlong 3-byte
    [0x22, 0xe0, 0x9f, 0xbf, 0x22], // overlong 3-byte (max)
    [0x22, 0xf0, 0x80, 0x80, 0xaf, 0x22], // overlong 4-byte
    [0x22, 0xf0, 0x8f, 0xbf, 0xbf, 0x22], // overlong 4-byte (max)
    [0x22, 0xf4, 0x90, 0x80, 0x80, 0x22], // U+110000
    [0x22, 0xf5, 0x80, 0x80, 0x80, 0x22], // lead > F4
    [0x22, 0xff, 0x22],
    [0x22, 0x80, 0x22], // lone continuation
    [0x22, 0xbf, 0x22],
    [0x22, 0xc3, 0x22], // truncated 2-byte
    [0x22, 0xe2, 0x82, 0x22], // truncated 3-byte
    [0x22, 0xf0, 0x9f, 0x98, 0x22], // truncated 4-byte
    [0x22, 0xc3], // truncated at end of buffer
    [0x22, 0xe2, 0x82],
    [0x22, 0xf0, 0x9f, 0x98],
    [0x22, 0xc3, 0xc3, 0xa9, 0x22], // lead followed by lead
    [0xc3, 0xa9], // non-ASCII outside a string
    [0x5b, 0x31, 0x2c, 0xe2, 0x82, 0xac, 0x5d],
    [0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d], // in a key
  ];
  for (const c of cases) rejects(c, `should reject bytes ${Buffer.from(c).toString('hex')}`);
});

test('depth limit: 512 nested levels accepted, 513 rejected', () => {
  assert.equal(MAX_DEPTH, 512);
  const arr = (n: number) => '['.repeat(n) + ']'.repeat(n);
  const obj = (n: number) => '{"a":'.repeat(n - 1) + '{}' + '}'.repeat(n - 1);
  assert.equal(compact(arr(512)), arr(512));
  assert.equal(compact(obj(512)), obj(512));
  rejects(arr(513));
  rejects(obj(513));
  rejects('['.repeat(100000)); // deep and unterminated: no stack overflow
  assert.throws(() => validateDocument(Buffer.from('['.repeat(100000) + ']'.repeat(100000))), /Nesting deeper than 512/);
  // scanValue's depth argument counts the containers already open around the value.
  const b = Buffer.from(arr(10));
  assert.equal(scanValue(b, 0, b.length, 502), b.length);
  assert.throws(() => scanValue(b, 0, b.length, 503), JsonScanError);
});

test('JsonScanError carries the offset', () => {
  try {
    validateDocument(Buffer.from('[1, 2, x]'));
    assert.fail('should throw');
  } catch (e) {
    assert.ok(e instanceof JsonScanError);
    assert.equal(e.offset, 7);
  }
  try {
    validateDocument(Buffer.from('[1] 2'));
    assert.fail('should throw');
  } catch (e) {
    assert.ok(e instanceof JsonScanError);
    assert.equal(e.offset, 4);
  }
});

test('scanValue works inside a larger buffer and stops at the value end', () => {
  const b = Buffer.from('xx{"a": [1, 2]} , 17 trailing');
  const e = scanValue(b, 2, b.length);
  assert.equal(b.subarray(2, e).toString(), '{"a": [1, 2]}');
  assert.equal(scanStats.ws, 2);
  assert.equal(scanStats.top, 1);
  const n = scanValue(b, 18, b.length);
  assert.equal(b.subarray(18, n).toString(), '17');
  // The end bound is respected: a number cut by `end` is still a number; a string is not.
  assert.equal(scanValue(Buffer.from('12345'), 0, 3), 3);
  assert.throws(() => scanValue(Buffer.from('"abc"'), 0, 4), JsonScanError);
  assert.throws(() => scanValue(Buffer.from('true'), 0, 3), JsonScanError);
});

test('skipWs and scanString', () => {
  const b = Buffer.from(' \t\r\n x');
  assert.equal(skipWs(b, 0, b.length), 5);
  assert.equal(skipWs(b, 0, 3), 3);
  const s = Buffer.from('"a\\"b" rest');
  assert.equal(scanString(s, 0, s.length), 6);
  assert.equal(scanStats.escape, true);
  assert.equal(scanString(Buffer.from('"ab"'), 0, 4), 4);
  assert.equal(scanStats.escape, false);
});

test('countTopLevelKeys, forEachMember, forEachElement', () => {
  const b = Buffer.from('{ "a" : 1 , "b" : [1, {"x": 2}] , "a" : "s" , "c": {} }');
  assert.equal(countTopLevelKeys(b, 0, b.length), 4);
  assert.equal(countTopLevelKeys(Buffer.from('{}'), 0, 2), 0);
  const seen: Array<[string, string]> = [];
  const end = forEachMember(b, 0, b.length, (ks, ke, vs, ve) => {
    seen.push([b.subarray(ks, ke).toString(), b.subarray(vs, ve).toString()]);
  });
  assert.equal(end, b.length);
  assert.deepEqual(seen, [
    ['"a"', '1'],
    ['"b"', '[1, {"x": 2}]'],
    ['"a"', '"s"'],
    ['"c"', '{}'],
  ]);
  const a = Buffer.from('[ 1 , "two" , [3] , {"four":4} ]');
  const els: Array<[number, string]> = [];
  assert.equal(
    forEachElement(a, 0, a.length, (vs, ve, i) => els.push([i, a.subarray(vs, ve).toString()])),
    a.length,
  );
  assert.deepEqual(els, [
    [0, '1'],
    [1, '"two"'],
    [2, '[3]'],
    [3, '{"four":4}'],
  ]);
  assert.equal(
    forEachElement(Buffer.from('[]'), 0, 2, () => assert.fail('no elements')),
    2,
  );
  assert.equal(
    forEachMember(Buffer.from('{ }'), 0, 3, () => assert.fail('no members')),
    3,
  );
  assert.throws(() => forEachMember(Buffer.from('{"a":1,}'), 0, 8, () => {}), JsonScanError);
  assert.throws(() => forEachElement(Buffer.from('[1,]'), 0, 4, () => {}), JsonScanError);
  assert.throws(() => forEachElement(Buffer.from('[1 2]'), 0, 5, () => {}), JsonScanError);
});

test('decodeStringLiteral', () => {
  const d = (s: string) => {
    const b = Buffer.from(s);
    return decodeStringLiteral(b, 0, b.length);
  };
  assert.equal(d('"abc"'), 'abc');
  assert.equal(d('""'), '');
  assert.equal(d('"t\\u00e9"'), 'té');
  assert.equal(d('"é😀"'), 'é😀');
  assert.equal(d('"a\\"b\\\\c\\/d\\n"'), 'a"b\\c/d\n');
  assert.equal(d('"' + 'x'.repeat(100) + 'é"'), 'x'.repeat(100) + 'é');
});

test('compactLength and copyCompact agree on values inside a larger buffer', () => {
  const text = 'prefix [ { "a" : "x y" } , 2 ] suffix';
  const b = Buffer.from(text);
  const s = 7;
  const e = scanValue(b, s, b.length);
  assert.equal(compactLength(b, s, e), '[{"a":"x y"},2]'.length);
  const dst = Buffer.alloc(64);
  const n = copyCompact(b, s, e, dst, 10);
  assert.equal(dst.subarray(10, 10 + n).toString(), '[{"a":"x y"},2]');
  // No whitespace: fast path, same result with or without the length hint.
  const c = Buffer.from('{"a":[1,2,"  "]}');
  assert.equal(copyCompact(c, 0, c.length, dst, 0), c.length);
  assert.equal(dst.subarray(0, c.length).toString(), c.toString());
});

test('compactLength and copyCompact terminate on (invalid) unterminated strings', () => {
  const b = Buffer.from('[ "abc\\');
  assert.equal(typeof compactLength(b, 0, b.length), 'number');
  const dst = Buffer.alloc(64);
  assert.ok(copyCompact(b, 0, b.length, dst, 0) <= b.length + 1);
});

// ---------------------------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------------------------

/** Inserts whitespace (from `pick`) around every structural character outside strings. */
function injectWs(text: string, pick: () => string): string {
  let out = pick();
  let inStr = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inStr) {
      out += ch;
      if (ch === '\\') out += text[++i]!;
      else if (ch === '"') inStr = false;
    } else if (ch === '"') {
      inStr = true;
      out += ch;
    } else if ('{}[],:'.includes(ch)) {
      out += pick() + ch + pick();
    } else out += ch;
  }
  return out + pick();
}

/** JSON has no -0 value after JSON.stringify (it prints "0"); fc.jsonValue can produce -0. */
function withoutNegativeZero(v: unknown): unknown {
  if (Object.is(v, -0)) return 0;
  if (Array.isArray(v)) return v.map(withoutNegativeZero);
  if (v !== null && typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v))
      Object.defineProperty(o, k, { value: withoutNegativeZero(x), enumerable: true, writable: true, configurable: true });
    return o;
  }
  return v;
}

const wsPiece = fc.constantFrom('', '', '', ' ', '\t', '\n', '\r', '\r\n', '   ', ' \n\t ');

test('property: whitespace-injected JSON compacts back to JSON.stringify text', () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.array(wsPiece, { minLength: 1, maxLength: 50 }), (v, pieces) => {
      const text = JSON.stringify(v);
      let k = 0;
      const spaced = injectWs(text, () => pieces[k++ % pieces.length]!);
      const out = compact(spaced);
      assert.equal(out, text);
      assert.deepEqual(JSON.parse(out), withoutNegativeZero(v));
    }),
    { numRuns: 2000 },
  );
});

// Alphabet for mutations: JSON-ish ASCII plus a few non-ASCII code points and bad bytes-in-text.
const MUT_ALPHABET = [
  ...'{}[]",:0123456789.eE+-tfnrulsa \\/',
  'x',
  'u',
  "'",
  '\n',
  '\t',
  '\r',
  '\u0001',
  '\u001f',
  '\u007f',
  'é',
  '€',
  '😀',
  '\u{10FFFF}',
  '\uFEFF',
  '\u00a0',
];
const mutChar = fc.constantFrom(...MUT_ALPHABET);
const mutation = fc.record({ op: fc.constantFrom('ins', 'del', 'rep'), at: fc.nat(), ch: mutChar });

/** Valid JSON text (maybe with whitespace), or short random text from the alphabet, then mutated. */
const mutatedText = fc
  .tuple(
    fc.oneof(
      { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
      {
        weight: 2,
        arbitrary: fc.tuple(fc.jsonValue({ maxDepth: 3 }), fc.array(wsPiece, { minLength: 1, maxLength: 10 })).map(([v, p]) => {
          let k = 0;
          return injectWs(JSON.stringify(v), () => p[k++ % p.length]!);
        }),
      },
      { weight: 1, arbitrary: fc.array(mutChar, { maxLength: 12 }).map((a) => a.join('')) },
    ),
    fc.array(mutation, { maxLength: 4 }),
  )
  .map(([base, muts]) => {
    const cps = Array.from(base); // code points: never split a surrogate pair
    for (const m of muts) {
      const at = cps.length === 0 ? 0 : m.at % (cps.length + (m.op === 'ins' ? 1 : 0));
      if (m.op === 'ins') cps.splice(at, 0, m.ch);
      else if (cps.length > 0 && m.op === 'del') cps.splice(at, 1);
      else if (cps.length > 0) cps[at] = m.ch;
    }
    return cps.join('');
  });

function agreesWithJsonParse(s: string): void {
  let expected = true;
  try {
    JSON.parse(s);
  } catch {
    expected = false;
  }
  let actual = true;
  try {
    validateDocument(Buffer.from(s, 'utf8'));
  } catch (e) {
    if (!(e instanceof JsonScanError)) throw e;
    actual = false;
  }
  assert.equal(actual, expected, `validateDocument disagrees with JSON.parse on ${JSON.stringify(s)}`);
  if (expected) {
    // Accepted text also compacts to something JSON.parse reads as the same value.
    const out = compact(s);
    assert.deepEqual(JSON.parse(out), JSON.parse(s));
  }
}

test('property: accept/reject agrees with JSON.parse on mutated text', () => {
  fc.assert(fc.property(mutatedText, agreesWithJsonParse), { numRuns: 2000 });
});

test('accept/reject agrees with JSON.parse on hand-picked edge cases', () => {
  for (const s of ['-0', '0e0', '0E+0', '1e-0', '[-0.0]', '"\\u0000"', '{"":""}', '[""]', '"😀"', ' [ ] ', '\n"x"\r', '"\\uDBFF\\uDFFF"']) {
    agreesWithJsonParse(s);
  }
});

test('long strings: every kind of byte at every offset and alignment agrees with JSON.parse', () => {
  // Strings longer than scanString's byte-by-byte prefix go on four bytes at a time over aligned
  // words of the underlying buffer: a quote, a backslash, a control byte or a non-ASCII byte must
  // be seen wherever it falls, whatever the view's byteOffset, and the string must end exactly
  // at its closing quote (also when `end` cuts it short).
  const specials: { bytes: number[]; name: string }[] = [
    { bytes: [0x22], name: 'quote' },
    { bytes: [0x5c, 0x6e], name: 'escape \\n' },
    { bytes: [0x5c, 0x78], name: 'bad escape \\x' },
    { bytes: [0x01], name: 'control 0x01' },
    { bytes: [0x1f], name: 'control 0x1f' },
    { bytes: [0x7f], name: 'DEL (allowed)' },
    { bytes: [0xc3, 0xa9], name: 'é' },
    { bytes: [0xe2, 0x82, 0xac], name: '€' },
    { bytes: [0xf0, 0x9f, 0x98, 0x80], name: 'emoji' },
    { bytes: [0xc3], name: 'truncated UTF-8' },
    { bytes: [0xff], name: 'byte 0xff' },
    { bytes: [0x20], name: 'space' },
  ];
  const plain = (n: number) => Array.from({ length: n }, (_, i) => 0x41 + (i % 26));
  for (const sp of specials) {
    for (let at = 60; at < 140; at++) {
      for (let shift = 0; shift < 4; shift++) {
        const text = [0x22, ...plain(at), ...sp.bytes, ...plain(150 - at), 0x22];
        const backing = new Uint8Array(shift + text.length + 3);
        backing.set(text, shift);
        const view = new Uint8Array(backing.buffer, shift, text.length);
        let expected: boolean;
        try {
          JSON.parse(Buffer.from(text).toString('utf8'));
          expected = Buffer.from(Buffer.from(text).toString('utf8'), 'utf8').equals(Buffer.from(text)); // invalid UTF-8 decodes lossily
        } catch {
          expected = false;
        }
        let got: number | undefined;
        try {
          got = scanValue(view, 0, view.length);
        } catch (err) {
          assert.ok(err instanceof JsonScanError, `${sp.name} at ${at}, shift ${shift}: ${(err as Error).message}`);
        }
        if (sp.name === 'quote') {
          // The string ends at the inner quote: the scan stops there (what follows is not read).
          assert.equal(got, at + 2, `${sp.name} at ${at}, shift ${shift}`);
          continue;
        }
        assert.equal(got !== undefined, expected, `${sp.name} at ${at}, shift ${shift}: accepted ${got !== undefined}`);
        if (got !== undefined) assert.equal(got, view.length, `${sp.name} at ${at}, shift ${shift}: end`);
        // Cut before the closing quote: unterminated, never read past `end`.
        assert.throws(() => scanValue(view, 0, view.length - 1), JsonScanError, `${sp.name} at ${at}, shift ${shift}: cut`);
      }
    }
  }
});

test('validateDocument and countTopLevelKeys keep no hold on the buffer they scanned', async () => {
  // Both scan a whole value, long strings through a word view of the buffer: they drop it themselves.
  const doc = Buffer.from(JSON.stringify({ a: 'x'.repeat(200), b: 'y'.repeat(100) }));
  const place = (ab: ArrayBuffer) => {
    const v = new Uint8Array(ab, 4, doc.length);
    v.set(doc);
    return v;
  };
  await assertBufferReleased(doc.length + 8, (ab) => validateDocument(place(ab)), 'validateDocument');
  await assertBufferReleased(doc.length + 8, (ab) => assert.equal(countTopLevelKeys(place(ab), 0, doc.length), 2), 'countTopLevelKeys');
  // A scan that throws lets go too.
  const cut = (ab: ArrayBuffer) => place(ab).subarray(0, doc.length - 20);
  await assertBufferReleased(
    doc.length + 8,
    (ab) => assert.throws(() => validateDocument(cut(ab)), JsonScanError),
    'a failed validateDocument',
  );
});
