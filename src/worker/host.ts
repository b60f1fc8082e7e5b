// ActorHost: the runtime of one topic worker thread. It feeds inputs to TopicActors one at a
// time, stamps each with the injected clock, and carries out their effects: replies, WAL
// submissions (one buffer per event-loop turn), timers and segment writes. It owns no topic
// state itself. Invariant: an actor step never awaits; effects run after the step returns.
import type { MessagePort } from 'node:worker_threads';
import type { Clock } from '../core/clock.js';
import { seededRng, Rng } from '../core/rng.js';
import { nowMs, roundMs } from '../core/stopwatch.js';
import type { PerfFields, TopicRequest, TopicResult, TopicStats, TopicSummary, WalIn, WalOut } from '../core/messages.js';
import { assertNever } from '../core/errors.js';
import { TopicActor, ActorOptions } from '../actors/topic/topicActor.js';
import type { ActorCtx, SegmentPlacement } from '../actors/topic/ctx.js';
import { probeFrame } from '../wal/frame.js';
import { FrameType } from '../wal/format.js';
import { replayFrame, finishInstanceRecovery, ReplayStats } from '../actors/topic/replay.js';
import { decodeJsonBody } from '../wal/frame.js';
import type { SegmentStore } from '../storage/segmentStore.js';

interface FrameTiming {
  submitAt: number;
  writtenAt: number;
  durableAt: number;
}

interface QueuedFrame {
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
}

export interface HostOptions extends ActorOptions {
  workerIndex: number;
  workers: number;
  bootEpoch: number;
  bootSeed: string;
  /** Shared counter [topicCount] for the max_topics cap, across workers. */
  counters: Int32Array;
}

export class ActorHost {
  private readonly actors = new Map<string, TopicActor>();
  private readonly byTopicId = new Map<number, TopicActor>();
  private readonly rngs = new Map<TopicActor, Rng>();
  private readonly replies = new Map<number, (r: TopicResult) => void>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly timings = new WeakMap<TopicActor, Map<number, FrameTiming>>();
  private turnFrames: QueuedFrame[] = [];
  private flushScheduled = false;
  private submitSeq = 0;
  private readonly inflight: Submission[] = [];
  private nextReqId = 1;
  private localTopicCounter = 0;
  private walFailed: string | undefined;
  private readonly idleWaiters: (() => void)[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly opts: HostOptions,
    private readonly walPort: MessagePort,
    private readonly segments: SegmentStore,
  ) {
    walPort.on('message', (m: WalOut) => this.onWal(m));
  }

  private actorFor(name: string): TopicActor {
    let a = this.actors.get(name);
    if (!a) {
      a = new TopicActor(name, this.opts);
      this.actors.set(name, a);
      this.rngs.set(a, seededRng(`${this.opts.bootSeed}/${name}`));
    }
    return a;
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
      this.step(actor, (ctx) => actor.step(ctx, reqId, req));
    });
  }

  private step(actor: TopicActor, fn: (ctx: ActorCtx) => void): void {
    const ctx = this.makeCtx(actor);
    fn(ctx);
  }

  private makeCtx(actor: TopicActor): ActorCtx {
    const host = this;
    return {
      now: this.clock.now(),
      rng: this.rngs.get(actor)!,
      reply(reqId, result, frameNo) {
        host.sendReply(actor, reqId, result, frameNo);
      },
      submit(frameNo, frame, durable, segment) {
        host.queueFrame({ actor, frameNo, buf: frame, durable, segment });
      },
      setTimer(timerId, atMs) {
        const key = `${actor.name}\u0000${timerId}`;
        const t = setTimeout(() => {
          host.timers.delete(key);
          host.step(actor, (c) => actor.onTimer(c, timerId));
        }, Math.max(0, atMs - host.clock.now()));
        host.timers.set(key, t);
      },
      cancelTimer(timerId) {
        const key = `${actor.name}\u0000${timerId}`;
        const t = host.timers.get(key);
        if (t) clearTimeout(t);
        host.timers.delete(key);
      },
      newTopicId() {
        return host.newTopicId(actor);
      },
      tryAcquireTopicSlot() {
        const max = host.opts.maxTopics;
        const n = Atomics.add(host.opts.counters, 0, 1) + 1;
        if (max > 0 && n > max) {
          Atomics.sub(host.opts.counters, 0, 1);
          return false;
        }
        return true;
      },
      releaseTopicSlot() {
        Atomics.sub(host.opts.counters, 0, 1);
      },
      topicCreated(topicId) {
        host.byTopicId.set(topicId, actor);
      },
      topicDeleted(topicId) {
        host.byTopicId.delete(topicId);
        host.segments.dropTopic(topicId);
      },
    };
  }

  private newTopicId(_actor: TopicActor): number {
    const local = this.localTopicCounter++;
    return this.opts.bootEpoch * 0x100_0000 + local * this.opts.workers + this.opts.workerIndex;
  }

  private sendReply(actor: TopicActor, reqId: number, result: TopicResult, frameNo: number | undefined): void {
    const resolve = this.replies.get(reqId);
    if (!resolve) return;
    this.replies.delete(reqId);
    if (result.ok && frameNo !== undefined) {
      const t = this.timings.get(actor)?.get(frameNo);
      if (t) result.perf = { ...result.perf, ...this.walPerf(t, actor, frameNo) };
    }
    resolve(result);
  }

  private walPerf(t: FrameTiming, _actor: TopicActor, _frameNo: number): PerfFields {
    const now = nowMs();
    const written = t.writtenAt || now;
    const durable = t.durableAt;
    return {
      wal_append_ms: roundMs(Math.max(0, (t.writtenAt ? written : now) - t.submitAt)),
      fsync_ms: durable ? roundMs(Math.max(0, durable - written)) : 0,
    };
  }

  // ---- WAL submission ----------------------------------------------------------------------

  private queueFrame(f: QueuedFrame): void {
    let m = this.timings.get(f.actor);
    if (!m) this.timings.set(f.actor, (m = new Map()));
    m.set(f.frameNo, { submitAt: nowMs(), writtenAt: 0, durableAt: 0 });
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
    this.inflight.push({ seq, frames, written: false });
    const msg: WalIn = { t: 'submit', seq, buf: out.buffer, durable };
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
        return this.onReplayChunk(Buffer.from(m.buf));
      case 'replayDone':
        this.replayDone?.();
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
        const t = this.timings.get(f.actor)?.get(f.frameNo);
        if (t) {
          if (!s.written) t.writtenAt = now;
          if (isDurable) t.durableAt = now;
        }
        let a = acks.get(f.actor);
        if (!a) acks.set(f.actor, (a = { w: 0, d: 0 }));
        a.w = Math.max(a.w, f.frameNo);
        if (isDurable) a.d = Math.max(a.d, f.frameNo);
        if (!s.written && f.segment) this.segments.append(f.segment, f.buf);
      }
      s.written = true;
    }
    for (const [actor, a] of acks) this.step(actor, (ctx) => actor.onWalAck(ctx, a.w, a.d));
    while (this.inflight.length > 0 && this.inflight[0]!.seq <= durableThrough) {
      const s = this.inflight.shift()!;
      for (const f of s.frames) this.timings.get(f.actor)?.delete(f.frameNo);
    }
    if (this.inflight.length === 0 && this.turnFrames.length === 0) {
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  /** Resolves once every submitted frame is durable (shutdown, checkpoints). */
  whenIdle(): Promise<void> {
    if (this.inflight.length === 0 && this.turnFrames.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  // ---- recovery ----------------------------------------------------------------------------

  private replayStats: ReplayStats = { appends: 0, skipped: 0 };
  private replayDone: (() => void) | undefined;

  waitReplay(): Promise<void> {
    return new Promise((r) => (this.replayDone = r));
  }

  private onReplayChunk(buf: Buffer): void {
    let off = 0;
    while (off < buf.length) {
      const p = probeFrame(buf, off, buf.length);
      if (!p.ok) throw new Error(`replay chunk holds a bad frame at ${off}: ${p.reason}`);
      const f = p.frame;
      let actor: TopicActor | undefined;
      if (f.type === FrameType.TOPIC_CREATE) {
        const name = (decodeJsonBody(buf, f) as { name: string }).name;
        actor = this.actorFor(name);
        this.byTopicId.set(f.topicId, actor);
      } else {
        actor = this.byTopicId.get(f.topicId);
      }
      if (actor) replayFrame(actor, buf, f, this.opts.segmentBytes, this.replayStats);
      off += f.size;
    }
  }

  /** Ends recovery: pads reservations, counts topics, and returns how many are live. */
  finishRecovery(maxLocalCounterSeen: number): { topics: number; appends: number } {
    this.localTopicCounter = Math.max(this.localTopicCounter, maxLocalCounterSeen);
    let topics = 0;
    for (const a of this.actors.values()) {
      if (!a.current) continue;
      finishInstanceRecovery(a.current);
      this.byTopicId.set(a.current.id, a);
      topics++;
    }
    Atomics.add(this.opts.counters, 0, topics);
    return { topics, appends: this.replayStats.appends };
  }

  // ---- listings ----------------------------------------------------------------------------

  list(prefix: string, after: string, limit: number, touch: boolean): TopicSummary[] {
    const names = [...this.actors.keys()].filter((n) => n > after && n.startsWith(prefix)).sort();
    const out: TopicSummary[] = [];
    const now = this.clock.now();
    for (const n of names) {
      const s = this.actors.get(n)!.summary(now, touch);
      if (s) out.push(s);
      if (out.length >= limit) break;
    }
    return out;
  }

  stats(): TopicStats[] {
    const out: TopicStats[] = [];
    for (const a of this.actors.values()) {
      const s = a.stats();
      if (s) out.push(s);
    }
    return out;
  }
}
