// The dead-letter topic's side of a redrive, its deletes (docs/QUEUES.md "Redrive"): the queue
// durably holds copies of these records now, so they leave this topic (`redriveDelete`, asked by
// the queue's actor over a peer request): one DELETE frame of this topic's class naming them,
// answered at the class's ack point. Idempotent: records already gone, or another instance of the
// topic, delete nothing. Pure; effects go through the ActorCtx.
import { walBehind } from '../../protocol/errors.js';
import type { RedriveDeleteRequest } from '../../protocol/messages/rpc.js';
import { encodeJsonFrame } from '../../format/frame.js';
import { FrameType } from '../../format/constants.js';
import type { ActorCtx } from '../ctx.js';
import { okJson, writeRefusal, type ActorCore } from './actorCore.js';
import { deleteSeqs } from './retention.js';
import { SlotState } from './seqIndex.js';

/** `redriveDelete`: the queue holds copies of these records now; they leave this topic. */
export function redriveDeleteStep(a: ActorCore, ctx: ActorCtx, reqId: number, req: RedriveDeleteRequest): void {
  const inst = a.current;
  const nothing = () => ctx.reply(reqId, okJson(200, `{"topic":${JSON.stringify(a.name)},"deleted":0`));
  // Gone, or recreated since the read: the records the queue copied are gone already.
  if (!inst || inst.id !== req.instanceId) return nothing();
  // After a restart an ephemeral topic may hand their seqs out again: a reissued delete could hit
  // new records, so it deletes nothing (one turned ephemeral may then keep stored copies: a
  // duplicate, never a loss).
  if (req.reissue && inst.config.durability === 'ephemeral') return nothing();
  const cls = inst.logClass;
  if (cls !== 'ephemeral') {
    const refused = writeRefusal(ctx) ?? (ctx.walCreditExhausted() ? walBehind() : undefined);
    if (refused) return ctx.reply(reqId, refused);
  }
  const live = req.seqs.filter((s) => s <= inst.head && inst.index.state(s) === SlotState.LIVE);
  deleteSeqs(inst, live);
  let frameNo = 0;
  if (live.length > 0 && cls !== 'ephemeral') {
    frameNo = a.nextFrame();
    ctx.submit(frameNo, encodeJsonFrame(FrameType.DELETE, inst.id, { seqs: live, reason: 'redrive' }), cls === 'fsync');
  }
  const body = okJson(200, `{"topic":${JSON.stringify(a.name)},"deleted":${live.length}`);
  a.gate(ctx, inst, { reqId, needDurableFrame: cls === 'fsync' ? frameNo : 0, needWrittenFrame: cls === 'disk' ? frameNo : 0 }, (g) =>
    g.reply(reqId, body, frameNo || undefined),
  );
}
