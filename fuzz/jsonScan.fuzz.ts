// Long-running fuzz session for the byte-level JSON scanner (src/core/jsonScan.ts): valid JSON
// text (optionally whitespace-laden) and random JSON-ish text, randomly mutated, must be accepted
// by validateDocument exactly when JSON.parse accepts it; accepted text must compact to a value
// JSON.parse reads identically. Runs when executed:
//   node dist/fuzz/jsonScan.fuzz.js            (FUZZ_RUNS=100000 by default)
//   FUZZ_RUNS=1000000 FUZZ_SEED=123 node dist/fuzz/jsonScan.fuzz.js
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { JsonScanError, compactLength, copyCompact, scanStats, scanValue, skipWs, validateDocument } from '../src/core/jsonScan.js';

const numRuns = Number(process.env.FUZZ_RUNS ?? 100000);
const seed = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
console.log(`jsonScan fuzz: seed=${seed} runs=${numRuns} (reproduce with FUZZ_SEED=${seed})`);

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
    } else if ('{}[],:'.includes(ch)) out += pick() + ch + pick();
    else out += ch;
  }
  return out + pick();
}

const wsPiece = fc.constantFrom('', '', '', ' ', '\t', '\n', '\r', '\r\n', '   ', ' \n\t ');
const ALPHABET = [
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
const mutChar = fc.constantFrom(...ALPHABET);
const mutation = fc.record({ op: fc.constantFrom('ins', 'del', 'rep'), at: fc.nat(), ch: mutChar });

const text = fc
  .tuple(
    fc.oneof(
      { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 6 }).map((v) => JSON.stringify(v)) },
      {
        weight: 2,
        arbitrary: fc.tuple(fc.jsonValue({ maxDepth: 4 }), fc.array(wsPiece, { minLength: 1, maxLength: 10 })).map(([v, p]) => {
          let k = 0;
          return injectWs(JSON.stringify(v), () => p[k++ % p.length]!);
        }),
      },
      { weight: 2, arbitrary: fc.array(mutChar, { maxLength: 16 }).map((a) => a.join('')) },
    ),
    fc.array(mutation, { maxLength: 6 }),
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

let accepted = 0;
const started = Date.now();
fc.assert(
  fc.property(text, (s) => {
    let expected = true;
    try {
      JSON.parse(s);
    } catch {
      expected = false;
    }
    const buf = Buffer.from(s, 'utf8');
    let actual = true;
    try {
      validateDocument(buf);
    } catch (e) {
      if (!(e instanceof JsonScanError)) throw e;
      actual = false;
    }
    assert.equal(actual, expected, `validateDocument disagrees with JSON.parse on ${JSON.stringify(s)}`);
    if (!expected) return;
    accepted++;
    const st = skipWs(buf, 0, buf.length);
    const e = scanValue(buf, st, buf.length);
    const len = compactLength(buf, st, e);
    assert.equal(len, e - st - scanStats.ws);
    const dst = Buffer.alloc(len);
    assert.equal(copyCompact(buf, st, e, dst, 0), len);
    assert.deepEqual(JSON.parse(dst.toString('utf8')), JSON.parse(s));
  }),
  { numRuns, seed },
);
console.log(`jsonScan fuzz: ok, ${numRuns} runs (${accepted} valid documents) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
