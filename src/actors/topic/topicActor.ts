// TopicActor: the single-threaded, sans-IO owner of one topic name (DESIGN 1.4). Every read and
// write of the topic is an input handled to completion here, so lazy creation cannot race, seq
// assignment needs no locks, and a delete is atomic with respect to every read.
// Effects (replies, WAL frames, timers) go through ActorCtx; time is ctx.now, never the clock.
// Invariants: head <= assigned; batches become visible in seq order at their class's ack point;
// a non-fsync seq is visible only under a durable reservation; control frames gate replies.
import { fail, type ErrorResult } from '../../core/errors.js';
import type { AppendRequest, DeleteRecordsRequest, DeleteTopicRequest, DiffRequest, PutRequest, StateRequest, TopicRequest, TopicSummary, TopicStats, WatchReadRequest } from '../../core/messages.js';
import { assertNever } from '../../core/errors.js';
import { encodeJsonFrame } from '../../wal/frame.js';
import { FrameType } from '../../wal/format.js';
import { parseAppendBody, type ParsedAppend } from './appendParse.js';
import { applyCaps, applyTtl, deleteRecords } from './retention.js';
import { encodeBatch, maybeReserve, renderSeqs } from './appendOp.js';
import { resolveConfig, sameConfig, TopicConfig } from './config.js';
import type { ActorCtx } from './ctx.js';
import { TopicInstance, PendingBatch, type Gate } from './instance.js';
import { TopicReads } from './reads.js';
import { renderPush } from './watchPush.js';
import { topicStateBody, topicStats, topicSummary } from './topicState.js';

export interface ActorOptions {
  maxLimit: number;
  segmentBytes: number;
  maxTopics: number;
}

function jsonOpen(obj: Record<string, unknown>): string {
  const s = JSON.stringify(obj);
  return s.slice(0, -1);
}

function batchBytes(p: ParsedAppend): number {
  let n = 0;
  for (const r of p.records) n += r.dataLen + Math.max(0, r.metaLen);
  return n;
}

/** G14: a batch larger than a `discard: reject` cap on its own can never succeed: 400, not 422. */
function batchExceedsRejectCap(c: TopicConfig, p: ParsedAppend): ErrorResult | undefined {
  if (c.discard !== 'reject') return undefined;
  if (c.cap_records > 0 && p.records.length > c.cap_records) return fail('record_too_large', `the batch alone exceeds cap_records ${c.cap_records}`, { limit: 'cap_records' });
  if (c.cap_bytes > 0 && batchBytes(p) > c.cap_bytes) return fail('record_too_large', `the batch alone exceeds cap_bytes ${c.cap_bytes}`, { limit: 'cap_bytes' });
  return undefined;
}

function okJson(status: 200 | 201, text: string) {
  return { ok: true as const, status, json: Buffer.from(text, 'utf8'), perf: {} };
}

export class TopicActor {
  /** The live instance, or undefined while the topic is absent. */
  current: TopicInstance | undefined;
  /** Instances deleted while frames were in flight; kept until their gates drain. */
  private retired: TopicInstance[] = [];
  private frameNo = 0;
  writtenFrameNo = 0;
  durableFrameNo = 0;
  private nextTimerId = 1;
  private readonly reads: TopicReads;

  constructor(
    readonly name: string,
    private readonly opts: ActorOptions,
  ) {
    this.reads = new TopicReads(name, opts.maxLimit, () => this.nextTimerId++);
  }

  private nextFrame = (): number => ++this.frameNo;

  step(ctx: ActorCtx, reqId: number, req: TopicRequest): void {
    switch (req.op) {
      case 'append':
        return this.append(ctx, reqId, req);
      case 'diff':
        return this.diff(ctx, reqId, req);
      case 'state':
        return this.state(ctx, reqId, req);
      case 'put':
        return this.put(ctx, reqId, req);
      case 'deleteTopic':
        return this.deleteTopic(ctx, reqId, req);
      case 'deleteRecords':
        return this.deleteRecords(ctx, reqId, req);
      case 'watchRead':
        return this.watchRead(ctx, reqId, req);
      default:
        assertNever(req);
    }
  }

  // ---- lifecycle ---------------------------------------------------------------------------

  private createInstance(ctx: ActorCtx, config: TopicConfig): TopicInstance {
    const inst = new TopicInstance(ctx.newTopicId(), this.name, config, ctx.now);
    this.current = inst;
    ctx.topicCreated(inst.id);
    inst.controlFrameNo = this.nextFrame();
    ctx.submit(inst.controlFrameNo, encodeJsonFrame(FrameType.TOPIC_CREATE, inst.id, { name: this.name, config, created_ms: ctx.now }), true);
    return inst;
  }

  private put(ctx: ActorCtx, reqId: number, req: PutRequest): void {
    const inst = this.current;
    if (!inst) {
      if (!ctx.tryAcquireTopicSlot()) {
        return ctx.reply(reqId, fail('throttled', 'too many topics', { limit: 'max_topics', max: this.opts.maxTopics }));
      }
      const created = this.createInstance(ctx, req.config);
      return this.gate(ctx, created, 0, created.controlFrameNo, (c) =>
        c.reply(reqId, okJson(201, jsonOpen({ topic: this.name, created: true, config: created.config }))),
      );
    }
    if (inst.config.type !== req.config.type) {
      return ctx.reply(
        reqId,
        fail('topic_exists_incompatible', `topic ${this.name} exists with type ${inst.config.type}`, {
          topic: this.name,
          existing_type: inst.config.type,
          requested_type: req.config.type,
        }),
      );
    }
    if (!sameConfig(inst.config, req.config)) {
      inst.config = req.config;
      inst.controlFrameNo = this.nextFrame();
      ctx.submit(inst.controlFrameNo, encodeJsonFrame(FrameType.TOPIC_CONFIG, inst.id, { config: req.config }), true);
      // A tightened cap or TTL applies at once (G5); no stored record is rewritten.
      applyTtl(inst, ctx.now);
      applyCaps(inst);
      this.persistFloors(ctx, inst);
    }
    // An identical PUT still waits for any earlier control frame, so a 200 is always durable.
    this.gate(ctx, inst, 0, inst.controlFrameNo, (c) => c.reply(reqId, okJson(200, jsonOpen({ topic: this.name, created: false, config: inst.config }))));
  }

  private deleteTopic(ctx: ActorCtx, reqId: number, req: DeleteTopicRequest): void {
    const inst = this.current;
    const open = (deleted: boolean) => jsonOpen({ topic: this.name, deleted, routers_removed: [] });
    if (!inst) return ctx.reply(reqId, okJson(200, open(false)));
    this.expire(ctx, inst); // G13: TTL expiry applies before the emptiness check
    if (req.ifEmpty && inst.count > 0) {
      return ctx.reply(reqId, fail('topic_not_empty', `${this.name} still holds ${inst.count} records`, { topic: this.name, count: inst.count }));
    }
    const frameNo = this.nextFrame();
    ctx.submit(frameNo, encodeJsonFrame(FrameType.TOPIC_DELETE, inst.id, { name: this.name }), true);
    this.current = undefined;
    ctx.releaseTopicSlot();
    this.reads.dropInstance(ctx, inst);
    if (inst.pending.length > 0 || inst.gates.length > 0) this.retired.push(inst);
    // The reply waits for the durable delete frame; the retired instance's own gates still drain.
    const doneGate: Gate = { needHead: 0, needDurableFrame: frameNo, send: (c) => {
      c.topicDeleted(inst.id);
      // Watch streams learn of it no earlier than the durable delete (G3: one step before the 200).
      if (c.watched()) c.publish({ k: 'deleted', topic: this.name, instanceId: inst.id, head: inst.head });
      c.reply(reqId, okJson(200, open(true)));
    } };
    this.deleteGates.push(doneGate);
    this.runGates(ctx);
  }

  /** Replies gated on frames of no particular instance (topic deletes). */
  private deleteGates: Gate[] = [];

  // ---- append ------------------------------------------------------------------------------

  private append(ctx: ActorCtx, reqId: number, req: AppendRequest): void {
    const body = Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength);
    const parsed = parseAppendBody(body);
    if (!parsed.ok) return ctx.reply(reqId, parsed as ErrorResult);
    const p = parsed.value;
    const idemKey = p.idempotencyKey ?? req.headerIdemKey;
    let inst = this.current;
    // A retry of an applied batch is answered from memory: it needs no WAL, so no credit.
    if (inst && idemKey !== undefined) {
      const prior = inst.idem.get(idemKey, ctx.now, inst.config.idempotency_window_ms);
      if (prior) {
        const target = inst;
        const last = prior.firstSeq + prior.count - 1;
        return this.gate(ctx, target, last, 0, (c) => c.reply(reqId, okJson(200, this.appendJson(target, prior.firstSeq, prior.count, req.returnSeqs, false, true))));
      }
    }
    let createWith: TopicConfig | undefined;
    if (!inst) {
      const cfgAutoCreate =
        p.config !== null && typeof p.config === 'object' && typeof (p.config as { auto_create?: unknown }).auto_create === 'boolean'
          ? ((p.config as { auto_create: boolean }).auto_create)
          : true;
      if (!(p.create ?? cfgAutoCreate)) return ctx.reply(reqId, fail('topic_not_found', `topic ${this.name} does not exist`, { topic: this.name }));
      const resolved = resolveConfig(this.name, p.config);
      if (!resolved.ok) return ctx.reply(reqId, resolved);
      // A batch that can never fit a reject cap creates nothing either.
      const never = batchExceedsRejectCap(resolved.config, p);
      if (never) return ctx.reply(reqId, never);
      createWith = resolved.config;
    }
    // WAL backpressure (G16): refuse with nothing applied (not even a creation), or wait in
    // the host's FIFO. State-dependent, so after the 404 and 400 checks (RESOLVED 0.3).
    if (ctx.walCreditExhausted()) {
      if (p.disableBackpressure) return ctx.deferForCredit(reqId, req);
      return ctx.reply(reqId, fail('throttled', 'the WAL is behind; retry shortly', { retry_after_ms: 1000 }));
    }
    let created = false;
    if (!inst) {
      if (!ctx.tryAcquireTopicSlot()) return ctx.reply(reqId, fail('throttled', 'too many topics', { limit: 'max_topics', max: this.opts.maxTopics }));
      inst = this.createInstance(ctx, createWith!);
      created = true;
    }
    const full = this.rejectFull(ctx, inst, p);
    if (full) return ctx.reply(reqId, full);
    const tsMs = Math.max(ctx.now, inst.lastTsMs);
    const batch = encodeBatch(inst, body, p, idemKey, tsMs, this.opts.segmentBytes);
    const cls = inst.config.durability;
    let frameNo = 0;
    if (cls !== 'ephemeral') {
      frameNo = this.nextFrame();
      ctx.submit(frameNo, batch.frame, cls === 'fsync', { topicId: inst.id, segFirstSeq: inst.segment.firstSeq, offset: inst.segment.size - batch.frame.length });
    }
    const count = batch.lastSeq - batch.firstSeq + 1;
    inst.largestRecentBatch = Math.max(Math.floor(inst.largestRecentBatch * 0.9), count);
    if (cls !== 'fsync') maybeReserve(inst, ctx, this.nextFrame);
    inst.pending.push({ firstSeq: batch.firstSeq, lastSeq: batch.lastSeq, frameNo, durability: cls, bytes: batch.bytes, tsMs });
    inst.pendingCount += count;
    inst.pendingBytes += batch.bytes;
    const target = inst;
    this.gate(ctx, inst, batch.lastSeq, created ? inst.controlFrameNo : 0, (c) => {
      c.reply(reqId, okJson(created ? 201 : 200, this.appendJson(target, batch.firstSeq, count, req.returnSeqs, created, false)), frameNo || undefined);
    });
    this.advance(ctx, inst);
  }

  private appendJson(inst: TopicInstance, firstSeq: number, count: number, returnSeqs: boolean, created: boolean, deduped: boolean): string {
    const seqs = returnSeqs ? `,"seqs":[${renderSeqs(firstSeq, count)}]` : '';
    return `{"topic":${JSON.stringify(this.name)},"first_seq":${firstSeq},"last_seq":${firstSeq + count - 1}${seqs},"head_seq":${inst.head},"count":${count},"created":${created},"deduped":${deduped}`;
  }

  // ---- WAL acks and visibility ------------------------------------------------------------

  /** Frames of this actor up to `written` are in the page cache, up to `durable` fsynced. */
  onWalAck(ctx: ActorCtx, written: number, durable: number): void {
    if (written > this.writtenFrameNo) this.writtenFrameNo = written;
    if (durable > this.durableFrameNo) this.durableFrameNo = durable;
    if (this.durableFrameNo > this.writtenFrameNo) this.writtenFrameNo = this.durableFrameNo;
    for (const inst of this.retired) this.advance(ctx, inst);
    this.retired = this.retired.filter((i) => i.pending.length > 0 || i.gates.length > 0);
    if (this.current) this.advance(ctx, this.current);
    this.runGates(ctx);
  }

  private ackPointReached(b: PendingBatch): boolean {
    switch (b.durability) {
      case 'ephemeral':
      case 'memory':
        return true;
      case 'disk':
        return this.writtenFrameNo >= b.frameNo;
      case 'fsync':
        return this.durableFrameNo >= b.frameNo;
    }
  }

  /** Moves batches that reached their ack point into view, in seq order, then runs gates. */
  private advance(ctx: ActorCtx, inst: TopicInstance): void {
    while (inst.reserveFrames.length > 0 && inst.reserveFrames[0]!.frameNo <= this.durableFrameNo) {
      inst.reservedDurable = Math.max(inst.reservedDurable, inst.reserveFrames.shift()!.ceiling);
    }
    const headBefore = inst.head;
    const durableBefore = inst.durableHead;
    let moved = false;
    while (inst.pending.length > 0) {
      const b = inst.pending[0]!;
      if (!this.ackPointReached(b)) break;
      if (b.durability !== 'fsync' && inst.reservedDurable < b.lastSeq) break;
      inst.pending.shift();
      // A disk batch is visible once written; it is durable only when its frame is fsynced.
      if (b.durability === 'disk' && b.frameNo > this.durableFrameNo) inst.unsynced.push(b);
      inst.head = b.lastSeq;
      inst.count += b.lastSeq - b.firstSeq + 1;
      inst.bytes += b.bytes;
      inst.pendingCount -= b.lastSeq - b.firstSeq + 1;
      inst.pendingBytes -= b.bytes;
      inst.lastWriteTsMs = b.tsMs;
      moved = true;
    }
    // Cap eviction whenever a batch becomes visible: count and bytes never exceed a cap after
    // a step (DESIGN 3.2).
    if (moved && applyCaps(inst) > 0) this.persistFloors(ctx, inst);
    // durableHead: the visible prefix whose frames are fsynced. For memory and ephemeral topics,
    // which are never fsynced, the ack point is the commit point (docs/WATCH.md).
    while (inst.unsynced.length > 0 && inst.unsynced[0]!.frameNo <= this.durableFrameNo) inst.unsynced.shift();
    inst.durableHead = inst.unsynced.length > 0 ? inst.unsynced[0]!.firstSeq - 1 : inst.head;
    if (moved && inst === this.current) this.reads.wake(ctx, inst);
    if (inst === this.current && (moved || inst.durableHead !== durableBefore) && ctx.watched()) this.publish(ctx, inst, headBefore, moved);
    this.runInstanceGates(ctx, inst);
  }

  /** Tells watch streams what became visible (rendered once, DESIGN 6) or durable. */
  private publish(ctx: ActorCtx, inst: TopicInstance, headBefore: number, moved: boolean): void {
    if (!moved) {
      ctx.publish({ k: 'durable', topic: this.name, instanceId: inst.id, durableHead: inst.durableHead, head: inst.head });
      return;
    }
    // A push to open streams is a watch delivery pass: it counts as a read (G1 last_read_ts).
    this.touch(inst, ctx.now);
    const pieces = renderPush(inst, headBefore, inst.head);
    ctx.publish({
      k: 'batch',
      topic: this.name,
      instanceId: inst.id,
      from: headBefore,
      to: inst.head,
      head: inst.head,
      durableHead: inst.durableHead,
      dedupeNode: inst.config.dedupe_node,
      ...pieces,
    });
  }

  private gate(ctx: ActorCtx, inst: TopicInstance, needHead: number, needDurableFrame: number, send: (c: ActorCtx) => void): void {
    inst.gates.push({ needHead, needDurableFrame, send });
    this.runInstanceGates(ctx, inst);
  }

  private runInstanceGates(ctx: ActorCtx, inst: TopicInstance): void {
    if (inst.gates.length === 0) return;
    const still = [];
    for (const g of inst.gates) {
      if (inst.head >= g.needHead && this.durableFrameNo >= g.needDurableFrame && this.writtenFrameNo >= (g.needWrittenFrame ?? 0)) g.send(ctx);
      else still.push(g);
    }
    inst.gates.length = 0;
    inst.gates.push(...still);
  }

  private runGates(ctx: ActorCtx): void {
    if (this.deleteGates.length === 0) return;
    const still = [];
    for (const g of this.deleteGates) {
      if (this.durableFrameNo >= g.needDurableFrame) g.send(ctx);
      else still.push(g);
    }
    this.deleteGates = still;
  }

  // ---- retention ---------------------------------------------------------------------------

  /** TTL is judged when a request arrives, never by a timer. */
  private expire(ctx: ActorCtx, inst: TopicInstance): void {
    if (applyTtl(inst, ctx.now) > 0) this.persistFloors(ctx, inst);
  }

  /** `discard: reject` (SPEC 4.1 rule 3): refuse before any seq is assigned, counting pending batches. */
  private rejectFull(ctx: ActorCtx, inst: TopicInstance, p: ParsedAppend): ErrorResult | undefined {
    const c = inst.config;
    if (c.discard !== 'reject' || (c.cap_records === 0 && c.cap_bytes === 0)) return undefined;
    const never = batchExceedsRejectCap(c, p);
    if (never) return never;
    this.expire(ctx, inst);
    const overRecords = c.cap_records > 0 && inst.count + inst.pendingCount + p.records.length > c.cap_records;
    const overBytes = c.cap_bytes > 0 && inst.bytes + inst.pendingBytes + batchBytes(p) > c.cap_bytes;
    if (!overRecords && !overBytes) return undefined;
    return fail('topic_full', `topic ${this.name} is full`, {
      topic: this.name,
      cap_records: c.cap_records,
      cap_bytes: c.cap_bytes,
      head_seq: inst.head,
      earliest_seq: inst.earliest(),
    });
  }

  /**
   * Floors move at once in memory, and a FLOORS frame goes into the same WAL submission as the
   * frame that caused the move (an append's eviction rides with the append). It never gates a
   * reply: a floor lost with an unwritten tail is re-derived (caps re-apply at recovery, TTL at
   * the next request), so only a tail the class never promised can differ.
   */
  private persistFloors(ctx: ActorCtx, inst: TopicInstance): void {
    if (!inst.floorsDirty || inst.config.durability === 'ephemeral') return;
    inst.floorsDirty = false;
    ctx.submit(this.nextFrame(), encodeJsonFrame(FrameType.FLOORS, inst.id, { evict_floor: inst.evictFloor, ledger: inst.ledger.runs }), false);
  }

  /** POST /v0/topics/:topic/delete (SPEC 4.9): permanent, immediate, silent, point-in-time. */
  private deleteRecords(ctx: ActorCtx, reqId: number, req: DeleteRecordsRequest): void {
    const inst = this.current;
    if (!inst) return ctx.reply(reqId, fail('topic_not_found', `topic ${this.name} does not exist`, { topic: this.name }));
    this.expire(ctx, inst);
    const bound = inst.head;
    const deleted = deleteRecords(inst, req.beforeSeq, req.match, bound);
    inst.hasDeletes ||= deleted > 0;
    const cls = inst.config.durability;
    let frameNo = 0;
    if (cls !== 'ephemeral') {
      frameNo = this.nextFrame();
      ctx.submit(frameNo, encodeJsonFrame(FrameType.DELETE, inst.id, { before_seq: req.beforeSeq, match: req.match, bound_seq: bound }), cls === 'fsync');
    }
    // The response describes the topic as the delete left it (head_seq is its point in time).
    const body = jsonOpen({ topic: this.name, deleted, earliest_seq: inst.earliest(), head_seq: bound, count: inst.count, bytes: inst.bytes });
    // The reply waits for the delete's ack point, so a delete on an fsync topic is fsynced.
    const needWritten = cls === 'disk' ? frameNo : 0;
    const needDurable = cls === 'fsync' ? frameNo : 0;
    inst.gates.push({ needHead: 0, needDurableFrame: needDurable, needWrittenFrame: needWritten, send: (c) => c.reply(reqId, okJson(200, body), frameNo || undefined) });
    this.runInstanceGates(ctx, inst);
  }

  // ---- reads -------------------------------------------------------------------------------

  private touch(inst: TopicInstance, now: number): void {
    inst.lastReadTsMs = now;
    inst.lastConsumedMs = now;
  }

  private diff(ctx: ActorCtx, reqId: number, req: DiffRequest): void {
    const inst = this.current;
    if (!inst) return ctx.reply(reqId, fail('topic_not_found', `topic ${this.name} does not exist`, { topic: this.name }));
    this.touch(inst, ctx.now);
    this.expire(ctx, inst);
    this.reads.read(ctx, reqId, req, inst);
  }

  /** A watch stream's pull; an absent topic is an answer (topic-deleted), not an error. */
  private watchRead(ctx: ActorCtx, reqId: number, req: WatchReadRequest): void {
    const inst = this.current;
    if (!inst) {
      const watch = { exists: false, instanceId: 0, head: 0, deliverableHead: 0, earliest: 1, next: req.fromSeq, count: 0, tombstone: null };
      return ctx.reply(reqId, { ok: true, status: 200, json: Buffer.alloc(0), perf: {}, watch });
    }
    this.touch(inst, ctx.now);
    this.expire(ctx, inst);
    this.reads.read(ctx, reqId, req, inst);
  }

  onColdRead(ctx: ActorCtx, token: number, bufs: Buffer[] | string): void {
    this.reads.onColdRead(ctx, token, bufs, this.current);
  }

  /** The host's cache budget evicts texts of records that are safely in segments. */
  dropTexts(topicId: number, fromSeq: number, toSeq: number): void {
    const inst = this.current;
    if (!inst || inst.id !== topicId) return;
    for (let s = fromSeq; s <= toSeq; s++) inst.index.setText(s, undefined);
  }

  /** Shutdown: every parked long-poll answers now with what it has. */
  releaseParked(ctx: ActorCtx): void {
    this.reads.releaseAll(ctx);
  }

  onTimer(ctx: ActorCtx, timerId: number): void {
    this.reads.onTimer(ctx, timerId);
  }

  private state(ctx: ActorCtx, reqId: number, req: StateRequest): void {
    const inst = this.current;
    if (!inst) return ctx.reply(reqId, fail('topic_not_found', `topic ${this.name} does not exist`, { topic: this.name }));
    if (req.touch) this.touch(inst, ctx.now);
    this.expire(ctx, inst);
    ctx.reply(reqId, okJson(200, jsonOpen(topicStateBody(inst, ctx.now))));
  }

  summary(now: number): TopicSummary | undefined {
    return this.current ? topicSummary(this.current, now) : undefined;
  }

  /** A topic list with touch=true records a consumption (not a read) on each listed topic (G6). */
  consumed(ctx: ActorCtx): void {
    if (this.current) this.current.lastConsumedMs = ctx.now;
  }

  stats(now: number): TopicStats | undefined {
    return this.current ? topicStats(this.current, now) : undefined;
  }
}
