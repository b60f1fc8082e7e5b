// Shared helpers for the HTTP conformance tests (test/http/*.test.ts): a raw node:http client
// (exact headers and bytes, no automatic Content-Type or decompression), assertions for the
// error envelope of docs/API.md "Errors" and the default topic config of docs/API.md "PUT /v0/topics/:topic".
import http from 'node:http';
import zlib from 'node:zlib';
import assert from 'node:assert/strict';
import type { Resp } from '../helpers/server.js';
import { workerOf } from '../../src/core/names.js';

export interface RawResp {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Bytes exactly as received (still gzip-compressed when Content-Encoding is gzip). */
  raw: Buffer;
  /** Decoded text (gunzipped when Content-Encoding is gzip). */
  text: string;
  /** Parsed JSON when the content type is JSON, else the text. */
  body: any;
}

export interface RawOptions {
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** One request over node:http: sends exactly the given headers (plus Host and Content-Length). */
export function raw(base: string, method: string, path: string, opts: RawOptions = {}): Promise<RawResp> {
  const u = new URL(base);
  const headers: Record<string, string | number> = { ...(opts.headers ?? {}) };
  if (opts.body !== undefined) headers['content-length'] = Buffer.byteLength(opts.body);
  return new Promise((resolve, reject) => {
    const r = http.request({ host: u.hostname, port: Number(u.port), method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const rawBytes = Buffer.concat(chunks);
        let decoded = rawBytes;
        if ((res.headers['content-encoding'] ?? '').includes('gzip')) decoded = zlib.gunzipSync(rawBytes);
        const text = decoded.toString('utf8');
        let body: unknown = text;
        if ((res.headers['content-type'] ?? '').includes('json')) {
          try {
            body = JSON.parse(text);
          } catch {
            /* leave text */
          }
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, raw: rawBytes, text, body });
      });
    });
    r.on('error', reject);
    if (opts.body !== undefined) r.end(opts.body);
    else r.end();
  });
}

type AnyResp = Resp | RawResp;

function header(r: AnyResp, name: string): string | undefined {
  if (r.headers instanceof Headers) return r.headers.get(name) ?? undefined;
  const v = (r.headers as http.IncomingHttpHeaders)[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}
export { header as getHeader };

/** Asserts the docs/API.md "Errors" error envelope with the given status and code; returns error.detail. */
export function assertError(r: AnyResp, status: number, code: string, what = ''): any {
  const ctx = `${what ? what + ': ' : ''}expected ${status} ${code}, got ${r.status} ${r.text.slice(0, 400)}`;
  assert.equal(r.status, status, ctx);
  assert.match(header(r, 'content-type') ?? '', /application\/json/i, ctx + ' (content-type)');
  assert.ok(r.body && typeof r.body === 'object' && !Array.isArray(r.body), ctx + ' (body is not a JSON object)');
  assert.ok(r.body.error && typeof r.body.error === 'object', ctx + ' (no top-level error object)');
  assert.equal(r.body.error.code, code, ctx);
  assert.equal(typeof r.body.error.message, 'string', ctx + ' (message)');
  for (const k of Object.keys(r.body.error)) assert.ok(['code', 'message', 'detail'].includes(k), `${ctx} (unexpected error key ${k})`);
  if ('detail' in r.body.error)
    assert.ok(r.body.error.detail && typeof r.body.error.detail === 'object', ctx + ' (detail must be an object)');
  for (const k of Object.keys(r.body)) assert.ok(['error', 'performance'].includes(k), `${ctx} (unexpected top-level key ${k})`);
  return r.body.error.detail;
}

/** Asserts a 400 invalid_request; when detail.field is present it must name `field`. */
export function assertInvalid(r: AnyResp, field?: string, what = ''): any {
  const detail = assertError(r, 400, 'invalid_request', what);
  if (field !== undefined && detail && 'field' in detail) assert.equal(detail.field, field, `${what}: detail.field`);
  return detail;
}

/** Asserts a success status and a JSON object body with performance.server_total_ms. */
export function assertOk(r: AnyResp, status: number | number[], what = ''): any {
  const ok = Array.isArray(status) ? status : [status];
  assert.ok(ok.includes(r.status), `${what ? what + ': ' : ''}expected ${ok.join('/')}, got ${r.status} ${r.text.slice(0, 400)}`);
  assert.match(header(r, 'content-type') ?? '', /application\/json/i, `${what}: content-type`);
  assert.ok(r.body && typeof r.body === 'object' && !Array.isArray(r.body), `${what}: body is not a JSON object: ${r.text.slice(0, 200)}`);
  assert.equal(r.body.error, undefined, `${what}: success body must not carry error`);
  assertPerf(r.body, what);
  return r.body;
}

export function assertPerf(body: any, what = ''): void {
  assert.ok(
    body.performance && typeof body.performance === 'object',
    `${what}: performance block missing in ${JSON.stringify(body).slice(0, 300)}`,
  );
  assert.equal(typeof body.performance.server_total_ms, 'number', `${what}: performance.server_total_ms`);
  assert.ok(body.performance.server_total_ms >= 0, `${what}: server_total_ms >= 0`);
}

export const CONFIG_KEYS = [
  'type',
  'ttl_ms',
  'cap_records',
  'cap_bytes',
  'discard',
  'durable',
  'durability',
  'priority',
  'auto_priority',
  'auto_create',
  'idempotency_window_ms',
  'dedupe_node',
  'lease_ms',
  'claim_jitter_ms',
  'max_deliveries',
  'dead_letter',
  'leases_durable',
].sort();

export const DEFAULT_CONFIG = {
  type: 'log',
  ttl_ms: 0,
  cap_records: 0,
  cap_bytes: 0,
  discard: 'old',
  durable: false,
  durability: 'disk',
  priority: null,
  auto_priority: true,
  auto_create: true,
  idempotency_window_ms: 120000,
  dedupe_node: true,
  lease_ms: 30000,
  claim_jitter_ms: 0,
  max_deliveries: 0,
  dead_letter: null,
  leases_durable: false,
} as const;

export function assertFullConfig(cfg: any, expected: Record<string, unknown> = {}, what = ''): void {
  assert.ok(cfg && typeof cfg === 'object', `${what}: config missing`);
  assert.deepEqual(
    Object.keys(cfg).sort(),
    CONFIG_KEYS,
    `${what}: config must have exactly the 17 keys of docs/API.md "PUT /v0/topics/:topic"`,
  );
  assert.deepEqual(cfg, { ...DEFAULT_CONFIG, ...expected }, `${what}: resolved config`);
}

/** Unique topic names per test file. */
export function namer(prefix: string): (label?: string) => string {
  let n = 0;
  const run = Date.now().toString(36);
  return (label = 't') => `${prefix}.${label}.${run}.${++n}`;
}

/**
 * A router's source and dest names (from `name`) whose topics land on the same worker, or on
 * different ones, out of `workers`.
 */
export function topicPair(name: (label?: string) => string, workers: number, sameWorker: boolean): [string, string] {
  const s = name('s');
  for (let i = 0; ; i++) {
    const d = `${s}.d${i}`;
    if ((workerOf(s, workers) === workerOf(d, workers)) === sameWorker) return [s, d];
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const JSON_CT = { 'content-type': 'application/json; charset=utf-8' };

/** Extracts the raw JSON text of a member value from a compact JSON text, starting at `from`. */
export function rawMember(text: string, key: string, from = 0): { value: string; end: number } | undefined {
  const needle = JSON.stringify(key) + ':';
  const at = text.indexOf(needle, from);
  if (at < 0) return undefined;
  let i = at + needle.length;
  const start = i;
  let depth = 0;
  let inStr = false;
  for (; i < text.length; i++) {
    const c = text[i]!;
    if (inStr) {
      if (c === '\\') i++;
      else if (c === '"') {
        inStr = false;
        if (depth === 0) {
          i++;
          break;
        }
      }
      continue;
    }
    if (c === '"') inStr = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      if (depth === 0) break;
      depth--;
      if (depth === 0) {
        i++;
        break;
      }
    } else if (c === ',' && depth === 0) break;
  }
  return { value: text.slice(start, i), end: i };
}

/** Raw `data` texts of every record of a compact diff response text, in order. */
export function rawDataTexts(text: string): string[] {
  const out: string[] = [];
  const recStart = text.indexOf('"records":[');
  if (recStart < 0) return out;
  let pos = recStart;
  for (;;) {
    const seqAt = text.indexOf('"$seq":', pos);
    if (seqAt < 0) break;
    // find the end of this record object: the next '"$seq":' or the end of the records array
    const m = rawMember(text, 'data', seqAt);
    if (!m) break;
    out.push(m.value);
    pos = m.end;
  }
  return out;
}

/** WAL writes so far (`spool_wal_batches_total` in /v0/metrics): what a test counts around a run of requests. */
export async function walBatches(c: { get(p: string): Promise<Resp> }): Promise<number> {
  const r = await c.get('/v0/metrics');
  assert.equal(r.status, 200);
  const line = r.text.split('\n').find((l) => l.startsWith('spool_wal_batches_total '));
  assert.ok(line, 'spool_wal_batches_total in /v0/metrics');
  return Number(line.split(' ')[1]);
}
