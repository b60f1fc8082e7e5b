// The record-delete step of a topic actor (docs/API.md "Record delete"): permanent, immediate, silent and
// point-in-time. One DELETE frame carries the selector (not a seq list) with the topic's class,
// and the reply waits for that class's ack point, so an fsync topic's delete is fsynced.
// Pure; effects go through the ActorCtx.
import { fail, walBehind } from '../../protocol/errors.js';
import type { DeleteRecordsRequest } from '../../protocol/messages/rpc.js';
import { encodeJsonFrame } from '../../format/frame.js';
import { FrameType } from '../../format/constants.js';
import type { ActorCtx } from '../ctx.js';
import { jsonOpen, okJson, spaceBackRefusal, type ActorCore } from './actorCore.js';
import { deleteRecords } from './retention.js';
import { refillStreams } from '../queue/queueSteps.js';

export function deleteRecordsStep(a: ActorCore, ctx: ActorCtx, reqId: number, req: DeleteRecordsRequest): void {
  const inst = a.current;
  if (!inst) return ctx.reply(reqId, fail('topic_not_found', `topic ${a.name} does not exist`, { topic: a.name }));
  const cls = inst.logClass;
  const bound = inst.head; // TTL expiry below drops records, never the head
  const frame =
    cls === 'ephemeral'
      ? undefined
      : encodeJsonFrame(FrameType.DELETE, inst.id, { before_seq: req.beforeSeq, match: req.match, bound_seq: bound });
  // A delete writes a frame: refused past the WAL credit (docs/ARCHITECTURE.md "Other decisions"),
  // and on a full disk unless the WAL has room for it (it gives space back: docs/ARCHITECTURE.md
  // "Deleting on a full disk"); nothing applied.
  if (frame) {
    const refused = spaceBackRefusal(ctx, frame.length) ?? (ctx.walCreditExhausted() ? walBehind() : undefined);
    if (refused) return ctx.reply(reqId, refused);
  }
  a.expire(ctx, inst);
  const deleted = deleteRecords(inst, req.beforeSeq, req.match, bound);
  inst.hasDeletes ||= deleted > 0;
  let frameNo = 0;
  if (frame) {
    frameNo = a.nextFrame();
    ctx.submit(frameNo, frame, cls === 'fsync');
  }
  // The response describes the topic as the delete left it (head_seq is its point in time).
  const body = jsonOpen({ topic: a.name, deleted, earliest_seq: inst.earliest(), head_seq: bound, count: inst.count, bytes: inst.bytes });
  const needWritten = cls === 'disk' ? frameNo : 0;
  const needDurable = cls === 'fsync' ? frameNo : 0;
  a.gate(ctx, inst, { reqId, needDurableFrame: needDurable, needWrittenFrame: needWritten }, (c) =>
    c.reply(reqId, okJson(200, body), frameNo || undefined),
  );
  if (deleted > 0 && inst.queue) refillStreams(a, ctx, inst); // deleted jobs gave `/work` streams room
}
