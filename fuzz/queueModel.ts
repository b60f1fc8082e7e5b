// Property-based model of queue/lease semantics (docs/QUEUES.md "Job states"; docs/ARCHITECTURE.md "Queues", "Traces and replay", "Invariants"), shared by the
// unit test (test/unit/queueModel.test.ts, ~200 runs) and long fuzz sessions (fuzz/run.ts
// --queue). fast-check `fc.commands` drive the REAL queue actor, and the dead-letter topic's
// actor, on a SimHost: a manual clock, seeded RNGs, a simulated WAL whose writes and fsyncs,
// timers, peer messages and crashes (SIGKILL and power loss) happen only when a command says so.
//
// The model predicts, independently of the implementation: which seqs an ack, nack or extend
// acts on (held by the node, token matching, not expired); that a claimed or pushed job was
// claimable when its pass ran (so no job ever has two live holders) and had the delivery count
// the model expects; that a claim or a `/work` refill leaves nothing claimable behind when it
// got less than it asked for (no jitter); the ready / in_flight counters; that only a job due
// for its (max_deliveries+1)-th delivery goes to the dead-letter topic. After every command the
// lease table's internals must agree with it (one state per job, LIVE jobs only). After a crash:
// nothing confirmed acked comes back and nothing confirmed appended is missing, whenever the
// class promised it (fsync always; disk under SIGKILL), and every restored lease is one the
// model issued on a claim (never a `/work` one); the model then adopts what survived. At the
// end of a run, with everything delivered: every job that left the queue other than by ack or
// record delete is in the dead-letter topic (a crash may dead-letter twice, never lose).
// With the queue tools (`tools`), also: term (the same fencing prediction as ack; held jobs go to
// the dead-letter topic whatever their delivery count, or are released when there is none; an
// answered term stays done across a crash the class promised), redrive (all, by seq, by tag,
// with `max`; jobs copied back are adopted as new jobs of the same id), the lease list (exactly
// the model's live leases), and blocking claims (a waiting claim leaves nothing claimable
// behind). At the end no redrive, term or pending delete is left, and in a run without crashes
// every job id is in the two topics exactly as often as appends, acks and deletes say.
// Compaction steps (`compact`: seal, copy, checkpoint, swap, as the worker runs them) happen
// between queue operations: what the queue answers (its records, read back, its state: count,
// earliest_seq, head, ready, in_flight) is the same before and after, and every later command,
// crash and recovery (from the compacted segment files) is checked as before.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SimHost } from '../test/support/simHost.js';
import { resolveConfig } from '../src/protocol/topicConfig.js';
import { SlotState } from '../src/actors/topic/seqIndex.js';
import type { TopicRequest, TopicResult } from '../src/protocol/messages/rpc.js';
import type { TopicInstance } from '../src/actors/topic/instance.js';
import type { QueueState } from '../src/actors/queue/queueState.js';

const Q = 'q';
const DLQ = 'q.dlq';
const NODES = ['a', 'b', 'c'] as const;

export interface QueueCfg {
  durability: 'memory' | 'disk' | 'fsync';
  leasesDurable: boolean;
  maxDeliveries: number;
  deadLetter: boolean;
  jitterMs: number;
  leaseMs: number;
}

export const cfgArb: fc.Arbitrary<QueueCfg> = fc.record({
  durability: fc.constantFrom<QueueCfg['durability']>('memory', 'disk', 'fsync'),
  leasesDurable: fc.boolean(),
  maxDeliveries: fc.constantFrom(0, 1, 2, 3),
  deadLetter: fc.boolean(),
  jitterMs: fc.constantFrom(0, 0, 0, 50),
  leaseMs: fc.constantFrom(200, 1000),
});

interface MLease {
  id: string;
  node: string;
  deadline: number;
  connId: number;
  /** A claim reply carrying it went out (with leases_durable: only once its frame was fsynced). */
  confirmed?: boolean;
}

interface MJob {
  /** The `id` in its data: a redriven copy has the id of the job it came from. */
  id: number;
  live: boolean;
  lease?: MLease;
  readyAt?: number;
  deliveries: number;
  transit: boolean;
  /** Every lease id this job was ever given (stale-token acks pick from them). */
  pastIds: string[];
  removedBy?: 'ack' | 'dl' | 'delete';
  appendConfirmed: boolean;
  /** Moved back from the dead-letter topic by a redrive. */
  redriven?: boolean;
  /** Termed: on its way to the dead-letter topic though not due. */
  termed?: boolean;
}

type Expect =
  | { k: 'append' }
  | { k: 'claim'; seqs: number[] | undefined }
  | { k: 'ack'; acked: number[]; skipped: number[] }
  | { k: 'nack'; nacked: number; skipped: number[] }
  | { k: 'extend'; extended: number; skipped: number[] }
  | { k: 'delete'; deleted: number }
  | { k: 'state' }
  | { k: 'ok' }
  | { k: 'term'; terminated: number; released: number; skipped: number[]; seqs: number[] }
  | { k: 'redrive'; max: number; named: number[] | null };

export class Model {
  readonly jobs = new Map<number, MJob>();
  readonly expect = new Map<number, Expect>();
  readonly conns = new Map<number, { node: string; max: number; paused: boolean }>();
  nextConnId = 1;
  readonly confirmedAcks = new Set<number>();
  /** Leases pushed on `/work` streams: a restart must never bring one back. */
  readonly workLeaseIds = new Set<string>();
  /** Highest seq any append reply reported (crash checks allow unconfirmed seqs above it). */
  maxConfirmedSeq = 0;
  /** The next job id (every appended record's data carries a fresh one). */
  nextId = 1;
  /** Ids of records appended, by the append request's id, in record order. */
  readonly appendIds = new Map<number, number[]>();
  /** Jobs whose term was answered (moved): a crash the class promised must not bring one back. */
  readonly confirmedTerms = new Set<number>();
  /** Crashes in this run (the exact count of copies per id is checked only without them). */
  crashes = 0;
  /** Per id: copies there should be in the queue and dead-letter topic together (crash-free runs). */
  readonly copies = new Map<number, number>();
  /** Ids on their way to the dead-letter topic at a crash: they may be dead-lettered twice. */
  readonly mayDup = new Set<number>();
  /** Ids deleted (record delete) while on their way there: the copy may land or not. */
  readonly uncertain = new Set<number>();
}

export interface Real {
  sim: SimHost;
  cfg: QueueCfg;
  /** The queue tools run too (term, redrive, lease list, blocking claims). */
  tools: boolean;
}

// ---- helpers -----------------------------------------------------------------------------------

function body(r: TopicResult): any {
  assert.ok(r.ok, `unexpected error ${JSON.stringify(r)}`);
  return JSON.parse(Buffer.from(r.json).toString('utf8') + '}');
}

function inst(r: Real): TopicInstance {
  const i = r.sim.actor(Q).current;
  assert.ok(i, 'the queue instance exists');
  return i;
}

function qs(r: Real): QueueState {
  return inst(r).queue!;
}

function heldAt(j: MJob, t: number): boolean {
  return j.lease !== undefined && j.lease.deadline >= t;
}

function claimableAt(j: MJob, t: number): boolean {
  return j.live && !heldAt(j, t) && !(j.readyAt !== undefined && j.readyAt > t) && !j.transit;
}

/** Drops leases past their deadline and delays that elapsed, as of `t`. */
function normalize(m: Model, t: number): void {
  for (const j of m.jobs.values()) {
    if (j.lease && j.lease.deadline < t) j.lease = undefined;
    if (j.readyAt !== undefined && j.readyAt <= t) j.readyAt = undefined;
  }
}

function send(m: Model, r: Real, req: TopicRequest, e: Expect): number {
  const id = r.sim.request(req);
  m.expect.set(id, e);
  return id;
}

/** seq → data id of the live records of `topic` after `fromSeq` (a diff: cold texts are read back). */
function readIds(r: Real, topic: string, fromSeq: number, withMeta = false): Map<number, { id: number; from?: unknown }> {
  const out = new Map<number, { id: number; from?: unknown }>();
  if (!r.sim.actor(topic).current) return out;
  for (let from = fromSeq; ;) {
    const id = r.sim.request({
      op: 'diff',
      topic,
      fromSeq: from,
      limit: 1000,
      nodes: null,
      includeTags: false,
      includeMeta: withMeta,
      waitMs: 0,
      maxBatchBytes: 0,
    });
    const d = body(r.sim.replies.get(id)!);
    r.sim.replies.delete(id);
    for (const rec of d.records as { $seq: number; data: { id: number }; meta?: Record<string, unknown> }[])
      out.set(rec.$seq, { id: rec.data.id, from: rec.meta?.$dead_letter_from });
    if (d.caught_up) return out;
    from = d.next_from_seq;
  }
}

/** Jobs a redrive copied into the queue since the last look: new jobs with their origin's id. */
function absorbRedriven(m: Model, r: Real): void {
  if (!r.tools) return;
  const i = inst(r);
  // A copy may sit below an append that became visible in the same step: look at every slot.
  let first = 0;
  for (let s = i.earliest(); s <= i.head && first === 0; s++) if (i.index.state(s) === SlotState.LIVE && !m.jobs.has(s)) first = s;
  if (first === 0) return;
  // Appends become visible with their reply, which step() observed first: a visible job the
  // model does not know is a copy a redrive made.
  for (const [seq, { id }] of readIds(r, Q, first - 1)) {
    if (m.jobs.has(seq)) continue;
    // Its origin left the queue (or is leaving it in this very step: absorbTransit comes later),
    // or a crash during its move left it in both topics (dead-lettered twice, never lost).
    const origin = [...m.jobs.values()].some((j) => j.id === id && (!j.live || j.transit));
    assert.ok(origin || m.mayDup.has(id) || m.uncertain.has(id), `job ${seq} (id ${id}) appeared, and no job of that id left the queue`);
    m.jobs.set(seq, { id, live: true, deliveries: 0, transit: false, pastIds: [], appendConfirmed: false, redriven: true });
  }
}

function leasedSeqs(m: Model): number[] {
  return [...m.jobs].filter(([, j]) => j.live && j.lease).map(([s]) => s);
}

function pick<T>(xs: readonly T[], picks: readonly number[]): T[] {
  return xs.length === 0 ? [] : picks.map((p) => xs[p % xs.length]!);
}

// ---- after every command -------------------------------------------------------------------

/** Leases the server granted since `before` (a claim pass, a refill, a jitter window). */
function absorbLeases(m: Model, r: Real, before: Set<string>): void {
  const q = qs(r);
  const fresh = q.table.active
    .entries()
    .filter(([, l]) => !before.has(l.id))
    .sort((a, b) => a[1].deadlineMs - b[1].deadlineMs || a[0] - b[0]);
  for (const [seq, l] of fresh) {
    const passAt = l.deadlineMs - r.cfg.leaseMs;
    const j = m.jobs.get(seq);
    assert.ok(j, `job ${seq} leased but the model never saw it appended`);
    assert.ok(j.live, `job ${seq} leased but it left the queue (${j.removedBy})`);
    assert.ok(!heldAt(j, passAt), `job ${seq} leased to ${l.node} at ${passAt} while ${j.lease?.node} holds it until ${j.lease?.deadline}`);
    assert.ok(!(j.readyAt !== undefined && j.readyAt > passAt), `job ${seq} leased during its nack delay`);
    assert.ok(!j.transit, `job ${seq} leased while moving to the dead-letter topic`);
    const c = inst(r).config;
    if (c.max_deliveries > 0 && c.dead_letter !== null)
      assert.ok(j.deliveries < c.max_deliveries, `job ${seq} delivered a ${j.deliveries + 1}th time past max_deliveries`);
    const d = q.table.deliveries.get(seq)!;
    assert.equal(d, j.deliveries + 1, `job ${seq} deliveries`);
    if (l.connId !== 0) {
      const conn = m.conns.get(l.connId);
      assert.ok(conn, `job ${seq} pushed on connection ${l.connId}, which is closed`);
      assert.equal(l.node, conn.node);
    }
    j.deliveries = d;
    j.lease = { id: l.id, node: l.node, deadline: l.deadlineMs, connId: l.connId };
    j.pastIds.push(l.id);
    if (l.connId !== 0) m.workLeaseIds.add(l.id);
  }
}

/** Jobs that started moving to the dead-letter topic were due; jobs that finished are gone. */
function absorbTransit(m: Model, r: Real): void {
  const i = inst(r);
  const q = qs(r);
  for (const [seq, j] of m.jobs) {
    if (!j.live) continue;
    const inTransit = q.table.inTransit.has(seq);
    if (inTransit && !j.transit) {
      assert.ok(
        i.config.dead_letter !== null && i.config.max_deliveries > 0 && j.deliveries >= i.config.max_deliveries,
        `job ${seq} sent to the dead-letter topic after ${j.deliveries} deliveries`,
      );
      j.transit = true;
    }
    if (j.termed && !inTransit && i.index.state(seq) === SlotState.LIVE) j.termed = false; // refused, or a crash undid it
    const live = i.index.state(seq) === SlotState.LIVE;
    if (j.transit && !live) {
      j.live = false;
      j.removedBy = 'dl';
      j.lease = undefined;
    }
    if (j.transit && live && !inTransit) j.transit = false; // given up (not in this model's commands)
  }
}

function observeReplies(m: Model, r: Real, appendsOnly: boolean): void {
  for (const [id, res] of r.sim.replies) {
    const e = m.expect.get(id);
    if (appendsOnly && e?.k !== 'append') continue;
    r.sim.replies.delete(id);
    if (!e) continue;
    m.expect.delete(id);
    switch (e.k) {
      case 'append': {
        const b = body(res);
        const ids = m.appendIds.get(id)!;
        for (let s = b.first_seq; s <= b.last_seq; s++) {
          const j = m.jobs.get(s);
          if (j) j.appendConfirmed = true;
          else m.jobs.set(s, { id: ids[s - b.first_seq]!, live: true, deliveries: 0, transit: false, pastIds: [], appendConfirmed: true });
        }
        for (const x of ids) m.copies.set(x, (m.copies.get(x) ?? 0) + 1);
        m.maxConfirmedSeq = Math.max(m.maxConfirmedSeq, b.last_seq);
        break;
      }
      case 'term': {
        const b = body(res);
        assert.equal(b.terminated, e.terminated, 'terminated');
        assert.equal(b.released, e.released, 'released');
        assert.deepEqual(b.skipped, e.skipped, 'term skipped');
        // Answered at both ack points: the moves are done, and (as for acks) kept if promised.
        if (e.terminated > 0) for (const s of e.seqs) m.confirmedTerms.add(s);
        break;
      }
      case 'redrive': {
        // Nothing was dead-lettered when it read: the dead-letter topic did not exist yet.
        if (!res.ok && res.code === 'topic_not_found' && res.detail?.topic === DLQ) break;
        const b = body(res);
        assert.ok(b.redriven <= e.max, `redriven ${b.redriven} > max ${e.max}`);
        for (const s of b.skipped as number[]) assert.ok(e.named?.includes(s), `skipped ${s} was not named`);
        // Every copy in the queue now reached the queue's ack point before the originals went.
        for (const j of m.jobs.values()) if (j.redriven && j.live) j.appendConfirmed = true;
        break;
      }
      case 'claim': {
        const b = body(res);
        const got = (b.claimed as { $seq: number; lease_id: string; deliveries: number }[]).map((c) => c.$seq);
        assert.equal(b.count, got.length);
        for (const c of b.claimed as { $seq: number; lease_id: string; deliveries: number }[]) {
          const j = m.jobs.get(c.$seq);
          // A job acked, nacked or deleted between the pass and a gated reply is left out.
          if (j?.lease?.id === c.lease_id) {
            assert.equal(c.deliveries, j.deliveries);
            j.lease.confirmed = true;
          }
        }
        assert.deepEqual(
          [...got].sort((x, y) => x - y),
          got,
          'claimed is ascending by $seq',
        );
        break;
      }
      case 'ack': {
        const b = body(res);
        assert.equal(b.acked, e.acked.length, 'acked');
        assert.deepEqual(b.skipped, e.skipped, 'ack skipped');
        // Confirmed once the reply is out: it waits for the class's ack point.
        for (const s of e.acked) m.confirmedAcks.add(s);
        break;
      }
      case 'nack': {
        const b = body(res);
        assert.equal(b.nacked, e.nacked, 'nacked');
        assert.deepEqual(b.skipped, e.skipped, 'nack skipped');
        break;
      }
      case 'extend': {
        const b = body(res);
        assert.equal(b.extended, e.extended, 'extended');
        assert.deepEqual(b.skipped, e.skipped, 'extend skipped');
        break;
      }
      case 'delete':
        assert.equal(body(res).deleted, e.deleted, 'deleted');
        break;
      case 'state': {
        const q = body(res).queue as { ready: number; in_flight: number };
        const now = r.sim.nowMs;
        const jobs = [...m.jobs.values()];
        assert.equal(q.ready, jobs.filter((j) => claimableAt(j, now)).length, 'state: queue.ready');
        assert.equal(q.in_flight, jobs.filter((j) => j.live && heldAt(j, now)).length, 'state: queue.in_flight');
        break;
      }
      case 'ok':
        assert.ok(res.ok, JSON.stringify(res));
        break;
    }
  }
}

function observeWork(m: Model, r: Real): void {
  for (const ev of r.sim.work.splice(0)) {
    if (ev.k === 'end') continue;
    const text = Buffer.from(ev.frames).toString('utf8');
    for (const frame of text.split('\n\n').filter((f) => f.length > 0)) {
      const lines = frame.split('\n');
      const id = Number(lines[0]!.slice(4));
      const data = JSON.parse(lines[2]!.slice(6)) as { $seq: number; lease_id: string; deliveries: number };
      assert.equal(id, data.$seq, 'a job frame id is its $seq');
      const j = m.jobs.get(data.$seq);
      if (j?.lease?.id === data.lease_id) assert.equal(j.lease.connId, ev.connId, 'pushed on the connection that holds the lease');
    }
  }
}

/** The lease table's own invariants, and the model's view of every job at `now`. */
function checkInvariants(m: Model, r: Real): void {
  const i = inst(r);
  const q = qs(r);
  const t = q.table;
  const now = r.sim.nowMs;
  for (const s of [...t.active.keys(), ...t.delayed.keys(), ...t.inTransit])
    assert.equal(i.index.state(s), SlotState.LIVE, `job ${s} in the lease table but not live`);
  for (const s of t.active.keys()) assert.ok(!t.delayed.has(s) && !t.inTransit.has(s), `job ${s} leased and delayed/in transit`);
  for (const s of t.delayed.keys()) assert.ok(!t.inTransit.has(s), `job ${s} delayed and in transit`);
  for (const connId of t.connsCounted()) assert.equal(t.heldBy(connId), t.connLeases(connId).length, `lease count of connection ${connId}`);
  normalize(m, now);
  let ready = 0;
  let inFlight = 0;
  for (const [seq, j] of m.jobs) {
    const live = i.index.state(seq) === SlotState.LIVE && seq <= i.head;
    assert.equal(live, j.live, `job ${seq}: server live ${live}, model live ${j.live} (${j.removedBy})`);
    if (!j.live) continue;
    const l = t.active.get(seq);
    if (j.lease) assert.equal(l?.id, j.lease.id, `job ${seq}: server lease ${l?.id}, model ${j.lease.id}`);
    else assert.ok(!l || l.deadlineMs < now, `job ${seq}: the server holds lease ${l?.id} the model does not`);
    if (claimableAt(j, now)) ready++;
    if (heldAt(j, now)) inFlight++;
  }
  for (const [connId, conn] of m.conns) {
    const held = [...m.jobs.values()].filter((j) => j.live && j.lease?.connId === connId).length;
    assert.ok(held <= conn.max, `connection ${connId} holds ${held} > max ${conn.max}`);
    // Without a jitter window a connection with room leaves nothing claimable behind.
    if (r.cfg.jitterMs === 0 && !conn.paused && held < conn.max)
      assert.equal(ready, 0, `connection ${connId} has room (${held}/${conn.max}) while ${ready} job(s) are ready`);
  }
  // Without a jitter window a blocking claim that waits leaves nothing claimable behind.
  if (r.cfg.jitterMs === 0 && q.waiting.length > 0) assert.equal(ready, 0, `a claim waits while ${ready} job(s) are ready`);
  // The counters the topic state reports, computed as the server does after a sweep.
  t.sweep(now);
  assert.equal(q.ready(i.count), ready, 'ready');
  assert.equal(q.inFlight, inFlight, 'in_flight');
}

/** Runs one command's action, then everything that must hold after it. */
function step(m: Model, r: Real, act: () => void): void {
  const before = new Set([...qs(r).table.active.values()].map((l) => l.id));
  act();
  observeReplies(m, r, true); // appends first: a refill in the same step may lease the new jobs
  absorbRedriven(m, r);
  absorbLeases(m, r, before);
  absorbTransit(m, r);
  observeWork(m, r);
  observeReplies(m, r, false);
  checkInvariants(m, r);
}

/** Moves the clock timer by timer, checking after each, so no pass happens unobserved. */
function advanceBy(m: Model, r: Real, ms: number): void {
  const until = r.sim.nowMs + ms;
  for (let due = r.sim.nextTimerAtMs(); due !== undefined && due <= until; due = r.sim.nextTimerAtMs()) {
    step(m, r, () => r.sim.advance(Math.max(0, due! - r.sim.nowMs)));
  }
  step(m, r, () => r.sim.advance(until - r.sim.nowMs));
}

// ---- commands ----------------------------------------------------------------------------------

type Cmd = fc.Command<Model, Real>;

export class Append implements Cmd {
  constructor(readonly n: number) {}
  check = () => true;
  run(m: Model, r: Real): void {
    const ids = Array.from({ length: this.n }, () => m.nextId++);
    const records = ids.map((id, k) => ({ data: { k, id }, ...(k % 2 ? { tag: 't' } : {}), ...(k % 3 === 0 ? { meta: { m: k } } : {}) }));
    step(m, r, () =>
      m.appendIds.set(
        send(
          m,
          r,
          { op: 'append', topic: Q, body: Buffer.from(JSON.stringify({ records })), returnSeqs: false, headerIdemKey: undefined },
          { k: 'append' },
        ),
        ids,
      ),
    );
  }
  toString = () => `append(${this.n})`;
}

export class Claim implements Cmd {
  constructor(
    readonly node: number,
    readonly max: number,
    /** A blocking claim (tools only): it waits this long for a job when none is claimable. */
    readonly waitMs = 0,
  ) {}
  check = () => true;
  run(m: Model, r: Real): void {
    const node = NODES[this.node]!;
    const before = new Set([...qs(r).table.active.values()].map((l) => l.id));
    let id = 0;
    step(m, r, () => {
      id = r.sim.request({
        op: 'claim',
        topic: Q,
        node,
        max: this.max,
        leaseMs: r.cfg.leaseMs,
        ...(this.waitMs > 0 ? { waitMs: this.waitMs } : {}),
      });
      m.expect.set(id, { k: 'claim', seqs: undefined });
    });
    if (r.cfg.jitterMs > 0) return;
    // Fewer than asked for: nothing claimable may be left behind (the refill after it included).
    const got = [...qs(r).table.active.values()].filter((l) => !before.has(l.id) && l.connId === 0 && l.node === node).length;
    if (got < this.max)
      for (const [seq, j] of m.jobs) assert.ok(!claimableAt(j, r.sim.nowMs), `claim got ${got} < ${this.max} but job ${seq} is claimable`);
  }
  toString = () => `claim(${NODES[this.node]}, max ${this.max}${this.waitMs > 0 ? `, wait ${this.waitMs}` : ''})`;
}

type TokenMode = 'none' | 'current' | 'stale' | 'empty';

function fenced(m: Model, r: Real, node: string, picks: number[], mode: TokenMode) {
  const seqs = pick(leasedSeqs(m).concat([1, 2, 3, 999]), picks);
  const leaseIds =
    mode === 'none'
      ? null
      : seqs.map((s) => {
          const j = m.jobs.get(s);
          if (mode === 'empty' || !j) return '';
          if (mode === 'current') return j.lease?.id ?? '';
          return j.pastIds.find((id) => id !== j.lease?.id) ?? 'lease_0000000000000000000000ff';
        });
  // The prediction: held by the node, token matching, not expired, each seq acted on once.
  const now = r.sim.nowMs;
  const acted = new Set<number>();
  const skipped: number[] = [];
  seqs.forEach((s, k) => {
    const j = m.jobs.get(s);
    const token = leaseIds?.[k];
    const ok =
      j !== undefined &&
      j.live &&
      heldAt(j, now) &&
      j.lease!.node === node &&
      (token === undefined || token === '' || token === j.lease!.id) &&
      !acted.has(s);
    if (ok) acted.add(s);
    else skipped.push(s);
  });
  return { seqs, leaseIds, acted, skipped };
}

export class Ack implements Cmd {
  constructor(
    readonly node: number,
    readonly picks: number[],
    readonly mode: TokenMode,
  ) {}
  check = () => true;
  run(m: Model, r: Real): void {
    const node = NODES[this.node]!;
    step(m, r, () => {
      const f = fenced(m, r, node, this.picks, this.mode);
      if (f.seqs.length === 0) return;
      send(m, r, { op: 'ack', topic: Q, node, seqs: f.seqs, leaseIds: f.leaseIds }, { k: 'ack', acked: [...f.acted], skipped: f.skipped });
      for (const s of f.acted) {
        const j = m.jobs.get(s)!;
        j.live = false;
        j.lease = undefined;
        j.removedBy = 'ack';
        m.copies.set(j.id, (m.copies.get(j.id) ?? 0) - 1);
      }
    });
  }
  toString = () => `ack(${NODES[this.node]}, picks ${this.picks}, ${this.mode})`;
}

export class Nack implements Cmd {
  constructor(
    readonly node: number,
    readonly picks: number[],
    readonly mode: TokenMode,
    readonly delayMs: number,
  ) {}
  check = () => true;
  run(m: Model, r: Real): void {
    const node = NODES[this.node]!;
    step(m, r, () => {
      const f = fenced(m, r, node, this.picks, this.mode);
      if (f.seqs.length === 0) return;
      send(
        m,
        r,
        { op: 'nack', topic: Q, node, seqs: f.seqs, leaseIds: f.leaseIds, delayMs: this.delayMs },
        { k: 'nack', nacked: f.acted.size, skipped: f.skipped },
      );
      for (const s of f.acted) {
        const j = m.jobs.get(s)!;
        j.lease = undefined;
        if (this.delayMs > 0) j.readyAt = r.sim.nowMs + this.delayMs;
      }
    });
  }
  toString = () => `nack(${NODES[this.node]}, picks ${this.picks}, ${this.mode}, delay ${this.delayMs})`;
}

export class Extend implements Cmd {
  constructor(
    readonly node: number,
    readonly picks: number[],
    readonly mode: TokenMode,
  ) {}
  check = () => true;
  run(m: Model, r: Real): void {
    const node = NODES[this.node]!;
    step(m, r, () => {
      const f = fenced(m, r, node, this.picks, this.mode);
      if (f.seqs.length === 0) return;
      send(
        m,
        r,
        { op: 'extend', topic: Q, node, seqs: f.seqs, leaseIds: f.leaseIds, leaseMs: r.cfg.leaseMs },
        { k: 'extend', extended: f.acted.size, skipped: f.skipped },
      );
      for (const s of f.acted) m.jobs.get(s)!.lease!.deadline = r.sim.nowMs + r.cfg.leaseMs;
    });
  }
  toString = () => `extend(${NODES[this.node]}, picks ${this.picks}, ${this.mode})`;
}

export class Term implements Cmd {
  constructor(
    readonly node: number,
    readonly picks: number[],
    readonly mode: TokenMode,
  ) {}
  check = () => true;
  run(m: Model, r: Real): void {
    const node = NODES[this.node]!;
    step(m, r, () => {
      const f = fenced(m, r, node, this.picks, this.mode);
      if (f.seqs.length === 0) return;
      const dl = r.cfg.deadLetter;
      const acted = [...f.acted];
      send(
        m,
        r,
        { op: 'term', topic: Q, node, seqs: f.seqs, leaseIds: f.leaseIds, reason: this.picks[0]! % 2 ? 'why' : null },
        { k: 'term', terminated: dl ? acted.length : 0, released: dl ? 0 : acted.length, skipped: f.skipped, seqs: acted },
      );
      for (const s of acted) {
        const j = m.jobs.get(s)!;
        j.lease = undefined;
        // With a dead-letter topic it is in transit now (not due: its retries are not spent).
        if (dl) j.transit = j.termed = true;
      }
    });
  }
  toString = () => `term(${NODES[this.node]}, picks ${this.picks}, ${this.mode})`;
}

export class Redrive implements Cmd {
  constructor(
    readonly kind: 'all' | 'seqs' | 'match',
    readonly max: number,
    readonly picks: number[],
  ) {}
  check = (m: Readonly<Model>) => m.jobs.size > 0;
  run(m: Model, r: Real): void {
    if (!r.cfg.deadLetter) return;
    step(m, r, () => {
      const head = r.sim.actor(DLQ).current?.head ?? 0;
      const named = this.kind === 'seqs' ? [...new Set(this.picks.map((p) => 1 + (p % (head + 2))))].sort((x, y) => x - y) : null;
      const match = this.kind === 'match' ? { op: 'Eq' as const, value: 't' } : null;
      send(
        m,
        r,
        { op: 'redrive', topic: Q, from: null, seqs: named, match, max: this.max, prefixes: null },
        { k: 'redrive', max: this.max, named },
      );
    });
  }
  toString = () => `redrive(${this.kind}, max ${this.max}, picks ${this.picks})`;
}

/** The lease list is exactly the model's live leases (and pages). */
export class Leases implements Cmd {
  constructor(readonly limit: number) {}
  check = () => true;
  run(m: Model, r: Real): void {
    step(m, r, () => {
      const now = r.sim.nowMs;
      normalize(m, now);
      const want = [...m.jobs].filter(([, j]) => j.live && heldAt(j, now)).sort((a, b) => a[0] - b[0]);
      const got: { $seq: number; node: string; deliveries: number; deadline: number; via: string }[] = [];
      for (let from = 0, pages = 0; pages < 100; pages++) {
        const id = r.sim.request({ op: 'leases', topic: Q, afterSeq: from, limit: this.limit, node: null });
        const b = body(r.sim.replies.get(id)!);
        r.sim.replies.delete(id);
        got.push(...b.leases);
        assert.equal(b.in_flight, want.length, 'leases: in_flight');
        if (b.next_from_seq === undefined) break;
        assert.equal(b.leases.length, this.limit, 'a page before the last is full');
        from = b.next_from_seq;
      }
      assert.deepEqual(
        got.map((l) => [l.$seq, l.node, l.deliveries, l.deadline, l.via]),
        want.map(([seq, j]) => [seq, j.lease!.node, j.deliveries, j.lease!.deadline, j.lease!.connId === 0 ? 'claim' : 'work']),
        "leases: the model's live leases",
      );
    });
  }
  toString = () => `leases(limit ${this.limit})`;
}

export class Advance implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  run(m: Model, r: Real): void {
    advanceBy(m, r, this.ms);
  }
  toString = () => `advance(${this.ms})`;
}

export class Wal implements Cmd {
  constructor(readonly what: 'write' | 'sync' | 'writeOne') {}
  check = () => true;
  run(m: Model, r: Real): void {
    step(m, r, () => {
      if (this.what === 'write') r.sim.writeFrames();
      else if (this.what === 'writeOne') r.sim.writeFrames(1);
      else r.sim.syncFrames();
    });
  }
  toString = () => `wal(${this.what})`;
}

export class Peer implements Cmd {
  check = () => true;
  run(m: Model, r: Real): void {
    step(m, r, () => void r.sim.deliverPeer());
  }
  toString = () => 'deliverPeer';
}

export class WorkOpen implements Cmd {
  constructor(
    readonly node: number,
    readonly max: number,
  ) {}
  check = (m: Readonly<Model>) => m.conns.size < 3;
  run(m: Model, r: Real): void {
    const connId = m.nextConnId++;
    const node = NODES[this.node]!;
    m.conns.set(connId, { node, max: this.max, paused: false });
    step(m, r, () => send(m, r, { op: 'workOpen', topic: Q, connId, node, max: this.max, leaseMs: r.cfg.leaseMs }, { k: 'ok' }));
  }
  toString = () => `workOpen(${NODES[this.node]}, max ${this.max})`;
}

export class WorkClose implements Cmd {
  constructor(readonly which: number) {}
  check = (m: Readonly<Model>) => m.conns.size > 0;
  run(m: Model, r: Real): void {
    const connId = [...m.conns.keys()][this.which % m.conns.size]!;
    m.conns.delete(connId);
    // Every lease delivered on the connection is released at once.
    for (const j of m.jobs.values()) if (j.lease?.connId === connId) j.lease = undefined;
    step(m, r, () => send(m, r, { op: 'workClose', topic: Q, connId }, { k: 'ok' }));
  }
  toString = () => `workClose(#${this.which})`;
}

export class WorkFlow implements Cmd {
  constructor(
    readonly which: number,
    readonly paused: boolean,
  ) {}
  check = (m: Readonly<Model>) => m.conns.size > 0;
  run(m: Model, r: Real): void {
    const connId = [...m.conns.keys()][this.which % m.conns.size]!;
    m.conns.get(connId)!.paused = this.paused;
    step(m, r, () => send(m, r, { op: 'workFlow', topic: Q, connId, paused: this.paused }, { k: 'ok' }));
  }
  toString = () => `workFlow(#${this.which}, ${this.paused ? 'pause' : 'resume'})`;
}

export class RecordDelete implements Cmd {
  constructor(readonly below: number) {}
  check = () => true;
  run(m: Model, r: Real): void {
    step(m, r, () => {
      const before = this.below;
      let deleted = 0;
      normalize(m, r.sim.nowMs);
      for (const [s, j] of m.jobs) {
        if (s >= before || !j.live) continue;
        // Deleted while on its way to the dead-letter topic: the copy may land there or not.
        if (j.transit) m.uncertain.add(j.id);
        j.live = false;
        j.lease = undefined;
        j.removedBy = 'delete';
        j.transit = false;
        j.termed = false;
        m.copies.set(j.id, (m.copies.get(j.id) ?? 0) - 1);
        deleted++;
      }
      send(m, r, { op: 'deleteRecords', topic: Q, beforeSeq: before, match: null }, { k: 'delete', deleted });
    });
  }
  toString = () => `delete(before ${this.below})`;
}

export class State implements Cmd {
  check = () => true;
  run(m: Model, r: Real): void {
    step(m, r, () => send(m, r, { op: 'state', topic: Q, touch: false }, { k: 'state' }));
  }
  toString = () => 'state';
}

/** Segments compaction steps rewrote or unlinked over every run so far (the unit test checks it did some). */
export const compactionCoverage = { passes: 0, rewritten: 0, unlinked: 0, sealed: 0 };

/** What a client sees of the queue: its state figures and its records, read (cold ones from segments). */
function clientView(r: Real): unknown {
  const ask = (req: TopicRequest): any => {
    const id = r.sim.request(req);
    const res = r.sim.replies.get(id);
    assert.ok(res, `no reply to ${req.op}`);
    r.sim.replies.delete(id);
    return body(res);
  };
  const s = ask({ op: 'state', topic: Q, touch: false });
  const records: unknown[] = [];
  for (let from = 0; ;) {
    const d = ask({
      op: 'diff',
      topic: Q,
      fromSeq: from,
      limit: 1000,
      nodes: null,
      includeTags: true,
      includeMeta: true,
      waitMs: 0,
      maxBatchBytes: 0,
    });
    for (const rec of d.records as { $seq: number; data: unknown; tag?: string; meta?: unknown }[])
      records.push([rec.$seq, rec.data, rec.tag, rec.meta]);
    if (d.caught_up || d.records.length === 0) break;
    from = d.next_from_seq;
  }
  return { count: s.count, earliest: s.earliest_seq, head: s.head_seq, bytes: s.bytes, queue: s.queue, records };
}

export class Compact implements Cmd {
  constructor(readonly livePercent: number) {}
  check = () => true;
  run(m: Model, r: Real): void {
    // Every frame written first (the pass does so): heads that move with it move before the look.
    step(m, r, () => r.sim.writeFrames());
    const before = clientView(r);
    step(m, r, () => {
      const done = r.sim.compact(this.livePercent);
      compactionCoverage.passes++;
      compactionCoverage.rewritten += done.rewritten;
      compactionCoverage.unlinked += done.unlinked;
      compactionCoverage.sealed += done.sealed;
    });
    assert.deepEqual(clientView(r), before, 'compaction changed what the queue answers');
  }
  toString = () => `compact(${this.livePercent}%)`;
}

export class Checkpoint implements Cmd {
  check = () => true;
  run(m: Model, r: Real): void {
    step(m, r, () => r.sim.takeCheckpoint());
  }
  toString = () => 'checkpoint';
}

export class Crash implements Cmd {
  constructor(
    readonly mode: 'kill' | 'power',
    readonly keep: number,
  ) {}
  check = () => true;
  run(m: Model, r: Real): void {
    r.sim.crash(this.mode, this.keep);
    afterCrash(m, r, this.mode);
    checkInvariants(m, r);
  }
  toString = () => `crash(${this.mode}${this.mode === 'power' ? `, keep ${this.keep}` : ''})`;
}

/** What a crash must have kept, then the model adopts what survived. */
function afterCrash(m: Model, r: Real, mode: 'kill' | 'power'): void {
  const i = inst(r);
  const t = qs(r).table;
  const cls = r.cfg.durability;
  const promised = cls === 'fsync' || (cls === 'disk' && mode === 'kill');
  const live = (s: number) => s <= i.head && i.index.state(s) === SlotState.LIVE;
  for (const [seq, j] of m.jobs) {
    if (promised && m.confirmedAcks.has(seq)) assert.ok(!live(seq), `acked job ${seq} came back after a ${mode} crash (${cls})`);
    if (promised && j.appendConfirmed && j.live && !j.transit) assert.ok(live(seq), `appended job ${seq} lost in a ${mode} crash (${cls})`);
  }
  for (const [seq, l] of t.active.entries()) {
    assert.ok(l.connId === 0 && !m.workLeaseIds.has(l.id), `a /work lease (job ${seq}) survived a restart`);
    const j = m.jobs.get(seq);
    assert.ok(j?.pastIds.includes(l.id), `restored lease ${l.id} of job ${seq} was never issued`);
  }
  // leases_durable: a claim answered only once its lease was fsynced, so the lease survives.
  if (r.cfg.leasesDurable) {
    for (const [seq, j] of m.jobs) {
      if (!j.live || !j.lease?.confirmed || j.lease.deadline < r.sim.nowMs || !live(seq)) continue;
      assert.equal(t.active.get(seq)?.id, j.lease.id, `durable lease of job ${seq} lost in a ${mode} crash`);
    }
  }
  // Adopt: the surviving jobs, leases, delays and delivery counts; every stream and request is gone.
  m.crashes++;
  for (const j of m.jobs.values()) if (j.transit) m.mayDup.add(j.id);
  const unknown = [...Array(i.head).keys()].map((k) => k + 1).filter((s) => live(s) && !m.jobs.has(s));
  const idsOf = unknown.length > 0 ? readIds(r, Q, Math.min(...unknown) - 1) : new Map<number, { id: number }>();
  for (const s of unknown) {
    // An append whose reply never came out may still have survived, or a redrive's batch.
    const id = idsOf.get(s)!.id;
    const redriven = [...m.jobs.values()].some((j) => j.id === id && !j.live);
    assert.ok(redriven || s > m.maxConfirmedSeq || !promised, `job ${s} appeared from nowhere`);
    m.jobs.set(s, { id, live: true, deliveries: 0, transit: false, pastIds: [], appendConfirmed: false, redriven });
  }
  // A term answered before the crash stays done where the class promised it.
  for (const seq of m.confirmedTerms) if (promised) assert.ok(!live(seq), `termed job ${seq} came back after a ${mode} crash (${cls})`);
  for (const seq of [...m.confirmedTerms]) if (live(seq)) m.confirmedTerms.delete(seq);
  for (const [seq, j] of m.jobs) {
    j.live = live(seq);
    if (!j.live && !j.removedBy) j.removedBy = 'delete';
    if (j.live) j.removedBy = undefined;
    const l = t.active.get(seq);
    j.lease = l ? { id: l.id, node: l.node, deadline: l.deadlineMs, connId: 0 } : undefined;
    j.readyAt = t.delayed.get(seq);
    j.deliveries = t.deliveries.get(seq) ?? 0;
    j.transit = false;
    j.termed = false;
  }
  // An ack the class did not promise to keep (disk under power loss, memory) may be undone: the
  // job is back, and is no longer an ack a later crash must keep.
  for (const seq of [...m.confirmedAcks]) if (live(seq)) m.confirmedAcks.delete(seq);
  m.conns.clear();
  m.expect.clear();
}

const appendArb = fc.integer({ min: 1, max: 5 }).map((n): Cmd => new Append(n));
const claimArb = fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 1, max: 4 })).map(([n, max]): Cmd => new Claim(n, max));
const ackArb = fc
  .tuple(
    fc.integer({ min: 0, max: 2 }),
    fc.array(fc.nat(20), { minLength: 1, maxLength: 3 }),
    fc.constantFrom<TokenMode>('none', 'current', 'current', 'stale', 'empty'),
  )
  .map(([n, p, t]): Cmd => new Ack(n, p, t));
const nackArb = fc
  .tuple(
    fc.integer({ min: 0, max: 2 }),
    fc.array(fc.nat(20), { minLength: 1, maxLength: 2 }),
    fc.constantFrom<TokenMode>('none', 'current', 'stale'),
    fc.constantFrom(0, 0, 150),
  )
  .map(([n, p, t, d]): Cmd => new Nack(n, p, t, d));
const extendArb = fc
  .tuple(
    fc.integer({ min: 0, max: 2 }),
    fc.array(fc.nat(20), { minLength: 1, maxLength: 2 }),
    fc.constantFrom<TokenMode>('none', 'current', 'stale'),
  )
  .map(([n, p, t]): Cmd => new Extend(n, p, t));
const advanceArb = fc.constantFrom(10, 60, 199, 201, 450, 1001).map((ms): Cmd => new Advance(ms));
const walArb = fc.constantFrom<'write' | 'sync' | 'writeOne'>('write', 'sync', 'writeOne', 'write').map((w): Cmd => new Wal(w));

const termArb = fc
  .tuple(
    fc.integer({ min: 0, max: 2 }),
    fc.array(fc.nat(20), { minLength: 1, maxLength: 3 }),
    fc.constantFrom<TokenMode>('none', 'current', 'current', 'stale'),
  )
  .map(([n, p, t]): Cmd => new Term(n, p, t));
const redriveArb = fc
  .tuple(
    fc.constantFrom<'all' | 'seqs' | 'match'>('all', 'all', 'seqs', 'match'),
    fc.constantFrom(1, 2, 10_000, 10_000),
    fc.array(fc.nat(30), { minLength: 1, maxLength: 4 }),
  )
  .map(([k, max, p]): Cmd => new Redrive(k, max, p));
const claimWaitArb = fc
  .tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 1, max: 3 }), fc.constantFrom(100, 700))
  .map(([n, max, w]): Cmd => new Claim(n, max, w));

/** The command mix: arbitraries listed more than once are drawn more often. */
export const commandArbs: fc.Arbitrary<Cmd>[] = [
  appendArb,
  appendArb,
  appendArb,
  claimArb,
  claimArb,
  claimArb,
  ackArb,
  ackArb,
  ackArb,
  nackArb,
  extendArb,
  advanceArb,
  advanceArb,
  walArb,
  walArb,
  walArb,
  fc.constant<Cmd>(new Peer()),
  fc.constant<Cmd>(new Peer()),
  fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 1, max: 3 })).map(([n, max]): Cmd => new WorkOpen(n, max)),
  fc.nat(5).map((w): Cmd => new WorkClose(w)),
  fc.tuple(fc.nat(5), fc.boolean()).map(([w, p]): Cmd => new WorkFlow(w, p)),
  fc.integer({ min: 1, max: 8 }).map((b): Cmd => new RecordDelete(b)),
  fc.constant<Cmd>(new State()),
  fc.constant<Cmd>(new Checkpoint()),
  fc.constantFrom(50, 100).map((p): Cmd => new Compact(p)),
  fc.tuple(fc.constantFrom<'kill' | 'power'>('kill', 'power'), fc.nat(4)).map(([mode, keep]): Cmd => new Crash(mode, keep)),
];

/** The mix with the queue tools: term, redrive, the lease list and blocking claims too. */
export const toolCommandArbs: fc.Arbitrary<Cmd>[] = [
  ...commandArbs,
  termArb,
  termArb,
  redriveArb,
  redriveArb,
  fc.constantFrom(1, 2, 100).map((l): Cmd => new Leases(l)),
  claimWaitArb,
];

/** Builds the world for one run: the queue (and, lazily, its dead-letter topic) on a SimHost. */
export function setup(cfg: QueueCfg, seed: string, tools = false): { model: Model; real: Real } {
  const sim = new SimHost({ seed, maxLimit: 1000, segmentBytes: 64 * 1024 * 1024, maxTopics: 0 });
  const resolved = resolveConfig(Q, {
    type: 'queue',
    durability: cfg.durability,
    leases_durable: cfg.leasesDurable,
    max_deliveries: cfg.maxDeliveries,
    dead_letter: cfg.deadLetter ? DLQ : null,
    claim_jitter_ms: cfg.jitterMs,
    lease_ms: cfg.leaseMs,
  });
  assert.ok(resolved.ok);
  const id = sim.request({ op: 'put', topic: Q, config: resolved.config });
  sim.flushAll();
  assert.ok(sim.replies.get(id)?.ok);
  sim.replies.delete(id);
  return { model: new Model(), real: { sim, cfg, tools } };
}

/** With everything delivered: no job that left other than by ack or delete is missing from the DLQ. */
export function finalCheck(m: Model, r: Real): void {
  const drain = () =>
    step(m, r, () => {
      r.sim.flushAll();
      while (r.sim.deliverPeer()) r.sim.flushAll();
    });
  for (let round = 0; round < 10; round++) {
    drain();
    advanceBy(m, r, 2100);
  }
  drain();
  // Read the dead-letter topic as a client would (diffs read cold records back from segments).
  const moved = new Set<number>();
  const copies = new Map<number, number>();
  const count = (id: number) => copies.set(id, (copies.get(id) ?? 0) + 1);
  if (r.sim.actor(DLQ).current) {
    for (let from = 0; ;) {
      const id = r.sim.request({
        op: 'diff',
        topic: DLQ,
        fromSeq: from,
        limit: 1000,
        nodes: null,
        includeTags: false,
        includeMeta: true,
        waitMs: 0,
        maxBatchBytes: 0,
      });
      const d = body(r.sim.replies.get(id)!);
      r.sim.replies.delete(id);
      for (const rec of d.records as { data: { id: number }; meta: Record<string, unknown> }[]) {
        assert.equal(rec.meta.$dead_letter_from, Q);
        moved.add(rec.meta.$dead_letter_src_seq as number);
        count(rec.data.id);
      }
      if (d.caught_up) break;
      from = d.next_from_seq;
    }
  }
  // A job that went to the dead-letter topic is there, or a redrive brought it back (a copy of its id).
  const back = (j: MJob) => [...m.jobs.values()].some((x) => x.redriven && x.id === j.id);
  for (const [seq, j] of m.jobs)
    if (j.removedBy === 'dl') assert.ok(moved.has(seq) || back(j), `job ${seq} left the queue for the dead-letter topic but is not there`);
  const q = qs(r);
  assert.equal(q.table.inTransit.size, 0, 'no job is stuck in transit');
  assert.ok(
    q.redriveOp === undefined && q.redriveWaiting.length === 0 && q.terms.size === 0 && q.waiting.length === 0,
    'no redrive, term or blocking claim is left under way',
  );
  assert.equal(q.redrivePending.size, 0, 'every record a redrive moved back is gone from the dead-letter topic');
  if (r.tools && m.crashes === 0) {
    // Without crashes nothing is ever copied twice: each id is in the two topics exactly as
    // often as its appends, acks and record deletes say, whatever moved between them.
    for (const { id } of readIds(r, Q, 0).values()) count(id);
    for (const id of new Set([...copies.keys(), ...m.copies.keys()])) {
      if (!m.uncertain.has(id)) assert.equal(copies.get(id) ?? 0, m.copies.get(id) ?? 0, `copies of job id ${id}`);
    }
  }
}

/**
 * The property: random configs and command sequences; the seed reproduces a failure exactly.
 * `tools`: the queue tools' commands too (a separate mix, so the seeds of the plain one still
 * replay the runs that once failed).
 */
export function queueProperty(maxCommands = 60, tools = false): fc.IPropertyWithHooks<[QueueCfg, Iterable<Cmd>]> {
  return fc.property(cfgArb, fc.commands(tools ? toolCommandArbs : commandArbs, { maxCommands, size: 'max' }), (cfg, cmds) => {
    const { model, real } = setup(cfg, 'queue-model', tools);
    fc.modelRun(() => ({ model, real }), cmds);
    finalCheck(model, real);
  });
}
