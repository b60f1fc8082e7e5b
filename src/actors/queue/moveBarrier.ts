// MoveBarrier (docs/QUEUES.md "Dead-lettering"): the claim replies of one claim pass that sent
// jobs to the dead-letter topic wait here until every one of those moves got its first answer,
// then wait (as gates) for the queue's DELETE frames of the moved jobs to reach the queue's ack
// point. So once a claim's reply is out, the queue's state and counters and a read of the
// dead-letter topic (on any worker) all show the moves it caused; a refused move is reported by
// the queue's counters as in transit and retried in the background. Runs in the queue topic's
// actor; pure.
import { fail } from '../../protocol/errors.js';
import type { ActorCtx } from '../ctx.js';
import type { ActorCore } from '../topic/actorCore.js';
import type { GateCondition, TopicInstance } from '../topic/instance.js';
import type { MoveWaiters } from './queueState.js';

interface HeldReply {
  reqId: number;
  /** The gate the reply waited for before the moves (a `leases_durable` claim's LEASES frame). */
  cond: GateCondition;
  send: (c: ActorCtx) => void;
}

export class MoveBarrier implements MoveWaiters {
  private left: number;
  private deleteFrameNo = 0;
  private readonly held: HeldReply[] = [];
  private done = false;

  constructor(
    private readonly a: ActorCore,
    private readonly inst: TopicInstance,
    moves: number,
  ) {
    this.left = moves;
  }

  /** A claim reply that goes out once the moves settled (and `cond` holds). */
  hold(reqId: number, cond: GateCondition, send: (c: ActorCtx) => void): void {
    this.held.push({ reqId, cond, send });
  }

  /** One move got its first answer; `frameNo` is its DELETE frame (0: not moved, or no frame). */
  settle(ctx: ActorCtx, frameNo: number): void {
    if (this.done) return;
    this.deleteFrameNo = Math.max(this.deleteFrameNo, frameNo);
    if (--this.left > 0) return;
    this.done = true;
    const cls = this.inst.logClass; // the class its DELETE frames were logged with
    const f = this.deleteFrameNo;
    for (const h of this.held) {
      const cond: GateCondition = {
        reqId: h.reqId,
        needDurableFrame: Math.max(h.cond.needDurableFrame ?? 0, cls === 'fsync' ? f : 0),
        needWrittenFrame: cls === 'disk' ? f : 0,
      };
      this.a.gate(ctx, this.inst, cond, h.send);
    }
  }

  /** The queue was deleted before the moves settled: its held claims answer 404, as parked ones do. */
  abort(ctx: ActorCtx, topic: string): void {
    if (this.done) return;
    this.done = true;
    for (const h of this.held) ctx.reply(h.reqId, fail('topic_not_found', `topic ${topic} was deleted`, { topic }));
  }
}
