// Micro benchmark for the append hot path: byte scanning + verbatim copy (parseAppendBody +
// copyCompact) versus the naive JSON.parse(body) + JSON.stringify(record.data / meta).
//   node dist/bench/jsonScan.bench.js            (BENCH_MS=1000 per measurement by default)
import { parseAppendBody } from '../src/actors/topic/appendParse.js';
import { copyCompact } from '../src/core/jsonScan.js';

const BENCH_MS = Number(process.env.BENCH_MS ?? 1000);
const RECORDS = 1000;

/** Deterministic pseudo-random generator (mulberry32) so runs are comparable. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function makeData(r: () => number, i: number): unknown {
  // ~256 bytes of typical event JSON.
  const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'];
  return {
    id: `evt-${i.toString(16).padStart(8, '0')}`,
    ts: 1_700_000_000_000 + Math.floor(r() * 1e9),
    user: { id: Math.floor(r() * 1e6), name: `user ${words[i % 8]} ${Math.floor(r() * 1000)}`, admin: r() < 0.1 },
    amount: Math.round(r() * 1e6) / 100,
    tags: [words[Math.floor(r() * 8)], words[Math.floor(r() * 8)], 'é€😀'],
    note: 'lorem ipsum dolor sit amet, consectetur adipiscing elit',
    ok: true,
    extra: null,
  };
}

function makeBody(pretty: boolean): Buffer {
  const r = rng(42);
  const records = [];
  for (let i = 0; i < RECORDS; i++) {
    const rec: Record<string, unknown> = { data: makeData(r, i) };
    if (i % 4 === 0) rec.meta = { source: 'bench', seq: i };
    if (i % 2 === 0) rec.tag = `tag-${i % 10}`;
    records.push(rec);
  }
  return Buffer.from(JSON.stringify({ records, node: 'bench-node', idempotency_key: 'k-1' }, null, pretty ? 2 : 0));
}

function scanAndCopy(body: Buffer, out: Buffer): number {
  const p = parseAppendBody(body);
  if (!p.ok) throw new Error(p.message);
  let off = 0;
  for (const rec of p.value.records) {
    off += copyCompact(body, rec.dataStart, rec.dataEnd, out, off, rec.dataLen);
    if (rec.metaLen >= 0) off += copyCompact(body, rec.metaStart, rec.metaEnd, out, off, rec.metaLen);
  }
  return off;
}

function parseAndStringify(body: Buffer): number {
  const o = JSON.parse(body.toString('utf8')) as { records: Array<{ data: unknown; meta?: unknown }> };
  let n = 0;
  for (const rec of o.records) {
    n += JSON.stringify(rec.data).length;
    if (rec.meta !== undefined) n += JSON.stringify(rec.meta).length;
  }
  return n;
}

let sink = 0;
function measure(name: string, bytes: number, fn: () => number): number {
  for (let i = 0; i < 50; i++) sink ^= fn(); // warm-up
  let ops = 0;
  const t0 = process.hrtime.bigint();
  let elapsed = 0;
  while (elapsed < BENCH_MS) {
    for (let i = 0; i < 10; i++) sink ^= fn();
    ops += 10;
    elapsed = Number(process.hrtime.bigint() - t0) / 1e6;
  }
  const opsPerSec = (ops * 1000) / elapsed;
  const mbPerSec = (opsPerSec * bytes) / (1024 * 1024);
  console.log(`  ${name.padEnd(44)} ${opsPerSec.toFixed(0).padStart(7)} ops/s  ${mbPerSec.toFixed(1).padStart(7)} MB/s`);
  return opsPerSec;
}

for (const pretty of [false, true]) {
  const body = makeBody(pretty);
  const out = Buffer.alloc(body.length);
  console.log(`append body: ${RECORDS} records, ${body.length} bytes${pretty ? ' (pretty-printed, 2-space indent)' : ' (compact)'}`);
  const a = measure('(a) parseAppendBody + copyCompact', body.length, () => scanAndCopy(body, out));
  const b = measure('(b) JSON.parse + JSON.stringify(data/meta)', body.length, () => parseAndStringify(body));
  console.log(`  (a) / (b) = ${(a / b).toFixed(2)}x`);
}
if (sink === 0.5) console.log(sink); // keep results observable
