// TopicActor: the single-threaded, sans-IO owner of one topic name (docs/ARCHITECTURE.md "Threads"). Every read and
// write of the topic is an input handled to completion here, so lazy creation cannot race, seq
// assignment needs no locks, and a delete is atomic with respect to every read.
// This class dispatches requests to the operation modules (lifecycle, appendStep, recordDelete,
// reads) and owns what they share: frame numbering, the WAL watermarks and the reply gates.
// Effects go through ActorCtx; time is ctx.now, never the clock.
// Invariants: head <= assigned; batches become visible in seq order at their class's ack point;
// control frames gate replies; a gate runs in the step that releases it.
import type { RedriveReadRequest, StatsTotals, TopicRequest, TopicResult, TopicSummary, TopicStats } from '../../protocol/messages/rpc.js';
import type { RouterStats } from '../../protocol/messages/router.js';
import { assertNever, fail, storageFailed } from '../../protocol/errors.js';
import { encodeJsonFrame } from '../../format/frame.js';
import { FrameType } from '../../format/constants.js';
import type { ActorCtx } from '../ctx.js';
import { okJson, jsonOpen, type ActorCore, type ActorOptions } from './actorCore.js';
import { append } from './appendStep.js';
import { none, type Gate, type GateCondition, type TopicInstance } from './instance.js';
import { deleteTopic, put } from './lifecycle.js';
import { TopicReads } from './reads.js';
import { deleteRecordsStep } from './recordDelete.js';
import { applyTtl } from './retention.js';
import { addTopicStats, effectivePriority, topicStateBody, topicStats, topicSummary } from './topicState.js';
import { publishVisible, revealBatches } from './visibility.js';
import { cursorAtTs } from './timeSeek.js';
import { StorageState } from '../../storage/storageState.js';
import {
  cancelClaimWait,
  refillStreams,
  onPeerReply,
  onQueueCold,
  onQueueTimer,
  queueStep,
  releaseQueueWaits,
  sweepQueue,
} from '../queue/queueSteps.js';
import { onRouterCold, onRouterReply, onRouterTimer, pumpAll, stopRouting } from '../router/forwarder.js';
import { routerStep } from '../router/routerSteps.js';
import { dormantOf, type DormantTopic, type StoredFrames } from './dormant.js';
import { noDeadLetterTopic } from './redriveSource.js';
import { redriveDeleteStep } from './redriveDelete.js';
import assert from 'node:assert/strict';

export class TopicActor implements ActorCore {
  current: TopicInstance | undefined;
  /** Instances deleted while frames were in flight; kept until their gates drain (else undefined). */
  private retired: TopicInstance[] | undefined = undefined;
  /** Replies gated on frames of no particular instance (topic deletes), else undefined. */
  private deleteGates: Gate[] | undefined = undefined;
  private frameNo = 0;
  writtenFrameNo = 0;
  durableFrameNo = 0;
  private timerIds = 1;
  private leaseNo = 0;
  routerLeaving: Map<number, number> | undefined = undefined;
  /** Made at the first read: most of a worker's topics are idle, and idle state is memory. */
  private readsState: TopicReads | undefined = undefined;
  /**
   * The host's ledger, not topic state: `current.bytes` as last added to the worker's running
   * total of live bytes (docs/API.md "Limits" max_total_bytes), so the total moves by the difference after a step.
   */
  bytesCounted = 0;

  constructor(
    readonly name: string,
    readonly opts: ActorOptions,
  ) {}

  /** The last frame number handed out (frames up to writtenFrameNo are written). */
  get submittedFrameNo(): number {
    return this.frameNo;
  }

  get reads(): TopicReads {
    return (this.readsState ??= new TopicReads(this.name, this.opts.maxLimit, this));
  }

  /**
   * Nothing of this actor outlives the step: no instance, no retired one or delete gate, every
   * frame it submitted durable (no ack is owed to it), no parked or cold read, and it never
   * issued a lease (lease ids are unique per boot by the actor's counter, so an actor that
   * issued one is kept). The host drops an idle actor after its step, and the replayer does the
   * same after the same step: a later request of the name gets a fresh actor, which behaves the
   * same (docs/ARCHITECTURE.md "Many topics": a request naming an absent topic must not leave an actor behind).
   */
  idle(): boolean {
    return (
      this.current === undefined &&
      this.retired === undefined &&
      this.deleteGates === undefined &&
      this.durableFrameNo === this.frameNo &&
      this.leaseNo === 0 &&
      this.routerLeaving === undefined &&
      (this.readsState === undefined || this.readsState.idle())
    );
  }

  /**
   * Whether the topic may sleep now (dormant.ts): its record, 'later' while something of the
   * actor is in flight, 'no' while its kind or state keeps it awake.
   */
  dormancy(stored: StoredFrames, now: number): DormantTopic | 'later' | 'no' {
    if (!this.current) return 'no';
    if (
      this.retired ||
      this.deleteGates ||
      this.routerLeaving ||
      this.durableFrameNo !== this.frameNo ||
      (this.readsState && !this.readsState.idle())
    )
      return 'later';
    const d = dormantOf(this.current, stored, now);
    if (typeof d === 'object' && this.leaseNo !== 0) d.lease_no = this.leaseNo;
    return d;
  }

  /**
   * The `sleep` input: the host holds the record dormancy() just made; the actor forgets its
   * instance and is then idle (dropped like any idle actor, here and in replay).
   */
  sleep(): void {
    const inst = this.current;
    assert.ok(
      inst &&
        this.retired === undefined &&
        this.deleteGates === undefined &&
        this.durableFrameNo === this.frameNo &&
        inst.pending.length === 0 &&
        inst.gates.length === 0,
      `topic ${this.name} went to sleep with work in flight`,
    );
    this.current = undefined;
    this.readsState = undefined;
    // The record holds the lease counter now (dormancy put it there): the actor is idle.
    this.leaseNo = 0;
    inst.index.release();
  }

  /** The `wake` input: a woken queue's lease counter goes on from its record's. */
  resumeLeases(leaseNo: number): void {
    this.leaseNo = Math.max(this.leaseNo, leaseNo);
  }

  nextFrame(): number {
    return ++this.frameNo;
  }

  nextTimerId(): number {
    return this.timerIds++;
  }

  /** It issued a lease (so it is kept when idle otherwise: see idle()). */
  get issuedLeases(): boolean {
    return this.leaseNo !== 0;
  }

  nextLeaseNo(): number {
    return this.leaseNo++;
  }

  step(ctx: ActorCtx, reqId: number, req: TopicRequest): void {
    switch (req.op) {
      case 'append':
        return append(this, ctx, reqId, req);
      case 'diff':
      case 'watchRead':
        return this.read(ctx, reqId, req);
      case 'cancelWait':
        this.readsState?.cancel(ctx, req.waitId);
        cancelClaimWait(ctx, this.current, req.waitId);
        return ctx.reply(reqId, { ok: true, status: 200, json: Buffer.from(`{"topic":${JSON.stringify(this.name)}`), perf: {} });
      case 'seek':
        return this.seek(ctx, reqId, req.tsMs);
      case 'state':
        return this.state(ctx, reqId, req.touch);
      case 'put':
        return put(this, ctx, reqId, req);
      case 'deleteTopic':
        return deleteTopic(this, ctx, reqId, req);
      case 'deleteRecords':
        return deleteRecordsStep(this, ctx, reqId, req);
      case 'claim':
      case 'ack':
      case 'nack':
      case 'extend':
      case 'term':
      case 'workOpen':
      case 'workClose':
      case 'workFlow':
      case 'leases':
        return queueStep(this, ctx, reqId, req);
      case 'routerSet':
      case 'routerRemove':
      case 'routerDrain':
      case 'routerProbe':
        return routerStep(this, ctx, reqId, req);
      case 'redrive':
        return queueStep(this, ctx, reqId, req);
      case 'redriveRead':
        return this.redriveRead(ctx, reqId, req);
      case 'redriveDelete':
        return redriveDeleteStep(this, ctx, reqId, req);
      default:
        assertNever(req);
    }
  }

  // ---- WAL acks, visibility and gates ------------------------------------------------------

  /** Frames of this actor up to `written` are in the page cache, up to `durable` fsynced. */
  onWalAck(ctx: ActorCtx, written: number, durable: number): void {
    if (written > this.writtenFrameNo) this.writtenFrameNo = written;
    if (durable > this.durableFrameNo) this.durableFrameNo = durable;
    if (this.durableFrameNo > this.writtenFrameNo) this.writtenFrameNo = this.durableFrameNo;
    if (this.retired) {
      for (const inst of this.retired) this.advance(ctx, inst);
      this.retired = this.retired.filter((i) => i.pending.length > 0 || i.gates.length > 0);
      if (this.retired.length === 0) this.retired = undefined;
    }
    if (this.current) this.advance(ctx, this.current);
    this.runDeleteGates(ctx);
  }

  advance(ctx: ActorCtx, inst: TopicInstance): void {
    const { headBefore, durableBefore, moved } = revealBatches(this, ctx, inst);
    if (inst === this.current) {
      if ((moved || inst.durableHead !== durableBefore) && ctx.watched()) publishVisible(this, ctx, inst, headBefore, moved);
      if (moved && inst.queue) refillStreams(this, ctx, inst);
      if (moved && inst.routing) pumpAll(this, ctx, inst);
    }
    this.runInstanceGates(ctx, inst);
    // Parked long-polls answer after the acks of the appends that woke them: a reply batch is
    // answered on main in order, and a wake of thousands of waiters ahead of the append's own ack
    // held that ack for the whole fan-out.
    if (moved && inst === this.current) this.readsState?.wake(ctx, inst);
  }

  gate(ctx: ActorCtx, inst: TopicInstance, cond: GateCondition, send: (c: ActorCtx) => void): void {
    if (this.met(inst, cond)) return send(ctx);
    // After a failed write nothing more becomes durable: a reply that would wait, fails.
    if (ctx.storageState() === StorageState.FAILED) {
      if (cond.reqId !== undefined) ctx.reply(cond.reqId, storageFailed());
      return;
    }
    // One literal of a fixed shape (a spread of conditions of varying shapes took V8's slow
    // property-definition path, ~1 % of the worker in the claim+ack profile).
    inst.addGate({
      reqId: cond.reqId,
      needHead: cond.needHead,
      needDurableFrame: cond.needDurableFrame,
      needWrittenFrame: cond.needWrittenFrame,
      send,
    });
  }

  private met(inst: TopicInstance, g: GateCondition): boolean {
    return (
      inst.head >= (g.needHead ?? 0) && this.durableFrameNo >= (g.needDurableFrame ?? 0) && this.writtenFrameNo >= (g.needWrittenFrame ?? 0)
    );
  }

  /**
   * The WAL failed (storage FAILED): frames not yet written or durable never will be, so every
   * reply waiting for one fails now (never an ack for bytes the disk did not take); the batches
   * stay invisible. Pushes waiting on a frame are dropped.
   */
  onWalFailed(ctx: ActorCtx): void {
    const failGates = (gates: Gate[]) => {
      for (const g of gates) if (g.reqId !== undefined) ctx.reply(g.reqId, storageFailed());
    };
    for (const inst of [...(this.retired ?? []), ...(this.current ? [this.current] : [])]) {
      failGates(inst.gates);
      inst.gates = none();
    }
    if (this.deleteGates) {
      failGates(this.deleteGates);
      this.deleteGates.length = 0;
    }
    this.retired = undefined;
  }

  retire(inst: TopicInstance, done: Gate): void {
    if (inst.pending.length > 0 || inst.gates.length > 0) (this.retired ??= []).push(inst);
    (this.deleteGates ??= []).push(done);
  }

  private runInstanceGates(ctx: ActorCtx, inst: TopicInstance): void {
    if (inst.gates.length === 0) return;
    // A gate waits for the head and this actor's frame watermarks, which only grow, so their sum
    // moves whenever any of them does. While it has not moved since the last pass, no waiting
    // gate can have been met (a new gate is checked as it is added): skip the pass. Every append
    // step and every ack ran the pass over all waiting replies, O(n²) per turn with 64 clients
    // on one topic (runInstanceGates and met were top frames of the worker).
    const mark = inst.head + this.writtenFrameNo + this.durableFrameNo;
    if (inst.gatesCheckedAt === mark) return;
    inst.gatesCheckedAt = mark;
    const still = [];
    for (const g of inst.gates) {
      if (this.met(inst, g)) g.send(ctx);
      else still.push(g);
    }
    // An emptied queue goes back to the shared empty one (an idle topic keeps no array).
    inst.gates = still.length > 0 ? still : none();
  }

  private runDeleteGates(ctx: ActorCtx): void {
    if (!this.deleteGates) return;
    const still = [];
    for (const g of this.deleteGates) {
      if (this.durableFrameNo >= (g.needDurableFrame ?? 0)) g.send(ctx);
      else still.push(g);
    }
    this.deleteGates = still.length > 0 ? still : undefined;
  }

  // ---- retention ---------------------------------------------------------------------------

  expire(ctx: ActorCtx, inst: TopicInstance): void {
    if (applyTtl(inst, ctx.now) > 0) this.persistFloors(ctx, inst);
  }

  /**
   * Floors move at once in memory, and a FLOORS frame goes into the same WAL submission as the
   * frame that caused the move (an append's eviction rides with the append). It never gates a
   * reply: a floor lost with an unwritten tail is re-derived (caps re-apply at recovery, TTL at
   * the next request), so only a tail the class never promised can differ.
   */
  persistFloors(ctx: ActorCtx, inst: TopicInstance): void {
    if (!inst.floorsDirty || inst.logClass === 'ephemeral') return;
    inst.floorsDirty = false;
    ctx.submit(
      this.nextFrame(),
      encodeJsonFrame(FrameType.FLOORS, inst.id, { evict_floor: inst.evictFloor, ledger: inst.ledger.runs }),
      false,
    );
  }

  // ---- reads -------------------------------------------------------------------------------

  touch(inst: TopicInstance, now: number): void {
    inst.lastReadTsMs = now;
    inst.lastConsumedMs = now;
  }

  /** Diff, or a watch stream's pull; for a watch an absent topic is an answer (topic-deleted). */
  private read(ctx: ActorCtx, reqId: number, req: Extract<TopicRequest, { op: 'diff' | 'watchRead' }>): void {
    const inst = this.current;
    if (!inst) {
      if (req.op === 'diff') return ctx.reply(reqId, fail('topic_not_found', `topic ${this.name} does not exist`, { topic: this.name }));
      const watch = {
        exists: false,
        instanceId: 0,
        head: 0,
        deliverableHead: 0,
        earliest: 1,
        next: req.fromSeq,
        count: 0,
        tombstone: null,
      };
      return ctx.reply(reqId, { ok: true, status: 200, json: Buffer.alloc(0), perf: {}, watch });
    }
    this.touch(inst, ctx.now);
    this.expire(ctx, inst);
    // A read from a time starts at the cursor the time resolves to now, once: a long-poll or a
    // cold read answered later reads from that cursor.
    if (req.op === 'diff' && req.fromTsMs !== undefined) req = { ...req, fromSeq: cursorAtTs(inst, req.fromTsMs), fromTsMs: undefined };
    this.reads.read(ctx, reqId, req, inst);
  }

  /** A watch POST's `from_ts`: the cursor a read from that time starts at (not a read itself). */
  private seek(ctx: ActorCtx, reqId: number, tsMs: number): void {
    const inst = this.current;
    if (!inst) return ctx.reply(reqId, fail('topic_not_found', `topic ${this.name} does not exist`, { topic: this.name }));
    this.expire(ctx, inst);
    const seek = { fromSeq: cursorAtTs(inst, tsMs), head: inst.head, earliest: inst.earliest() };
    ctx.reply(reqId, { ok: true, status: 200, json: Buffer.alloc(0), perf: {}, seek });
  }

  /** A redrive reading this topic as its dead-letter topic (redriveSource.ts); not a consumption. */
  private redriveRead(ctx: ActorCtx, reqId: number, req: RedriveReadRequest): void {
    const inst = this.current;
    if (!inst) return ctx.reply(reqId, noDeadLetterTopic(this.name));
    this.expire(ctx, inst);
    this.reads.read(ctx, reqId, req, inst);
  }

  onColdRead(ctx: ActorCtx, token: number, bufs: Buffer[] | string): void {
    if (this.readsState?.onColdRead(ctx, token, bufs, this.current)) return;
    if (!onRouterCold(this, ctx, this.current, token, bufs)) onQueueCold(this, ctx, this.current, token, bufs);
  }

  /** Another topic's actor answered a request of this one (a router forward or probe, a dead-letter append). */
  onPeerReply(ctx: ActorCtx, token: number, result: TopicResult): void {
    if (!onRouterReply(this, ctx, this.current, token, result)) onPeerReply(this, ctx, this.current, token, result);
  }

  /**
   * Lazy expiry between requests: a queue's leases before its stats are read (host.stats), and
   * TTL expiry of a quiet topic (the dormancy sweep), so its space is given back unread.
   */
  sweep(ctx: ActorCtx): void {
    const inst = this.current;
    if (!inst) return;
    this.expire(ctx, inst);
    if (inst.queue) sweepQueue(this, ctx, inst);
  }

  /** The host's cache budget evicts texts of records that are safely in segments. */
  dropTexts(topicId: number, fromSeq: number, toSeq: number): void {
    const inst = this.current;
    if (!inst || inst.id !== topicId) return;
    for (let s = fromSeq; s <= toSeq; s++) inst.index.dropText(s);
  }

  /** Shutdown, before the final checkpoint: this topic's forwarders send nothing more (forwarder.ts stopRouting). */
  stopRouters(ctx: ActorCtx): void {
    if (this.current) stopRouting(ctx, this.current);
  }

  /** Shutdown: every parked long-poll and blocking claim answers now with what it has. */
  releaseParked(ctx: ActorCtx): void {
    this.readsState?.releaseAll(ctx);
    releaseQueueWaits(this, ctx, this.current);
  }

  onTimer(ctx: ActorCtx, timerId: number): void {
    if (this.readsState?.onTimer(ctx, timerId)) return;
    if (!onRouterTimer(this, ctx, this.current, timerId)) onQueueTimer(this, ctx, this.current, timerId);
  }

  private state(ctx: ActorCtx, reqId: number, touch: boolean): void {
    const inst = this.current;
    if (!inst) return ctx.reply(reqId, fail('topic_not_found', `topic ${this.name} does not exist`, { topic: this.name }));
    if (touch) this.touch(inst, ctx.now);
    this.expire(ctx, inst);
    sweepQueue(this, ctx, inst);
    ctx.reply(reqId, okJson(200, jsonOpen(topicStateBody(inst, ctx.now))));
  }

  summary(now: number): TopicSummary | undefined {
    return this.current ? topicSummary(this.current, now) : undefined;
  }

  /** A topic list with touch=true records a consumption (not a read) on each listed topic (docs/API.md "GET /v0/topics"). */
  consumed(ctx: ActorCtx): void {
    if (this.current) this.current.lastConsumedMs = ctx.now;
  }

  stats(now: number): TopicStats | undefined {
    return this.current ? topicStats(this.current, now) : undefined;
  }

  /** Adds the live instance to a worker's metrics totals (a read, like stats). */
  addStats(totals: StatsTotals, routers: RouterStats[], now: number): void {
    if (this.current) addTopicStats(totals, routers, this.current, now);
  }

  /** The live instance's effective priority (docs/API.md "GET /v0/topics/:topic"), 0 when absent. */
  priority(now: number): number {
    return this.current ? effectivePriority(this.current, now) : 0;
  }
}
