// HostCtx: the live implementation of ActorCtx, one per actor, reused across steps (a fresh
// object of closures per step would be garbage on the hot path). `begin` stamps the step's
// time and RNG; with tracing on, every query answer and effect is also recorded for the trace.
import { publishSummary, type ActorCtx, type ColdRange, type SegmentPlacement } from '../actors/topic/ctx.js';
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { AppendRequest, TopicResult, WatchEvent } from '../core/messages.js';
import type { Rng } from '../core/rng.js';
import { nowMs } from '../core/stopwatch.js';
import { encodeTraceValue } from '../replay/traceCodec.js';
import { RECORD_TEXT_OVERHEAD_BYTES, type ActorHost } from './host.js';

export interface StepRecord {
  q: unknown[];
  out: unknown[] | undefined;
}

export class HostCtx implements ActorCtx {
  now = 0;
  rng!: Rng;
  private rec: StepRecord | undefined;

  constructor(
    private readonly host: ActorHost,
    private readonly actor: TopicActor,
  ) {}

  begin(now: number, rng: Rng, rec: StepRecord | undefined): void {
    this.now = now;
    this.rng = rng;
    this.rec = rec;
  }

  private out(name: string, ...args: unknown[]): void {
    this.rec?.out?.push(JSON.parse(encodeTraceValue([name, ...args])));
  }

  private ask<T>(v: T): T {
    this.rec?.q.push(v);
    return v;
  }

  reply(reqId: number, result: TopicResult, frameNo?: number): void {
    if (this.rec) this.out('reply', reqId, result, frameNo);
    this.host.sendReply(this.actor, reqId, result, frameNo);
  }

  submit(frameNo: number, frame: Buffer, durable: boolean, segment?: SegmentPlacement): void {
    if (this.rec) this.out('submit', frameNo, frame, durable, segment);
    this.host.queueFrame({ actor: this.actor, frameNo, buf: frame, durable, segment });
  }

  setTimer(timerId: number, atMs: number): void {
    if (this.rec) this.out('setTimer', timerId, atMs);
    const { host, actor } = this;
    const key = `${actor.name}\u0000${timerId}`;
    const t = setTimeout(() => {
      host.timers.delete(key);
      host.input(actor, { k: 'timer', id: timerId });
    }, Math.max(0, atMs - host.clock.now()));
    host.timers.set(key, t);
  }

  cancelTimer(timerId: number): void {
    if (this.rec) this.out('cancelTimer', timerId);
    const key = `${this.actor.name}\u0000${timerId}`;
    const t = this.host.timers.get(key);
    if (t) clearTimeout(t);
    this.host.timers.delete(key);
  }

  readCold(token: number, topicId: number, ranges: ColdRange[]): void {
    if (this.rec) this.out('readCold', token, topicId, ranges);
    const { host, actor } = this;
    Promise.all(ranges.map((r) => host.segments.readRange(topicId, r.segFirstSeq, r.offset, r.len))).then(
      (bufs) => host.input(actor, { k: 'cold', token, bufs }),
      (err: Error) => host.input(actor, { k: 'cold', token, bufs: err.message }),
    );
  }

  textsLoaded(topicId: number, fromSeq: number, toSeq: number, bytes: number): void {
    if (this.rec) this.out('textsLoaded', topicId, fromSeq, toSeq, bytes);
    this.host.hot.add(topicId, fromSeq, toSeq, bytes + (toSeq - fromSeq + 1) * RECORD_TEXT_OVERHEAD_BYTES);
  }

  walCreditExhausted(): boolean {
    const o = this.host.opts;
    return this.ask(o.walInflightBytes > 0 && this.host.inflightBytes >= o.walInflightBytes);
  }

  deferForCredit(reqId: number, req: AppendRequest): void {
    if (this.rec) this.out('deferForCredit', reqId);
    this.host.deferred.push({ reqId, req, at: nowMs() });
  }

  rewriteSegment(place: SegmentPlacement, frame: Buffer): void {
    if (this.rec) this.out('rewriteSegment', place, frame);
    this.host.writeSegment(place, frame);
  }

  newTopicId(): number {
    const o = this.host.opts;
    const local = this.host.localTopicCounter++;
    return this.ask(o.bootEpoch * 0x100_0000 + local * o.workers + o.workerIndex);
  }

  tryAcquireTopicSlot(): boolean {
    const o = this.host.opts;
    const n = Atomics.add(o.counters, 0, 1) + 1;
    if (o.maxTopics > 0 && n > o.maxTopics) {
      Atomics.sub(o.counters, 0, 1);
      return this.ask(false);
    }
    return this.ask(true);
  }

  releaseTopicSlot(): void {
    if (this.rec) this.out('releaseTopicSlot');
    Atomics.sub(this.host.opts.counters, 0, 1);
  }

  topicCreated(topicId: number): void {
    if (this.rec) this.out('topicCreated', topicId);
    this.host.byTopicId.set(topicId, this.actor);
  }

  watched(): boolean {
    return this.ask(this.host.watch.watched(this.actor.name));
  }

  publish(event: WatchEvent): void {
    if (this.rec) this.out('publish', ...publishSummary(event));
    this.host.watch.publish(event);
  }

  topicDeleted(topicId: number): void {
    if (this.rec) this.out('topicDeleted', topicId);
    this.host.byTopicId.delete(topicId);
    this.host.hot.dropTopic(topicId);
    this.host.segments.dropTopic(topicId);
  }
}
