// Every input a TopicActor can receive, as plain data, and the one function that applies an
// input to an actor. The live host and the trace replayer both go through applyInput, so a
// recorded trace of inputs reproduces an actor's outputs exactly (docs/ARCHITECTURE.md "Traces and replay").
import type { TopicRequest, TopicResult } from '../../protocol/messages/rpc.js';
import { assertNever } from '../../protocol/errors.js';
import type { ActorCtx } from '../ctx.js';
import type { TopicActor } from './topicActor.js';
import type { FrameView } from '../../format/frame.js';
import { probeFrame } from '../../format/frame.js';
import { finishInstanceRecovery, loadInstance, loadPackedFrame, loadSegment, replayFrame } from './replay.js';
import { afterQueueRecovery } from '../queue/queueSteps.js';
import { sealActive, type SegmentLimits } from './appendOp.js';
import type { DormantTopic, TopicPart } from '../../format/topicPart.js';
import type { LoadedSegment } from '../../storage/segmentLoad.js';
import { CorruptionError } from '../../core/corruption.js';

export type ActorInput =
  | { k: 'req'; reqId: number; req: TopicRequest }
  | { k: 'wal'; written: number; durable: number }
  | { k: 'timer'; id: number }
  | { k: 'cold'; token: number; bufs: Buffer[] | string }
  | { k: 'drop'; topicId: number; from: number; to: number }
  /** Compaction: the topic's active own segment is mostly dead; the next frame starts a new one (appendOp.ts sealActive). */
  | { k: 'seal'; topicId: number }
  | { k: 'release' }
  /** Shutdown: the topic's forwarders stop for good (forwarder.ts stopRouting). */
  | { k: 'stopRouters' }
  /** Another topic's actor answered this actor's peer request `token`. */
  | { k: 'peerReply'; token: number; result: TopicResult }
  /** Lazy lease expiry of a queue before its stats are read. */
  | { k: 'sweep' }
  /** The WAL failed: every reply waiting for a frame fails. */
  | { k: 'walFailed' }
  /** A topic list with touch=true named this topic. */
  | { k: 'consumed' }
  /** Recovery: the snapshot part of this topic (its segments follow as `segment` inputs). */
  | { k: 'load'; part: TopicPart }
  /** Recovery: the bytes of the topic's next segment, in order. */
  | { k: 'segment'; seg: LoadedSegment }
  /**
   * Recovery or a wake: the next frame of the topic's packed first segment (before any
   * `segment`); `hot`: its records keep their texts (a wake: the request that woke the topic
   * usually reads them next), the host then counts them in its cache budget.
   */
  | { k: 'packed'; frame: Buffer; hot?: boolean }
  /** Recovery: one WAL frame after the checkpoint (whole frame bytes). */
  | { k: 'frame'; frame: Buffer }
  /** Recovery is over: pad reservations, count live records. */
  | { k: 'finish' }
  /**
   * A sleeping topic wakes (dormant.ts): its record, then its packed frames (`packed`), then
   * `finish`, which keeps the record's watermarks.
   */
  | { k: 'wake'; part: DormantTopic }
  /** The topic goes to sleep: the host keeps its record (made just before), the actor forgets it. */
  | { k: 'sleep' };

export type ApplyOptions = SegmentLimits;

export function applyInput(actor: TopicActor, ctx: ActorCtx, input: ActorInput, opts: ApplyOptions): void {
  switch (input.k) {
    case 'req':
      return actor.step(ctx, input.reqId, input.req);
    case 'wal':
      return actor.onWalAck(ctx, input.written, input.durable);
    case 'timer':
      return actor.onTimer(ctx, input.id);
    case 'cold':
      return actor.onColdRead(ctx, input.token, input.bufs);
    case 'drop':
      return actor.dropTexts(input.topicId, input.from, input.to);
    case 'seal':
      if (actor.current?.id === input.topicId) sealActive(actor.current);
      return;
    case 'release':
      return actor.releaseParked(ctx);
    case 'stopRouters':
      return actor.stopRouters(ctx);
    case 'peerReply':
      return actor.onPeerReply(ctx, input.token, input.result);
    case 'sweep':
      return actor.sweep(ctx);
    case 'walFailed':
      return actor.onWalFailed(ctx);
    case 'consumed':
      return actor.consumed(ctx);
    case 'load':
      actor.current = loadInstance(input.part);
      return;
    case 'segment':
      if (actor.current) loadSegment(actor.current, input.seg);
      return;
    case 'packed':
      if (actor.current) loadPackedFrame(actor.current, input.frame, input.hot === true);
      return;
    case 'frame': {
      const p = probeFrame(input.frame, 0, input.frame.length);
      if (!p.ok) throw new CorruptionError('replayed frame', `damaged (${p.reason})`);
      const f: FrameView = p.frame;
      const rewrite = replayFrame(actor, input.frame, f, opts, { appends: 0, skipped: 0 });
      if (rewrite) ctx.rewriteSegment(rewrite.place, rewrite.frame);
      return;
    }
    case 'finish':
      if (actor.current) finishInstanceRecovery(actor.current);
      afterQueueRecovery(actor, ctx, actor.current);
      return;
    case 'wake':
      actor.current = loadInstance(input.part, input.part);
      actor.resumeLeases(input.part.lease_no ?? 0);
      return;
    case 'sleep':
      return actor.sleep();
    default:
      assertNever(input);
  }
}
