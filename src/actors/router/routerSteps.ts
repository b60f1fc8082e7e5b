// Entry of the router requests a topic actor takes (docs/ARCHITECTURE.md "Routers"): `routerSet`/`routerRemove` from
// main's RouterRegistry on a source topic, `routerDrain` (read-your-writes) on a source, and
// `routerProbe` from a forwarder on a dest. Pure; effects go through the ActorCtx.
import { assertNever, fail } from '../../protocol/errors.js';
import type { RouterRequest } from '../../protocol/messages/router.js';
import type { ActorCtx } from '../ctx.js';
import { okJson, type ActorCore } from '../topic/actorCore.js';
import { probeStep } from './applied.js';
import { drainStep } from './drain.js';
import { installRouter, removeRouter, retryBlocked } from './forwarder.js';

export function routerStep(a: ActorCore, ctx: ActorCtx, reqId: number, req: RouterRequest): void {
  switch (req.op) {
    case 'routerSet': {
      const inst = a.current;
      if (!inst) return ctx.reply(reqId, fail('topic_not_found', `topic ${a.name} does not exist`, { topic: a.name }));
      // An ephemeral source restarts its seqs after a restart: a stored start above the head
      // would skip new records (the registry then reinstalls the router under a new id).
      if (req.start !== null && req.start > inst.head)
        return ctx.reply(reqId, okJson(200, `{"start":${req.start},"head":${inst.head},"instance":${inst.id}`));
      const start = installRouter(a, ctx, inst, req.def, req.start);
      return ctx.reply(reqId, okJson(200, `{"start":${start},"head":${inst.head},"instance":${inst.id}`));
    }
    case 'routerRemove':
      return removeRouter(a, ctx, reqId, a.current, req.router);
    case 'routerDrain':
      if (req.wait && a.current) retryBlocked(a, ctx, a.current, req.routers);
      return drainStep(a, ctx, reqId, req);
    case 'routerProbe':
      return probeStep(a, ctx, reqId, req.routerId);
    default:
      assertNever(req);
  }
}
