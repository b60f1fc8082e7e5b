// Shared helpers for the queue conformance tests (test/http/queue*.test.ts; docs/QUEUES.md,
// docs/API.md "GET /v0/topics/:topic", "Queues"; docs/QUEUES.md "Job states"): queue creation, claim/ack/nack/extend calls that check the
// exact reply shape of QUEUES.md "Requests", the job shape, deadline windows, topic state and
// full diff reads, and a polling helper. Not a test file (no `.test.` in the name).
import assert from 'node:assert/strict';
import type { client } from '../helpers/server.js';
import { assertOk, sleep } from './util.js';
import { workerOf } from '../../src/core/names.js';

export type Api = ReturnType<typeof client>;

/** `lease_` + 24 lowercase hex digits (docs/QUEUES.md "Job states"). */
export const LEASE_RE = /^lease_[0-9a-f]{24}$/;

/** A syntactically valid lease id that no server ever issued to us. */
export const BOGUS_LEASE = 'lease_' + '0'.repeat(24);

/**
 * Tolerance (ms) when comparing a server-computed time (deadline = claim time + lease_ms) with
 * the client's Date.now() taken just before sending and just after the answer. Both read the
 * same system clock; the slack covers whole-millisecond rounding and a clock read a little
 * before the request was taken off the socket.
 */
export const CLOCK_SLACK_MS = 25;

export type JobInput = { data: unknown; tag?: string; node?: string; meta?: Record<string, unknown> };

export async function mkQueue(c: Api, name: string, config: Record<string, unknown> = {}): Promise<any> {
  const r = await c.put(`/v0/topics/${name}`, { type: 'queue', ...config });
  const b = assertOk(r, 201, `PUT queue ${name} ${JSON.stringify(config)}`);
  assert.equal(b.config.type, 'queue');
  return b.config;
}

/** Appends jobs; returns their seqs. */
export async function appendJobs(c: Api, t: string, jobs: JobInput[] | number, extra: Record<string, unknown> = {}): Promise<number[]> {
  const records = typeof jobs === 'number' ? Array.from({ length: jobs }, (_, i) => ({ data: { job: i } })) : jobs;
  const r = await c.post(`/v0/topics/${t}`, { records, ...extra });
  const b = assertOk(r, [200, 201], `append ${records.length} jobs to ${t}`);
  assert.equal(b.seqs.length, records.length);
  return b.seqs;
}

export interface Timed<T> {
  body: T;
  /** Date.now() just before the request was sent. */
  t0: number;
  /** Date.now() just after the answer arrived. */
  t1: number;
}

const isU64 = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function keys(o: object): string[] {
  return Object.keys(o).sort();
}

/** Checks one claimed job (or /work job payload minus `topic`): exact keys, types, lease id. */
export function checkJobShape(j: any, what: string, extraKeys: string[] = []): void {
  assert.ok(j && typeof j === 'object' && !Array.isArray(j), `${what}: job is not an object`);
  const want = ['$seq', '$ts', 'data', 'lease_id', 'deadline', 'deliveries', ...extraKeys];
  for (const opt of ['$node', '$tag', 'meta']) if (opt in j) want.push(opt);
  assert.deepEqual(keys(j), [...new Set(want)].sort(), `${what}: job keys of ${JSON.stringify(j).slice(0, 300)}`);
  assert.ok(isU64(j.$seq) && j.$seq >= 1, `${what}: $seq`);
  assert.ok(isU64(j.$ts), `${what}: $ts`);
  assert.match(j.lease_id, LEASE_RE, `${what}: lease_id`);
  assert.ok(isU64(j.deadline), `${what}: deadline is integer ms`);
  assert.ok(Number.isSafeInteger(j.deliveries) && j.deliveries >= 1, `${what}: deliveries >= 1`);
  if ('$node' in j) assert.equal(typeof j.$node, 'string', `${what}: $node`);
  if ('$tag' in j) assert.equal(typeof j.$tag, 'string', `${what}: $tag`);
  if ('meta' in j) assert.ok(j.meta && typeof j.meta === 'object' && !Array.isArray(j.meta), `${what}: meta is an object`);
}

/** deadline = claim (or extend) time + lease_ms, the claim happening between t0 and t1. */
export function assertDeadline(deadline: number, t0: number, t1: number, leaseMs: number, what: string, slack = CLOCK_SLACK_MS): void {
  assert.ok(
    deadline >= t0 + leaseMs - slack && deadline <= t1 + leaseMs + slack,
    `${what}: deadline ${deadline} should be request time + ${leaseMs} ms, i.e. within [${t0 + leaseMs - slack}, ${t1 + leaseMs + slack}] (it is request time + ${deadline - t0}..${deadline - t1} ms)`,
  );
}

/** POST claim expecting 200; checks the reply shape (QUEUES.md "Requests"). */
export async function claim(c: Api, t: string, body: Record<string, unknown>, what = `claim ${JSON.stringify(body)}`): Promise<Timed<any>> {
  const t0 = Date.now();
  const r = await c.post(`/v0/topics/${t}/claim`, body);
  const t1 = Date.now();
  const b = assertOk(r, 200, what);
  assert.deepEqual(keys(b), ['claimed', 'count', 'performance', 'ready', 'topic'], `${what}: reply keys`);
  assert.equal(b.topic, t, `${what}: topic`);
  assert.ok(Array.isArray(b.claimed), `${what}: claimed is an array`);
  assert.equal(b.count, b.claimed.length, `${what}: count = claimed.length`);
  assert.ok(isU64(b.ready), `${what}: ready`);
  for (let i = 0; i < b.claimed.length; i++) {
    checkJobShape(b.claimed[i], `${what}: claimed[${i}]`);
    if (i > 0) assert.ok(b.claimed[i].$seq > b.claimed[i - 1].$seq, `${what}: claimed ascending by $seq`);
  }
  if (typeof body.max === 'number' && Number.isInteger(body.max) && body.max >= 1)
    assert.ok(b.count <= Math.min(body.max, 1000), `${what}: count <= max`);
  return { body: b, t0, t1 };
}

export const seqsOf = (claimed: any[]): number[] => claimed.map((j) => j.$seq);

async function settle(c: Api, t: string, route: 'ack' | 'nack', body: Record<string, unknown>, what: string): Promise<any> {
  const r = await c.post(`/v0/topics/${t}/${route}`, body);
  const b = assertOk(r, 200, what);
  const n = route === 'ack' ? 'acked' : 'nacked';
  assert.deepEqual(keys(b), [n, 'in_flight', 'performance', 'ready', 'skipped', 'topic'].sort(), `${what}: reply keys`);
  assert.equal(b.topic, t);
  assert.ok(Number.isSafeInteger(b[n]) && b[n] >= 0, `${what}: ${n}`);
  assert.ok(Array.isArray(b.skipped) && b.skipped.every(isU64), `${what}: skipped is an array of seqs`);
  assert.ok(isU64(b.ready) && isU64(b.in_flight), `${what}: ready / in_flight`);
  return b;
}

export function ack(c: Api, t: string, body: Record<string, unknown>, what = `ack ${JSON.stringify(body)}`): Promise<any> {
  return settle(c, t, 'ack', body, what);
}

export function nack(c: Api, t: string, body: Record<string, unknown>, what = `nack ${JSON.stringify(body)}`): Promise<any> {
  return settle(c, t, 'nack', body, what);
}

export async function extend(
  c: Api,
  t: string,
  body: Record<string, unknown>,
  what = `extend ${JSON.stringify(body)}`,
): Promise<Timed<any>> {
  const t0 = Date.now();
  const r = await c.post(`/v0/topics/${t}/extend`, body);
  const t1 = Date.now();
  const b = assertOk(r, 200, what);
  assert.deepEqual(keys(b), ['deadlines', 'extended', 'performance', 'skipped', 'topic'], `${what}: reply keys`);
  assert.equal(b.topic, t);
  assert.ok(Array.isArray(b.skipped) && b.skipped.every(isU64), `${what}: skipped`);
  assert.ok(b.deadlines && typeof b.deadlines === 'object' && !Array.isArray(b.deadlines), `${what}: deadlines is an object`);
  assert.equal(Object.keys(b.deadlines).length, b.extended, `${what}: one deadline per extended seq`);
  for (const [k, v] of Object.entries(b.deadlines)) {
    assert.match(k, /^\d+$/, `${what}: deadlines key ${k}`);
    assert.ok(isU64(v), `${what}: deadlines[${k}]`);
  }
  return { body: b, t0, t1 };
}

/** GET /v0/topics/:t?touch=false expecting 200. */
export async function qstate(c: Api, t: string): Promise<any> {
  const r = await c.get(`/v0/topics/${t}?touch=false`);
  return assertOk(r, 200, `GET ${t}`);
}

/** The `queue` counters of a queue topic (checked to be exactly the three integers). */
export async function counters(c: Api, t: string): Promise<{ ready: number; in_flight: number; dead_lettered: number }> {
  const s = await qstate(c, t);
  assert.equal(s.type, 'queue', `${t}: type`);
  assert.ok(s.queue && typeof s.queue === 'object', `${t}: queue counters missing in ${JSON.stringify(s).slice(0, 300)}`);
  assert.deepEqual(keys(s.queue), ['dead_lettered', 'in_flight', 'ready'], `${t}: queue keys`);
  for (const k of ['ready', 'in_flight', 'dead_lettered']) assert.ok(isU64(s.queue[k]), `${t}: queue.${k}`);
  return s.queue;
}

/** Every record of t via paged diffs from 0 (include_tags on). */
export async function diffAll(c: Api, t: string, flags: Record<string, unknown> = {}): Promise<any[]> {
  const out: any[] = [];
  let from = 0;
  for (let i = 0; i < 10_000; i++) {
    const d = assertOk(
      await c.post(`/v0/topics/${t}/diff`, { from_seq: from, limit: 1000, include_tags: true, ...flags }),
      200,
      `diff ${t} from ${from}`,
    );
    out.push(...d.records);
    from = d.next_from_seq;
    if (d.caught_up) return out;
  }
  throw new Error(`diff of ${t} never caught up`);
}

/** Polls `f` until it returns true; fails with `what` (and the last detail) after ms. */
export async function eventually(f: () => Promise<boolean | string>, ms: number, what: string, every = 25): Promise<void> {
  const deadline = Date.now() + ms;
  let last: boolean | string = false;
  for (;;) {
    last = await f();
    if (last === true) return;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${ms} ms waiting for ${what}${typeof last === 'string' ? ` (last: ${last})` : ''}`);
    await sleep(every);
  }
}

/** Sleeps until Date.now() > t (plus a margin). */
export async function sleepPast(t: number, margin = 30): Promise<void> {
  const left = t + margin - Date.now();
  if (left > 0) await sleep(left);
}

/** Claims (as `node`, max `max`) until a claim returns at least one job or ms pass; returns it. */
export async function claimWhenReady(c: Api, t: string, body: Record<string, unknown>, ms: number, what: string): Promise<Timed<any>> {
  let got: Timed<any> | undefined;
  await eventually(
    async () => {
      got = await claim(c, t, body, what);
      return got.body.count > 0;
    },
    ms,
    what,
  );
  return got!;
}

/**
 * A queue name from `q` and a dead-letter topic name for it that hashes to another of `workers`
 * topic workers (the cross-worker paths of dead-lettering, term and redrive).
 */
export function crossWorkerPair(q: string, workers: number): { q: string; dlq: string } {
  for (let i = 0; ; i++) {
    const dlq = `${q}.dlq${i}`;
    if (workerOf(dlq, workers) !== workerOf(q, workers)) return { q, dlq };
  }
}
