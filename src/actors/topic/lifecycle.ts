// Topic lifecycle steps of a topic actor (docs/API.md "Topic lifecycle"): create (lazily or by PUT),
// reconfigure and delete. Control frames are durable before the reply in every class.
// Pure; effects go through the ActorCtx.
import { fail } from '../../protocol/errors.js';
import type { DeleteTopicRequest, PutRequest } from '../../protocol/messages/rpc.js';
import { encodeJsonFrame, encodeTopicCreate } from '../../format/frame.js';
import { FrameType } from '../../format/constants.js';
import type { ActorCtx } from '../ctx.js';
import { jsonOpen, okJson, spaceBackRefusal, writeRefusal, type ActorCore } from './actorCore.js';
import { sameConfig, type TopicConfig } from '../../protocol/topicConfig.js';
import { TopicInstance } from './instance.js';
import { applyCaps, applyTtl } from './retention.js';
import { dropQueue } from '../queue/queueSteps.js';
import { releaseDrains } from '../router/drain.js';

export function createInstance(a: ActorCore, ctx: ActorCtx, config: TopicConfig): TopicInstance {
  const inst = new TopicInstance(ctx.newTopicId(), a.name, config, ctx.now);
  a.current = inst;
  ctx.topicCreated(inst.id);
  inst.controlFrameNo = a.nextFrame();
  // inst.config is the interned (frozen) config, whose JSON text the frame encoder keeps: the
  // request's resolved config is a fresh object per creation and would be stringified each time.
  ctx.submit(inst.controlFrameNo, encodeTopicCreate(inst.id, a.name, inst.config, ctx.now), true);
  return inst;
}

export function tooManyTopics(a: ActorCore) {
  return fail('throttled', 'too many topics', { limit: 'max_topics', max: a.opts.maxTopics });
}

/** PUT /v0/topics/:topic (docs/API.md "PUT /v0/topics/:topic"): create (201), identical (200, no change) or replace (200). */
export function put(a: ActorCore, ctx: ActorCtx, reqId: number, req: PutRequest): void {
  const inst = a.current;
  if (inst && req.ensure) {
    // Router auto-create (docs/API.md "Topic lifecycle"): an existing topic stays as it is.
    return a.gate(ctx, inst, { reqId, needDurableFrame: inst.controlFrameNo }, (c) =>
      c.reply(reqId, okJson(200, jsonOpen({ topic: a.name, created: false, config: inst.config }))),
    );
  }
  if (!inst) {
    const refused = writeRefusal(ctx); // a creation writes a control frame
    if (refused) return ctx.reply(reqId, refused);
    if (!ctx.tryAcquireTopicSlot()) return ctx.reply(reqId, tooManyTopics(a));
    const created = createInstance(a, ctx, req.config);
    return a.gate(ctx, created, { reqId, needDurableFrame: created.controlFrameNo }, (c) =>
      c.reply(reqId, okJson(201, jsonOpen({ topic: a.name, created: true, config: created.config }))),
    );
  }
  if (inst.config.type !== req.config.type) {
    return ctx.reply(
      reqId,
      fail('topic_exists_incompatible', `topic ${a.name} exists with type ${inst.config.type}`, {
        topic: a.name,
        existing_type: inst.config.type,
        requested_type: req.config.type,
      }),
    );
  }
  if (!sameConfig(inst.config, req.config)) {
    const refused = writeRefusal(ctx);
    if (refused) return ctx.reply(reqId, refused);
    // What the old TTL has expired stays expired: a looser TTL brings back no record, whether or
    // not a request or the dormancy sweep had judged it yet (docs/API.md "PUT /v0/topics/:topic").
    applyTtl(inst, ctx.now);
    inst.config = req.config;
    inst.controlFrameNo = a.nextFrame();
    ctx.submit(inst.controlFrameNo, encodeJsonFrame(FrameType.TOPIC_CONFIG, inst.id, { config: req.config }), true);
    // A tightened cap or TTL applies at once (docs/API.md "PUT /v0/topics/:topic"); no stored record is rewritten.
    applyTtl(inst, ctx.now);
    applyCaps(inst);
    a.persistFloors(ctx, inst);
  }
  // An identical PUT still waits for any earlier control frame, so a 200 is always durable.
  a.gate(ctx, inst, { reqId, needDurableFrame: inst.controlFrameNo }, (c) =>
    c.reply(reqId, okJson(200, jsonOpen({ topic: a.name, created: false, config: inst.config }))),
  );
}

/** DELETE /v0/topics/:topic (docs/API.md "DELETE /v0/topics/:topic"): the reply waits for the durable TOPIC_DELETE frame. */
export function deleteTopic(a: ActorCore, ctx: ActorCtx, reqId: number, req: DeleteTopicRequest): void {
  const inst = a.current;
  const open = (deleted: boolean) => jsonOpen({ topic: a.name, deleted, routers_removed: deleted ? (req.routersRemoved ?? []) : [] });
  if (!inst) return ctx.reply(reqId, okJson(200, open(false)));
  a.expire(ctx, inst); // docs/API.md "DELETE /v0/topics/:topic": TTL expiry applies before the emptiness check
  if (req.ifEmpty && inst.count > 0) {
    return ctx.reply(reqId, fail('topic_not_empty', `${a.name} still holds ${inst.count} records`, { topic: a.name, count: inst.count }));
  }
  // A delete writes a control frame; it gives space back, so a full disk lets it through while the
  // WAL has room for it (docs/ARCHITECTURE.md "Deleting on a full disk").
  const frame = encodeJsonFrame(FrameType.TOPIC_DELETE, inst.id, { name: a.name });
  const refused = spaceBackRefusal(ctx, frame.length);
  if (refused) return ctx.reply(reqId, refused);
  const frameNo = a.nextFrame();
  ctx.submit(frameNo, frame, true);
  a.current = undefined;
  ctx.releaseTopicSlot();
  a.reads.dropInstance(ctx, inst);
  releaseDrains(ctx, inst);
  const endWorkStreams = dropQueue(a, ctx, inst);
  a.retire(inst, {
    reqId,
    needHead: 0,
    needDurableFrame: frameNo,
    send: (c) => {
      c.topicDeleted(inst.id);
      // Watch streams learn of it no earlier than the durable delete (docs/API.md "Topic lifecycle": one step before the 200).
      if (c.watched()) c.publish({ k: 'deleted', topic: a.name, instanceId: inst.id, head: inst.head });
      endWorkStreams?.(c); // `/work` streams end with the terminal 409 frame (docs/API.md "Error frames")
      c.reply(reqId, okJson(200, open(true)));
    },
  });
}
