// Reads of one topic actor: diff (docs/API.md "Diff") and watch pulls (docs/ARCHITECTURE.md "Watch streams"), both through
// the one read pipeline, so they can never disagree about gaps; and a redrive's reads of a
// dead-letter topic (redriveSource.ts), which share the cold-read parking. Diff long-polls park
// (one timer for the earliest deadline of them all) and are woken by visibility; reads that meet cold records wait for them to come back from
// segments. Owned by the TopicActor (made at its first read); pure, effects go through the
// ActorCtx. Its maps exist only while something waits in them.
import { fail } from '../../protocol/errors.js';
import type { DiffRequest, RedriveReadRequest, WatchReadRequest } from '../../protocol/messages/rpc.js';
import { redriveBatch } from './redriveSource.js';
import type { ActorCtx } from '../ctx.js';
import type { TopicInstance } from './instance.js';
import { readFrom, startsWarm, warmPrefix, type ReadResult } from './readPipeline.js';
import { renderRecordsArray } from './render.js';
import { PAGE_MIN_BYTES } from '../../core/pagePool.js';
import { coldRanges, installCold, readBackSet } from './coldRead.js';
import { MinHeap } from '../../core/minHeap.js';

const DIFF_DEFAULT_LIMIT = 256;
const MiB = 1024 * 1024;
/** Cold reads one diff may need; a bound, so a bad segment location can never loop. */
const COLD_READ_ATTEMPTS_MAX = 3;

/** A diff's rendered reply, shared by the waiters that asked the same. */
interface ReplyBytes {
  json: Buffer;
  scanned: number;
}

/** What makes two diffs the same read, or undefined when one cannot stand for another (a node filter). */
function sameReadKey(req: DiffRequest): string | undefined {
  if (req.nodes !== null) return undefined;
  return `${req.fromSeq} ${req.limit} ${req.maxBatchBytes} ${req.includeTags ? 1 : 0}${req.includeMeta ? 1 : 0}`;
}

interface Waiting {
  reqId: number;
  req: DiffRequest | WatchReadRequest | RedriveReadRequest;
  inst: TopicInstance;
  attempts: number;
  /** Seqs read back from segments for it so far, read again with the next (see readBack). */
  readBack?: number[];
}

/** When a parked long-poll answers empty (its `wait_ms`); a stale entry once it was answered. */
interface Deadline {
  atMs: number;
  id: number;
}

/** Long-polls by park key (parkKey), or diffs waiting for segment bytes by read token; none while idle. */
type WaitingMap = Map<number, Waiting> | undefined;

function forget(m: WaitingMap, id: number): WaitingMap {
  m?.delete(id);
  return m && m.size > 0 ? m : undefined;
}

export class TopicReads {
  private parked: WaitingMap = undefined;
  private cold: WaitingMap = undefined;
  /**
   * The long-polls' deadlines, earliest first, and the one timer armed for the earliest (a
   * waiter costs its record and a heap entry, not a timer of its own); both exist only while
   * something is parked.
   */
  private deadlines: MinHeap<Deadline> | undefined = undefined;
  private sweep: { timerId: number; atMs: number } | undefined = undefined;

  constructor(
    private readonly name: string,
    private readonly maxLimit: number,
    private readonly ids: { nextTimerId(): number },
  ) {}

  /** Nothing parked and no cold read outstanding. */
  idle(): boolean {
    return this.parked === undefined && this.cold === undefined;
  }

  /** Answers now, or parks a long-poll whose cursor is at the head. */
  read(ctx: ActorCtx, reqId: number, req: DiffRequest | WatchReadRequest | RedriveReadRequest, inst: TopicInstance): void {
    if (req.op === 'diff' && req.waitMs > 0 && req.fromSeq === inst.head) {
      const id = this.parkKey(req);
      (this.parked ??= new Map()).set(id, { reqId, req, inst, attempts: 0 });
      (this.deadlines ??= new MinHeap((a, b) => a.atMs < b.atMs || (a.atMs === b.atMs && a.id < b.id))).push({
        atMs: ctx.now + req.waitMs,
        id,
      });
      this.armSweep(ctx);
      return;
    }
    this.answer(ctx, { reqId, req, inst, attempts: 0 });
  }

  /**
   * A long-poll's key in the parked table: main's `waitId` (so a cancel finds it by lookup), or
   * a negative id of the actor's own for a diff without one or whose id is parked already
   * (main's ids are unique per process; a repeat must not overwrite a waiter, which would hang).
   */
  private parkKey(req: DiffRequest): number {
    const waitId = req.waitId;
    if (waitId !== undefined && waitId > 0 && !this.parked?.has(waitId)) return waitId;
    return -this.ids.nextTimerId();
  }

  /** Answers `w` (now, or after a cold read); returns a diff's rendered reply when it answered now. */
  private answer(ctx: ActorCtx, w: Waiting): ReplyBytes | undefined {
    const { req, inst } = w;
    if (req.op === 'redriveRead') return void this.answerRedrive(ctx, w, req);
    let skip: Set<number> | null = null;
    if (req.nodes !== null && inst.config.dedupe_node) {
      skip = new Set();
      for (const n of req.nodes) {
        const id = inst.nodesIfAny?.knownId(n);
        if (id !== undefined) skip.add(id);
      }
      if (skip.size === 0) skip = null;
    }
    // A watch probe scans nothing: readFrom judges the cursor before its first record.
    const limit =
      req.op === 'watchRead' && req.probe === true ? 0 : Math.min(req.limit === 0 ? DIFF_DEFAULT_LIMIT : req.limit, this.maxLimit);
    const maxBytes = req.maxBatchBytes === 0 ? MiB : Math.min(req.maxBatchBytes, 8 * MiB);
    const untilSeq = req.op === 'watchRead' && req.strong ? inst.durableHead : undefined;
    let r = readFrom(inst, { fromSeq: req.fromSeq, limit, maxBytes, skipNodeIds: skip, untilSeq });
    if (r.cold.length > 0) {
      // After a read-back, records before the first cold one answer now: under a small cache the
      // texts read back for one part of a page can leave memory while another part is read.
      if (w.attempts === 0 || !startsWarm(r)) return void this.readBack(ctx, w, r.cold);
      r = warmPrefix(r);
    }
    if (req.op === 'watchRead') return void this.answerWatch(ctx, w.reqId, req, inst, r);
    const head = inst.head;
    const prefix = `{"topic":${JSON.stringify(this.name)},"records":`;
    const suffix =
      `,"next_from_seq":${r.nextFromSeq},"head_seq":${head},"earliest_seq":${inst.earliest()},` +
      `"caught_up":${r.nextFromSeq === head},"tombstone":${JSON.stringify(r.tombstone)},"lag":${Math.max(0, head - r.nextFromSeq)}`;
    const json = renderRecordsArray(prefix, r.items, suffix, {
      includeTags: req.includeTags,
      includeMeta: req.includeMeta,
      includeData: true,
    });
    ctx.reply(w.reqId, { ok: true, status: 200, json, perf: { records_scanned: r.scanned } });
    return { json, scanned: r.scanned };
  }

  /** A redrive read (redriveSource.ts): its batch, once the texts it needs are in memory. */
  private answerRedrive(ctx: ActorCtx, w: Waiting, req: RedriveReadRequest): void {
    const r = redriveBatch(w.inst, req);
    if ('cold' in r) return this.readBack(ctx, w, r.cold);
    ctx.reply(w.reqId, { ok: true, status: 200, json: Buffer.from(`{"topic":${JSON.stringify(this.name)}`), perf: {}, redrive: r.batch });
  }

  /** Parks `w` until the texts of `cold` are read back from segments (a bounded number of times). */
  private readBack(ctx: ActorCtx, w: Waiting, cold: number[]): void {
    if (w.attempts >= COLD_READ_ATTEMPTS_MAX) {
      return ctx.reply(w.reqId, fail('internal', `records ${cold[0]}.. could not be read back from segments`));
    }
    // What an earlier read brought may have left memory meanwhile (a small cache evicts in turn):
    // it is read again with the rest, so every text the answer needs arrives in one step.
    const readBack = readBackSet(w.readBack, cold);
    const token = this.ids.nextTimerId();
    (this.cold ??= new Map()).set(token, { ...w, attempts: w.attempts + 1, readBack });
    ctx.readCold(token, w.inst.id, coldRanges(w.inst, readBack));
  }

  /**
   * A watch pull: the record frame payload rendered here (once), plus what the stream needs to
   * judge the topic's state. A tombstone on the first read after connect is `from_seq_too_old`
   * unless it is `recreated` (docs/API.md "Watch frames").
   */
  private answerWatch(ctx: ActorCtx, reqId: number, req: WatchReadRequest, inst: TopicInstance, r: ReadResult): void {
    const head = inst.head;
    const topic = JSON.stringify(this.name);
    let tombstone = null;
    if (r.tombstone) {
      const t = r.tombstone;
      const reason = req.first && t.reason !== 'recreated' && t.reason !== 'source_trim' ? 'from_seq_too_old' : t.reason;
      tombstone = {
        gapTo: t.gap_to,
        json: `{"topic":${topic},"reason":"${reason}","gap_from":${t.gap_from},"gap_to":${t.gap_to},"earliest_seq":${t.earliest_seq},"head_seq":${t.head_seq}}`,
      };
    }
    const json =
      r.items.length === 0
        ? Buffer.alloc(0)
        : renderRecordsArray(
            `{"topic":${topic},"records":`,
            r.items,
            `,"from_seq":${r.scanFrom},"to_seq":${r.nextFromSeq},"head_seq":${head}}`,
            {
              includeTags: req.includeTags,
              includeMeta: req.includeMeta,
              includeData: req.includeData,
            },
          );
    const deliverableHead = req.strong ? inst.durableHead : head;
    ctx.reply(reqId, {
      ok: true,
      status: 200,
      json,
      perf: { records_scanned: r.scanned },
      watch: {
        exists: true,
        instanceId: inst.id,
        head,
        deliverableHead,
        earliest: inst.earliest(),
        next: r.nextFromSeq,
        count: r.items.length,
        tombstone,
      },
    });
  }

  /**
   * New records became visible: parked long-polls behind the head answer. Waiters that asked the
   * same thing (same cursor, limit, byte budget and flags, no node filter: the common case of
   * many clients following one topic) share one read and one rendering; only the rendering of a
   * page (a reply of PAGE_MIN_BYTES or more, transferred whole to main) is made per waiter.
   */
  wake(ctx: ActorCtx, inst: TopicInstance): void {
    if (!this.parked) return;
    let shared: Map<string, ReplyBytes> | undefined;
    for (const [id, p] of this.parked) {
      if (p.inst !== inst || p.req.op !== 'diff' || inst.head <= p.req.fromSeq) continue;
      this.parked = forget(this.parked, id);
      const key = sameReadKey(p.req);
      const done = key === undefined ? undefined : shared?.get(key);
      if (done) {
        ctx.reply(p.reqId, { ok: true, status: 200, json: done.json, perf: { records_scanned: done.scanned } });
        continue;
      }
      const answered = this.answer(ctx, p);
      if (key !== undefined && answered && answered.json.byteLength < PAGE_MIN_BYTES) (shared ??= new Map()).set(key, answered);
    }
    this.armSweep(ctx);
  }

  /** Segment bytes for a diff that met cold records: install their texts, then answer it. */
  /** Returns false when the token is not a read's (the queue side may own it). */
  onColdRead(ctx: ActorCtx, token: number, bufs: Buffer[] | string, current: TopicInstance | undefined): boolean {
    const c = this.cold?.get(token);
    if (!c) return false;
    this.cold = forget(this.cold, token);
    if (typeof bufs === 'string') {
      ctx.reply(c.reqId, fail('internal', `segment read failed: ${bufs}`));
      return true;
    }
    if (c.inst !== current) {
      ctx.reply(c.reqId, fail('topic_not_found', `topic ${this.name} was deleted`, { topic: this.name }));
      return true;
    }
    const failure = installCold(ctx, c.inst, bufs);
    if (failure !== undefined) {
      ctx.reply(c.reqId, fail('internal', `segment read failed: ${failure}`));
      return true;
    }
    this.answer(ctx, c);
    return true;
  }

  /**
   * The client of the long-poll `waitId` left (CancelWaitRequest): it answers now with what it
   * has, as at its deadline. A lookup by its key (parkKey); an id not parked (answered already,
   * or never parked) is a no-op. Main sends the cancel only after the diff itself, on the same
   * channel, so it cannot arrive first (docs/ARCHITECTURE.md "Thread crossings").
   */
  cancel(ctx: ActorCtx, waitId: number): void {
    const p = this.parked?.get(waitId);
    if (!p || p.req.op !== 'diff' || p.req.waitId !== waitId) return;
    this.parked = forget(this.parked, waitId);
    this.answer(ctx, p);
    this.armSweep(ctx);
  }

  /** A timer fired: a parked long-poll answers with what it has. Returns false if not ours. */
  onTimer(ctx: ActorCtx, timerId: number): boolean {
    if (this.sweep?.timerId !== timerId) return false;
    // Due: every deadline up to the one the timer was armed for (a timer may fire a little
    // before the clock reads its moment), and any passed since.
    const dueMs = Math.max(ctx.now, this.sweep.atMs);
    this.sweep = undefined;
    for (let d = this.deadlines?.peek(); d && d.atMs <= dueMs; d = this.deadlines?.peek()) {
      this.deadlines!.pop();
      const p = this.parked?.get(d.id);
      if (!p) continue; // answered already
      this.parked = forget(this.parked, d.id);
      this.answer(ctx, p);
    }
    this.armSweep(ctx);
    return true;
  }

  /** Keeps the one long-poll timer armed for the earliest deadline still parked, or none. */
  private armSweep(ctx: ActorCtx): void {
    const heap = this.deadlines;
    while (heap && heap.size > 0 && !this.parked?.has(heap.peek()!.id)) heap.pop();
    const next = heap?.peek();
    if (!next) this.deadlines = undefined;
    if (this.sweep && this.sweep.atMs === next?.atMs) return;
    if (this.sweep) ctx.cancelTimer(this.sweep.timerId);
    this.sweep = undefined;
    if (!next) return;
    this.sweep = { timerId: this.ids.nextTimerId(), atMs: next.atMs };
    ctx.setTimer(this.sweep.timerId, next.atMs);
  }

  /** Shutdown: every parked long-poll answers now. */
  releaseAll(ctx: ActorCtx): void {
    if (!this.parked) return;
    for (const [id, p] of this.parked) {
      this.parked = forget(this.parked, id);
      this.answer(ctx, p);
    }
    this.armSweep(ctx);
  }

  /** The instance was deleted: its long-polls end with 404 at once (docs/API.md "Topic lifecycle"). */
  dropInstance(ctx: ActorCtx, inst: TopicInstance): void {
    if (!this.parked) return;
    for (const [id, p] of this.parked) {
      if (p.inst !== inst) continue;
      this.parked = forget(this.parked, id);
      ctx.reply(p.reqId, fail('topic_not_found', `topic ${this.name} was deleted`, { topic: this.name }));
    }
    this.armSweep(ctx);
  }
}
