// Read-your-writes for routers (docs/API.md "Routers"; docs/ARCHITECTURE.md "Routers"): before a diff, state read, watch pull
// or router GET on a dest, main asks each upstream source's actor to drain. The answer waits
// until every named forwarder has handled the source head as of the request, or is blocked
// (backing off after a refusal), or is gone; it carries each router's figures. Pure.
import type { RouterDrainRequest, RouterStats } from '../../protocol/messages/router.js';
import type { ActorCtx } from '../ctx.js';
import { okJson, type ActorCore } from '../topic/actorCore.js';
import type { TopicInstance } from '../topic/instance.js';
import type { DrainWaiter } from './routingState.js';

/** Drains waiting at once at most (each holds a request id of main's). */
const DRAINS_MAX = 10_000;

function reply(ctx: ActorCtx, inst: TopicInstance | undefined, reqId: number, names: readonly string[]): void {
  const routers = inst ? routerStats(inst, names) : [];
  const r = okJson(200, `{"routers":${JSON.stringify(routers)}`);
  r.routers = routers;
  ctx.reply(reqId, r);
}

function done(inst: TopicInstance, w: DrainWaiter): boolean {
  if (inst.routing?.stopped) return true; // the server is draining: no forwarder moves any more
  for (const name of w.routers) {
    const f = inst.routing?.forwarders.get(name);
    if (f && f.cursor < w.target && f.retryTimerId === 0) return false;
  }
  return true;
}

export function drainStep(a: ActorCore, ctx: ActorCtx, reqId: number, req: RouterDrainRequest): void {
  const inst = a.current;
  if (!inst || !req.wait) return reply(ctx, inst, reqId, req.routers);
  const w: DrainWaiter = { reqId, target: inst.head, routers: req.routers };
  const r = inst.routing;
  if (done(inst, w) || !r || r.drains.length >= DRAINS_MAX) return reply(ctx, inst, reqId, req.routers);
  r.drains.push(w);
}

/** Answers every drain whose forwarders are through (or blocked). */
export function settleDrains(ctx: ActorCtx, inst: TopicInstance): void {
  const r = inst.routing;
  if (!r || r.drains.length === 0) return;
  const still: DrainWaiter[] = [];
  for (const w of r.drains) {
    if (done(inst, w)) reply(ctx, inst, w.reqId, w.routers);
    else still.push(w);
  }
  r.drains = still;
}

/** The topic is deleted: every waiting drain answers now. */
export function releaseDrains(ctx: ActorCtx, inst: TopicInstance): void {
  const r = inst.routing;
  if (!r) return;
  for (const w of r.drains) reply(ctx, undefined, w.reqId, w.routers);
  r.drains = [];
}

/** Each named router's figures (all routers of the topic when `names` is absent). */
export function routerStats(inst: TopicInstance, names?: readonly string[]): RouterStats[] {
  const out: RouterStats[] = [];
  const r = inst.routing;
  if (!r) return out;
  for (const f of names ? names.map((n) => r.forwarders.get(n)) : r.forwarders.values()) {
    if (!f) continue;
    out.push({ router: f.def.name, forwarded_total: f.total, lag: Math.max(0, inst.head - f.cursor), last_error: f.lastError });
  }
  return out;
}
