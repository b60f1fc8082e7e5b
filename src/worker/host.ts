// ActorHost: the runtime of one topic worker thread. It feeds inputs to TopicActors one at a
// time, stamps each with the injected clock, and carries out their effects: replies, WAL
// submissions (one buffer per event-loop turn), timers, segment writes and cold reads. It also
// keeps the worker's cache of record texts within its byte budget. It owns no topic state.
// Invariant: an actor step never awaits; effects run after the step returns.
import type { MessagePort } from 'node:worker_threads';
import type { Clock } from '../core/clock.js';
import { seededRng, Rng } from '../core/rng.js';
import { nowMs, roundMs } from '../core/stopwatch.js';
import type { AppendRequest, PerfFields, TopicRequest, TopicResult, TopicStats, TopicSummary, WalIn, WalOut } from '../core/messages.js';
import { assertNever } from '../core/errors.js';
import { TopicActor, ActorOptions } from '../actors/topic/topicActor.js';
import type { SegmentPlacement } from '../actors/topic/ctx.js';
import { decodeJsonBody, probeFrame, readAppendHead } from '../wal/frame.js';
import { FrameType } from '../wal/format.js';
import type { ReplayStats } from '../actors/topic/replay.js';
import { applyInput, ActorInput } from '../actors/topic/inputs.js';
import { HostCtx } from './hostCtx.js';
import { retentionPart } from '../actors/topic/replay.js';
import type { TraceWriter } from '../replay/traceWriter.js';
import type { SegmentStore } from '../storage/segmentStore.js';
import type { TopicPart } from '../storage/snapshot.js';
import type { TopicConfig } from '../actors/topic/config.js';
import { listSegments, readSegment } from '../storage/segmentLoad.js';
import { HotCache } from './hotCache.js';
import { WatchOutbox } from './watchOutbox.js';

interface FrameTiming {
  submitAt: number;
  writtenAt: number;
}

/** Heap cost of one hot RecordText beyond its bytes (object header and fields), for the budget. */
export const RECORD_TEXT_OVERHEAD_BYTES = 96;

export interface QueuedFrame {
  actor: TopicActor;
  frameNo: number;
  buf: Buffer;
  durable: boolean;
  segment: SegmentPlacement | undefined;
}

interface Submission {
  seq: number;
  frames: QueuedFrame[];
  written: boolean;
  bytes: number;
}

export interface HostOptions extends ActorOptions {
  workerIndex: number;
  workers: number;
  bootEpoch: number;
  bootSeed: string;
  /** Shared counter [topicCount] for the max_topics cap, across workers. */
  counters: Int32Array;
  segmentCacheBytes: number;
  /** WAL credit: bytes submitted but not yet written (SERVICE_WAL_INFLIGHT_BYTES). */
  walInflightBytes: number;
}

export class ActorHost {
  private readonly actors = new Map<string, TopicActor>();
  readonly byTopicId = new Map<number, TopicActor>();
  private readonly rngs = new Map<TopicActor, Rng>();
  private readonly replies = new Map<number, (r: TopicResult) => void>();
  readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly timings = new WeakMap<TopicActor, Map<number, FrameTiming>>();
  private turnFrames: QueuedFrame[] = [];
  private flushScheduled = false;
  private submitSeq = 0;
  private writtenSeq = 0;
  private readonly inflight: Submission[] = [];
  private nextReqId = 1;
  localTopicCounter = 0;
  private walFailed: string | undefined;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly writtenWaiters: { seq: number; resolve: () => void }[] = [];
  readonly hot: HotCache;
  readonly watch: WatchOutbox;
  private readonly ctxs = new WeakMap<TopicActor, HostCtx>();
  inflightBytes = 0;
  /** Appends with disable_backpressure waiting for WAL credit, oldest first. */
  readonly deferred: { reqId: number; req: AppendRequest; at: number }[] = [];
  private readonly throttleWaits = new Map<number, number>();

  constructor(
    readonly clock: Clock,
    readonly opts: HostOptions,
    private readonly walPort: MessagePort,
    readonly segments: SegmentStore,
    private readonly dataDir: string,
    private readonly trace?: TraceWriter,
    private readonly traceOutputs = false,
    eventsPort?: MessagePort,
  ) {
    this.watch = new WatchOutbox(eventsPort);
    walPort.on('message', (m: WalOut) => this.onWal(m));
    this.hot = new HotCache(opts.segmentCacheBytes, (topicId, from, to) => {
      const a = this.byTopicId.get(topicId);
      if (a) this.input(a, { k: 'drop', topicId, from, to });
    });
  }

  private actorFor(name: string): TopicActor {
    let a = this.actors.get(name);
    if (!a) {
      a = new TopicActor(name, this.opts);
      this.actors.set(name, a);
    }
    return a;
  }

  private rngFor(actor: TopicActor): Rng {
    let r = this.rngs.get(actor);
    if (!r) this.rngs.set(actor, (r = seededRng(`${this.opts.bootSeed}/${actor.name}`)));
    return r;
  }

  // ---- inputs ------------------------------------------------------------------------------

  request(req: TopicRequest): Promise<TopicResult> {
    if (this.walFailed !== undefined && req.op !== 'state' && req.op !== 'diff') {
      return Promise.resolve({ ok: false, status: 500, code: 'internal', message: `WAL failed: ${this.walFailed}` });
    }
    const reqId = this.nextReqId++;
    return new Promise((resolve) => {
      this.replies.set(reqId, resolve);
      const actor = this.actorFor(req.topic);
      this.input(actor, { k: 'req', reqId, req });
    });
  }

  /** Feeds one input to an actor: the only way actor code runs. Traced when tracing is on. */
  input(actor: TopicActor, input: ActorInput, seed?: string): void {
    const traced = this.trace?.wants(actor.name) ? { q: [] as unknown[], out: this.traceOutputs ? ([] as unknown[]) : undefined } : undefined;
    let ctx = this.ctxs.get(actor);
    if (!ctx) this.ctxs.set(actor, (ctx = new HostCtx(this, actor)));
    ctx.begin(this.clock.now(), this.rngFor(actor), traced);
    applyInput(actor, ctx, input, this.opts);
    if (traced) {
      this.trace!.write({ a: actor.name, at: ctx.now, in: input, ...(traced.q.length ? { q: traced.q } : {}), ...(seed ? { seed } : {}), ...(traced.out ? { out: traced.out } : {}) });
    }
  }

  sendReply(actor: TopicActor, reqId: number, result: TopicResult, frameNo: number | undefined): void {
    const resolve = this.replies.get(reqId);
    if (!resolve) return;
    this.replies.delete(reqId);
    const waited = this.throttleWaits.get(reqId);
    if (waited !== undefined) {
      this.throttleWaits.delete(reqId);
      if (result.ok) result.perf = { ...result.perf, throttle_wait_ms: roundMs(waited) };
    }
    if (result.ok && frameNo !== undefined) {
      const t = this.timings.get(actor)?.get(frameNo);
      if (t) result.perf = { ...result.perf, ...walPerf(t, actor.durableFrameNo >= frameNo && actor.current?.config.durability === 'fsync') };
    }
    resolve(result);
  }

  // ---- WAL submission ----------------------------------------------------------------------

  queueFrame(f: QueuedFrame): void {
    let m = this.timings.get(f.actor);
    if (!m) this.timings.set(f.actor, (m = new Map()));
    m.set(f.frameNo, { submitAt: nowMs(), writtenAt: 0 });
    this.turnFrames.push(f);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flushTurn());
    }
  }

  /** One WAL submission per event-loop turn: all frames of the turn, concatenated. */
  private flushTurn(): void {
    this.flushScheduled = false;
    const frames = this.turnFrames;
    this.turnFrames = [];
    if (frames.length === 0) return;
    let total = 0;
    let durable = false;
    for (const f of frames) {
      total += f.buf.length;
      durable ||= f.durable;
    }
    const out = new Uint8Array(new ArrayBuffer(total));
    let p = 0;
    for (const f of frames) {
      out.set(f.buf, p);
      p += f.buf.length;
    }
    const seq = ++this.submitSeq;
    this.inflight.push({ seq, frames, written: false, bytes: total });
    this.inflightBytes += total;
    const msg: WalIn = { t: 'submit', seq, buf: out.buffer, durable, frames: frames.length };
    this.walPort.postMessage(msg, [out.buffer]);
  }

  private onWal(m: WalOut): void {
    switch (m.t) {
      case 'ack':
        return this.onAck(m.writtenThrough, m.durableThrough);
      case 'failed':
        this.walFailed = m.message;
        return;
      case 'replay':
        this.replayChain = this.replayChain.then(async () => {
          await this.onReplayChunk(Buffer.from(m.buf));
          this.walPort.postMessage({ t: 'replayAck', bytes: m.buf.byteLength } satisfies WalIn);
        });
        return;
      case 'replayDone':
        void this.replayChain.then(() => this.replayDone?.());
        return;
      default:
        assertNever(m);
    }
  }

  private onAck(writtenThrough: number, durableThrough: number): void {
    const now = nowMs();
    const acks = new Map<TopicActor, { w: number; d: number }>();
    for (const s of this.inflight) {
      if (s.seq > writtenThrough) break;
      const isDurable = s.seq <= durableThrough;
      for (const f of s.frames) {
        if (!s.written) {
          const t = this.timings.get(f.actor)?.get(f.frameNo);
          if (t) t.writtenAt = now;
          if (f.segment) this.writeSegment(f.segment, f.buf);
        }
        let a = acks.get(f.actor);
        if (!a) acks.set(f.actor, (a = { w: 0, d: 0 }));
        a.w = Math.max(a.w, f.frameNo);
        if (isDurable) a.d = Math.max(a.d, f.frameNo);
      }
      if (!s.written) this.inflightBytes -= s.bytes;
      s.written = true;
    }
    if (writtenThrough > this.writtenSeq) this.writtenSeq = writtenThrough;
    for (const [actor, a] of acks) this.input(actor, { k: 'wal', written: a.w, durable: a.d });
    this.releaseDeferred();
    while (this.inflight.length > 0 && this.inflight[0]!.seq <= durableThrough) {
      const s = this.inflight.shift()!;
      for (const f of s.frames) this.timings.get(f.actor)?.delete(f.frameNo);
    }
    for (let i = this.writtenWaiters.length - 1; i >= 0; i--) {
      if (this.writtenWaiters[i]!.seq <= this.writtenSeq) this.writtenWaiters.splice(i, 1)[0]!.resolve();
    }
    if (this.inflight.length === 0 && this.turnFrames.length === 0) {
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  /** Re-sends deferred appends, oldest first, while WAL credit lasts. */
  private releaseDeferred(): void {
    while (this.deferred.length > 0 && this.inflightBytes < this.opts.walInflightBytes) {
      const d = this.deferred.shift()!;
      this.throttleWaits.set(d.reqId, nowMs() - d.at);
      const actor = this.actorFor(d.req.topic);
      this.input(actor, { k: 'req', reqId: d.reqId, req: d.req });
    }
  }

  /** Writes a frame to its segment; once there, its texts may leave memory. */
  writeSegment(place: SegmentPlacement, frame: Buffer): void {
    this.segments.append(place, frame, () => {
      const head = readAppendHead(frame, (probeFrame(frame, 0, frame.length) as { ok: true; frame: import('../wal/frame.js').FrameView }).frame);
      this.hot.add(place.topicId, head.firstSeq, head.firstSeq + head.count - 1, frame.length + head.count * RECORD_TEXT_OVERHEAD_BYTES);
    });
  }

  releaseLongPolls(): void {
    for (const a of this.actors.values()) this.input(a, { k: 'release' });
  }

  /** Resolves once every submitted frame is durable (shutdown). */
  whenIdle(): Promise<void> {
    this.flushTurn();
    if (this.inflight.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  // ---- checkpoints -------------------------------------------------------------------------

  /**
   * Checkpoint step 1 (DESIGN 2.5): mark the WAL stream, wait until everything submitted before
   * the mark is written and in the segments, fsync the segments, and return this worker's
   * snapshot parts. Parts may include effects of later frames; replay is idempotent.
   */
  async checkpointPrepare(markId: number, final: boolean): Promise<Uint8Array> {
    this.flushTurn();
    const s = this.submitSeq;
    this.walPort.postMessage({ t: 'mark', id: markId } satisfies WalIn);
    if (this.writtenSeq < s) await new Promise<void>((resolve) => this.writtenWaiters.push({ seq: s, resolve }));
    await this.segments.flushAll();
    const parts: TopicPart[] = [];
    const reclaim: { topicId: number; firstSeq: number }[] = [];
    for (const a of this.actors.values()) {
      const inst = a.current;
      if (!inst) continue;
      // Whole sealed segments below the first live seq are dead: reclaim them once this
      // snapshot (which records the floors that killed them) is durable (DESIGN 2.6).
      const segs = inst.segment.firstSeqs;
      const earliest = inst.earliest();
      for (let k = inst.segmentsReclaimed; k < segs.length - 1 && segs[k + 1]! <= earliest; k++) {
        reclaim.push({ topicId: inst.id, firstSeq: segs[k]! });
        inst.segmentsReclaimed = k + 1;
      }
      // A final checkpoint follows a drain: every assigned seq is durable, so no padding is owed
      // and a clean restart continues at head + 1. Otherwise the submitted ceiling is kept.
      const reserved = final ? inst.assigned : Math.max(inst.reservedSubmitted, inst.assigned);
      parts.push({ id: inst.id, name: inst.name, config: inst.config, created_ms: inst.createdAtMs, reserved, ...retentionPart(inst) });
    }
    this.reclaimAfter.set(markId, reclaim);
    // Encoded here, off the HTTP thread: comma-separated JSON objects, concatenated by main.
    const json = parts.map((p) => JSON.stringify(p)).join(',');
    const out = new Uint8Array(Buffer.byteLength(json));
    Buffer.from(out.buffer).write(json);
    return out;
  }

  private readonly reclaimAfter = new Map<number, { topicId: number; firstSeq: number }[]>();

  /** Checkpoint step 5: the snapshot is durable, so dead segments may go. */
  async checkpointCommitted(markId: number): Promise<number> {
    const list = this.reclaimAfter.get(markId) ?? [];
    this.reclaimAfter.delete(markId);
    for (const r of list) await this.segments.unlinkSegment(r.topicId, r.firstSeq);
    return list.length;
  }

  // ---- recovery ----------------------------------------------------------------------------

  private readonly replayStats: ReplayStats = { appends: 0, skipped: 0 };
  private replayDone: (() => void) | undefined;
  private readonly replayed = new Promise<void>((r) => (this.replayDone = r));

  waitReplay(): Promise<void> {
    return this.replayed;
  }

  /** Recovery step 3: instances from the snapshot, their records indexed from segments (cold). */
  async loadSnapshot(parts: TopicPart[]): Promise<void> {
    for (const part of parts) {
      const actor = this.actorFor(part.name);
      this.input(actor, { k: 'load', part });
      this.byTopicId.set(part.id, actor);
      await this.loadSegmentsOf(actor, part.id);
    }
  }

  /** Feeds a recovering topic its segments one at a time; returns how many there were. */
  private async loadSegmentsOf(actor: TopicActor, topicId: number): Promise<number> {
    const segs = await listSegments(this.dataDir, topicId);
    for (let i = 0; i < segs.length; i++) {
      const seg = await readSegment(topicId, segs[i]!, i === segs.length - 1);
      this.input(actor, { k: 'segment', seg });
    }
    return segs.length;
  }

  /** Replay chunks are applied in order; a chunk may wait for a topic's segments to load. */
  private replayChain: Promise<void> = Promise.resolve();

  private async onReplayChunk(buf: Buffer): Promise<void> {
    let off = 0;
    while (off < buf.length) {
      // The WAL thread CRC-checked every frame it sends.
      const p = probeFrame(buf, off, buf.length, false);
      if (!p.ok) throw new Error(`replay chunk holds a bad frame at ${off}: ${p.reason}`);
      const f = p.frame;
      let actor: TopicActor | undefined;
      if (f.type === FrameType.TOPIC_CREATE) {
        const body = decodeJsonBody(buf, f) as { name: string; config: TopicConfig; created_ms: number };
        actor = this.actorFor(body.name);
        this.byTopicId.set(f.topicId, actor);
        // A topic created after the snapshot may already have segments: index them (cold)
        // instead of replaying, copying and rewriting every append they hold.
        const known = actor.current?.id === f.topicId; // already loaded from the snapshot
        if (!known && (await listSegments(this.dataDir, f.topicId)).length > 0) {
          const part: TopicPart = { id: f.topicId, name: body.name, config: body.config, created_ms: body.created_ms, reserved: 0 };
          this.input(actor, { k: 'load', part });
          await this.loadSegmentsOf(actor, f.topicId);
          off += f.size;
          continue;
        }
      } else {
        actor = this.byTopicId.get(f.topicId);
      }
      if (actor) {
        if (f.type === FrameType.APPEND) this.replayStats.appends++;
        this.input(actor, { k: 'frame', frame: buf.subarray(off, off + f.size) });
        if (f.type === FrameType.TOPIC_DELETE && !actor.current) this.segments.dropTopic(f.topicId);
      }
      off += f.size;
    }
  }

  /** Ends recovery: pads reservations and counts topics. Returns live topic ids. */
  finishRecovery(): { topics: number; appends: number; ids: number[] } {
    const ids: number[] = [];
    this.rngs.clear(); // actors' RNGs are seeded from the boot seed, known only now
    for (const a of this.actors.values()) {
      if (!a.current) continue;
      this.input(a, { k: 'finish' }, this.opts.bootSeed);
      this.byTopicId.set(a.current.id, a);
      ids.push(a.current.id);
    }
    Atomics.add(this.opts.counters, 0, ids.length);
    return { topics: ids.length, appends: this.replayStats.appends, ids };
  }

  // ---- listings ----------------------------------------------------------------------------

  list(prefix: string, after: string, limit: number): TopicSummary[] {
    const names = [...this.actors.keys()].filter((n) => n > after && n.startsWith(prefix)).sort();
    const out: TopicSummary[] = [];
    const now = this.clock.now();
    for (const n of names) {
      const s = this.actors.get(n)!.summary(now);
      if (s) out.push(s);
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Head and earliest seq of each named topic (null when absent), for a watch POST. */
  watermarks(names: string[]): ({ head: number; earliest: number } | null)[] {
    const now = this.clock.now();
    return names.map((n) => {
      const s = this.actors.get(n)?.summary(now);
      return s ? { head: s.head_seq, earliest: s.earliest_seq } : null;
    });
  }

  /** Records a consumption on each named topic (a list page with touch=true), then re-reports them. */
  touch(names: string[]): TopicSummary[] {
    const out: TopicSummary[] = [];
    for (const n of names) {
      const a = this.actors.get(n);
      if (!a) continue;
      this.input(a, { k: 'consumed' });
      const s = a.summary(this.clock.now());
      if (s) out.push(s);
    }
    return out;
  }

  stats(): TopicStats[] {
    const out: TopicStats[] = [];
    for (const a of this.actors.values()) {
      const s = a.stats(this.clock.now());
      if (s) out.push(s);
    }
    return out;
  }
}

/**
 * The performance block's WAL fields: `wal_append_ms` is the time from submission to the reply
 * point for non-fsync classes (enqueue, write, and any reservation wait), or to the write for
 * fsync; `fsync_ms` is the time parked on the group fsync, and 0 unless the topic is fsync.
 */
function walPerf(t: FrameTiming, fsync: boolean): PerfFields {
  const now = nowMs();
  if (!fsync) return { wal_append_ms: roundMs(now - t.submitAt), fsync_ms: 0 };
  const written = t.writtenAt || now;
  return { wal_append_ms: roundMs(written - t.submitAt), fsync_ms: roundMs(now - written) };
}
