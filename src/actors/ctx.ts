// The context an actor step runs in (docs/ARCHITECTURE.md "Threads", "Traces and replay"): the step's stamped time, the actor's seeded
// RNG, a few queries, and effects. Effects are plain data (`Effect`); `StepCtx` is the one
// implementation of ActorCtx. The live host, the trace replayer and the simulations differ only
// in the EffectSink that carries effects out and the Queries that answer questions, so adding an
// effect is one variant here plus one case per sink. Recording a step for a trace happens here.
import type { Rng } from '../core/rng.js';
import type { AppendRequest, TopicRequest, TopicResult } from '../protocol/messages/rpc.js';
import type { WatchEvent, WorkEvent } from '../protocol/messages/events.js';
import { assertNever } from '../protocol/errors.js';
import { encodeTraceValue } from '../core/traceCodec.js';
import type { SegmentPlacement } from '../format/layout.js';

export interface ColdRange {
  segFirstSeq: number;
  offset: number;
  len: number;
  /** A range of the topic's packed first segment (absent: an own segment file). */
  packed?: boolean;
}

/** Everything an actor step can ask its runtime to do, as plain data. */
export type Effect =
  /** A reply to request `reqId`; `frameNo` names the frame whose WAL timing goes into performance. */
  | { k: 'reply'; reqId: number; result: TopicResult; frameNo: number | undefined }
  /**
   * A frame for the WAL. Frame numbers are per actor and strictly increasing. `lazy`: nothing
   * waits for it, so the worker may hold it for its next submission (see `submitLazy`).
   */
  | { k: 'submit'; frameNo: number; frame: Buffer; durable: boolean; segment: SegmentPlacement | undefined; lazy: boolean }
  | { k: 'setTimer'; timerId: number; atMs: number }
  | { k: 'cancelTimer'; timerId: number }
  /** Byte ranges of the topic's segments; the host answers with a `cold` input. */
  | { k: 'readCold'; token: number; topicId: number; ranges: ColdRange[] }
  /** Texts of [fromSeq, toSeq] are in memory again (the host's cache budget counts them). */
  | { k: 'textsLoaded'; topicId: number; fromSeq: number; toSeq: number; bytes: number }
  /** Park an append until WAL credit is available again; the host re-sends it then. */
  | {
      k: 'deferForCredit';
      reqId: number;
      req: AppendRequest;
      /** effective_priority now: the WAL wait is served by it. */ priority: number;
    }
  /** Recovery: a replayed append the segments lack is written to its segment again. */
  | { k: 'rewriteSegment'; place: SegmentPlacement; frame: Buffer }
  | { k: 'releaseTopicSlot' }
  | { k: 'topicCreated'; topicId: number }
  | { k: 'topicDeleted'; topicId: number }
  /** A watch event for main (it crosses with the turn's results, in order). */
  | { k: 'publish'; event: WatchEvent }
  /** A `/work` stream event for main (it crosses with the turn's results, in order). */
  | { k: 'work'; event: WorkEvent }
  /**
   * A request to another topic's actor (dead-letter appends, redrives). The host delivers it after this
   * step, on this worker or over a peer port, and answers with a `peerReply` input carrying `token`.
   */
  | { k: 'peerRequest'; token: number; req: TopicRequest };

/** Questions a step may ask its runtime; every answer is recorded in a trace. */
export interface Queries {
  /** True while the worker's WAL credit (bytes submitted, not yet written) is exhausted. */
  walCreditExhausted(): boolean;
  /** A fresh, never reused topic instance id. */
  newTopicId(): number;
  /** Topic-count cap (docs/API.md "Limits"): true when a new topic may be created. */
  tryAcquireTopicSlot(): boolean;
  /** True when a watch stream follows this topic (pushes are rendered only then). */
  watched(): boolean;
  /** The boot epoch of this process (lease ids carry it, so they never repeat across boots). */
  bootEpoch(): number;
  /** StorageState: OK, FULL (the disk is full) or FAILED (a write or fsync failed). */
  storageState(): number;
  /** True when the volume has `bytes` free (or its free space is not known). */
  volumeHas(bytes: number): boolean;
  /**
   * True when the WAL can take a frame of `bytes` now without new disk space, and that room is
   * then the frame's (docs/ARCHITECTURE.md "Deleting on a full disk"). Asked only on a full disk.
   */
  walRoomFor(bytes: number): boolean;
}

export interface EffectSink {
  run(e: Effect): void;
}

/** What a trace keeps of one step: query answers and (optionally) effects, in call order. */
export interface StepRecord {
  q: unknown[] | undefined;
  out: unknown[] | undefined;
}

/** The interface actor code sees: time, randomness, queries and effect methods. */
export interface ActorCtx extends Queries {
  /** Time of the input being handled (ms). Constant within a step. */
  readonly now: number;
  readonly rng: Rng;
  reply(reqId: number, result: TopicResult, frameNo?: number): void;
  submit(frameNo: number, frame: Buffer, durable: boolean, segment?: SegmentPlacement): void;
  /**
   * A frame no reply, gate or push waits for (a non-durable lease log, a `memory` topic's
   * append): it goes to the WAL with the worker's next submission or within a few ms, whichever
   * comes first, instead of waking the WAL thread on its own. Still in frame order with
   * everything the actor submits after it; `segment`, where it goes once written.
   */
  submitLazy(frameNo: number, frame: Buffer, segment?: SegmentPlacement): void;
  setTimer(timerId: number, atMs: number): void;
  cancelTimer(timerId: number): void;
  readCold(token: number, topicId: number, ranges: ColdRange[]): void;
  textsLoaded(topicId: number, fromSeq: number, toSeq: number, bytes: number): void;
  deferForCredit(reqId: number, req: AppendRequest, priority: number): void;
  rewriteSegment(place: SegmentPlacement, frame: Buffer): void;
  releaseTopicSlot(): void;
  topicCreated(topicId: number): void;
  topicDeleted(topicId: number): void;
  publish(event: WatchEvent): void;
  work(event: WorkEvent): void;
  peerRequest(token: number, req: TopicRequest): void;
}

/** The recorded form of an effect: its identity, not bulk bytes that follow from the state. */
export function traceForm(e: Effect): unknown {
  switch (e.k) {
    case 'publish': {
      const ev = e.event;
      switch (ev.k) {
        case 'batch':
          return [e.k, ev.k, ev.instanceId, ev.from, ev.to, ev.durableHead, ev.stale];
        case 'durable':
          return [e.k, ev.k, ev.instanceId, ev.durableHead];
        case 'deleted':
          return [e.k, ev.k, ev.instanceId, ev.head];
        default:
          return assertNever(ev);
      }
    }
    case 'deferForCredit':
      return [e.k, e.reqId];
    case 'work':
      return e.event.k === 'jobs' ? [e.k, e.event.k, e.event.connId, e.event.frames.byteLength] : [e.k, e.event];
    default:
      return e;
  }
}

/**
 * The one ActorCtx. Reused across steps of one actor: `begin` stamps the step's time and RNG
 * (a fresh object of closures per step would be garbage on the hot path).
 */
export class StepCtx implements ActorCtx {
  now = 0;
  rng!: Rng;
  private rec: StepRecord | undefined;

  constructor(
    private readonly sink: EffectSink,
    private readonly queries: Queries,
  ) {}

  begin(now: number, rng: Rng, rec: StepRecord | undefined): this {
    this.now = now;
    this.rng = rng;
    this.rec = rec;
    return this;
  }

  private emit(e: Effect): void {
    if (this.rec?.out) this.rec.out.push(JSON.parse(encodeTraceValue(traceForm(e))));
    this.sink.run(e);
  }

  private ask<T>(v: T): T {
    this.rec?.q?.push(v);
    return v;
  }

  walCreditExhausted(): boolean {
    return this.ask(this.queries.walCreditExhausted());
  }
  newTopicId(): number {
    return this.ask(this.queries.newTopicId());
  }
  tryAcquireTopicSlot(): boolean {
    return this.ask(this.queries.tryAcquireTopicSlot());
  }
  watched(): boolean {
    return this.ask(this.queries.watched());
  }
  bootEpoch(): number {
    return this.ask(this.queries.bootEpoch());
  }
  storageState(): number {
    return this.ask(this.queries.storageState());
  }
  volumeHas(bytes: number): boolean {
    return this.ask(this.queries.volumeHas(bytes));
  }
  walRoomFor(bytes: number): boolean {
    return this.ask(this.queries.walRoomFor(bytes));
  }

  reply(reqId: number, result: TopicResult, frameNo?: number): void {
    this.emit({ k: 'reply', reqId, result, frameNo });
  }
  submit(frameNo: number, frame: Buffer, durable: boolean, segment?: SegmentPlacement): void {
    this.emit({ k: 'submit', frameNo, frame, durable, segment, lazy: false });
  }
  submitLazy(frameNo: number, frame: Buffer, segment?: SegmentPlacement): void {
    this.emit({ k: 'submit', frameNo, frame, durable: false, segment, lazy: true });
  }
  setTimer(timerId: number, atMs: number): void {
    this.emit({ k: 'setTimer', timerId, atMs });
  }
  cancelTimer(timerId: number): void {
    this.emit({ k: 'cancelTimer', timerId });
  }
  readCold(token: number, topicId: number, ranges: ColdRange[]): void {
    this.emit({ k: 'readCold', token, topicId, ranges });
  }
  textsLoaded(topicId: number, fromSeq: number, toSeq: number, bytes: number): void {
    this.emit({ k: 'textsLoaded', topicId, fromSeq, toSeq, bytes });
  }
  deferForCredit(reqId: number, req: AppendRequest, priority: number): void {
    this.emit({ k: 'deferForCredit', reqId, req, priority });
  }
  rewriteSegment(place: SegmentPlacement, frame: Buffer): void {
    this.emit({ k: 'rewriteSegment', place, frame });
  }
  releaseTopicSlot(): void {
    this.emit({ k: 'releaseTopicSlot' });
  }
  topicCreated(topicId: number): void {
    this.emit({ k: 'topicCreated', topicId });
  }
  topicDeleted(topicId: number): void {
    this.emit({ k: 'topicDeleted', topicId });
  }
  publish(event: WatchEvent): void {
    this.emit({ k: 'publish', event });
  }
  work(event: WorkEvent): void {
    this.emit({ k: 'work', event });
  }
  peerRequest(token: number, req: TopicRequest): void {
    this.emit({ k: 'peerRequest', token, req });
  }
}
