// The context a TopicActor step runs in: stamped time, seeded randomness and effect sinks.
// The host implements it; replay and simulation implement it too. Actors never reach past it.
import type { Rng } from '../../core/rng.js';
import type { AppendRequest, TopicResult, WatchEvent } from '../../core/messages.js';

/** Where an APPEND frame goes in the topic's segments once the WAL has written it. */
export interface SegmentPlacement {
  topicId: number;
  segFirstSeq: number;
  offset: number;
}

export interface ColdRange {
  segFirstSeq: number;
  offset: number;
  len: number;
}

export interface ActorCtx {
  /** Time of the input being handled (ms). Constant within a step. */
  readonly now: number;
  readonly rng: Rng;
  /** Sends a reply. `frameNo` names the frame whose WAL timing goes into the performance block. */
  reply(reqId: number, result: TopicResult, frameNo?: number): void;
  /** Queues a frame for the WAL. Frame numbers are per actor and strictly increasing. */
  submit(frameNo: number, frame: Buffer, durable: boolean, segment?: SegmentPlacement): void;
  setTimer(timerId: number, atMs: number): void;
  /** Reads byte ranges of the topic's segments; the host answers with an onColdRead input. */
  readCold(token: number, topicId: number, ranges: ColdRange[]): void;
  /** Texts of [fromSeq, toSeq] are in memory again (the host's cache budget counts them). */
  textsLoaded(topicId: number, fromSeq: number, toSeq: number, bytes: number): void;
  cancelTimer(timerId: number): void;
  /** A fresh, never reused topic instance id. */
  newTopicId(): number;
  /** Topic-count cap (G15): true when a new topic may be created. */
  tryAcquireTopicSlot(): boolean;
  releaseTopicSlot(): void;
  /** True while the worker's WAL credit (bytes submitted, not yet written) is exhausted. */
  walCreditExhausted(): boolean;
  /** Parks a request until WAL credit is available again; the host re-sends it then. */
  deferForCredit(reqId: number, req: AppendRequest): void;
  /** Recovery: a replayed append the segments lack is written to its segment again. */
  rewriteSegment(place: SegmentPlacement, frame: Buffer): void;
  /** Fire-and-forget notices for the host (segment directory creation/removal). */
  topicCreated(topicId: number): void;
  topicDeleted(topicId: number): void;
  /** True when a watch stream follows this topic (pushes are rendered only then). */
  watched(): boolean;
  /** Sends a watch event to main on the events port (batched per turn). */
  publish(event: WatchEvent): void;
}

/** What a trace records of a publish effect: its identity, not its bytes (they follow from the state). */
export function publishSummary(ev: WatchEvent): unknown[] {
  switch (ev.k) {
    case 'batch':
      return [ev.k, ev.instanceId, ev.from, ev.to, ev.durableHead, ev.stale];
    case 'durable':
      return [ev.k, ev.instanceId, ev.durableHead];
    case 'deleted':
      return [ev.k, ev.instanceId, ev.head];
  }
}
