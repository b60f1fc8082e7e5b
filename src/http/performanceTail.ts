// The performance block of a worker's reply (docs/API.md "Conventions"), `,"performance":{…}}`,
// written as bytes into a scratch buffer and copied into the reply's body: the text
// JSON.stringify would give for reply.ts perfBlock, without a string per number or per field.
// HTTP thread only (one scratch buffer, used between two synchronous calls).
import type { FastifyRequest } from 'fastify';
import type { PerfFields } from '../protocol/messages/rpc.js';
import { nowMs, roundMs } from '../core/stopwatch.js';
import { digitCount, writeUint } from '../core/decimal.js';

const scratch = Buffer.alloc(512);
const OPEN = Buffer.from(',"performance":{"server_total_ms":', 'latin1');
const NULL = Buffer.from('null', 'latin1');
/** `,"<key>":` per performance field, in the order perfBlock spreads them. */
const KEYS: Record<string, Buffer> = {};
for (const k of ['wal_append_ms', 'fsync_ms', 'records_scanned', 'throttle_wait_ms']) KEYS[k] = Buffer.from(`,"${k}":`, 'latin1');

/**
 * Writes the tail into the scratch buffer; returns its length. `copyPerformanceTail` then
 * copies it; nothing may write the scratch in between.
 */
export function writePerformanceTail(req: FastifyRequest, extra: PerfFields): number {
  let p = put(0, OPEN);
  p = num(p, roundMs(nowMs() - (req.startedAt ?? nowMs())));
  const waited = req.throttleWaitMs;
  for (const k in extra) {
    let v = extra[k as keyof PerfFields];
    if (v === undefined) continue;
    if (k === 'throttle_wait_ms' && waited !== undefined) v = roundMs(waited + v);
    p = num(put(p, KEYS[k] ?? Buffer.from(`,${JSON.stringify(k)}:`, 'utf8')), v);
  }
  if (waited !== undefined && extra.throttle_wait_ms === undefined) p = num(put(p, KEYS.throttle_wait_ms!), roundMs(waited));
  scratch[p++] = 0x7d; // }
  scratch[p++] = 0x7d; // } (the reply's own)
  return p;
}

/** Copies the tail just written (`len` bytes) into `out` at `at`. */
export function copyPerformanceTail(out: Uint8Array, at: number, len: number): void {
  scratch.copy(out, at, 0, len);
}

/** The tail as text (tests, and anything not on the hot path). */
export function performanceTail(req: FastifyRequest, extra: PerfFields): string {
  return scratch.toString('latin1', 0, writePerformanceTail(req, extra));
}

function put(p: number, bytes: Buffer): number {
  bytes.copy(scratch, p);
  return p + bytes.length;
}

/**
 * A number as JSON writes it. A non-negative value of whole thousandths below 2^53 (what roundMs
 * gives) is written digit by digit; anything else through String.
 */
function num(p: number, v: number): number {
  if (!Number.isFinite(v)) return put(p, NULL);
  const th = Math.round(v * 1000);
  if (!(v >= 0 && th / 1000 === v && th < Number.MAX_SAFE_INTEGER)) return p + scratch.write(String(v), p, 'latin1');
  const whole = Math.floor(th / 1000);
  let frac = th - whole * 1000;
  p = writeUint(scratch, p, whole);
  if (frac === 0) return p;
  scratch[p++] = 0x2e; // .
  let digits = 3;
  while (frac % 10 === 0) {
    frac /= 10;
    digits--;
  }
  for (let lead = digits - digitCount(frac); lead > 0; lead--) scratch[p++] = 0x30; // 0.05: the 0 before the 5
  return writeUint(scratch, p, frac);
}
