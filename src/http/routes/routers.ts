// Router routes (docs/API.md "Routers"): PUT, GET, DELETE /v0/routers/:router and GET /v0/routers. The
// registry on main keeps the definitions; forwarding itself never passes through here.
import type { FastifyInstance } from 'fastify';
import type { Supervisor } from '../../supervisor/supervisor.js';
import { fail, type ErrorResult } from '../../protocol/errors.js';
import { allowsName, type Allowlist } from '../../auth/allowlist.js';
import { checkBody, parseSmallBody, queryString } from '../parse.js';
import { sendError, sendJson, withHttpErrors } from '../reply.js';
import { routerInput, routerJson, routerName } from '../routerSchemas.js';
import { defOf, type RouterRegistry } from '../../supervisor/routerRegistry.js';
import type { StoredRouter } from '../../storage/routerStore.js';
import type { Admission } from '../admission.js';
import { encodeCursor, pageQuery } from '../listPage.js';

/**
 * A refused router PUT as a key with prefixes may see it (docs/API.md "Authentication": names
 * outside them never appear): the graph refusals name topics and routers anywhere, so for such a
 * key their paths show those outside its prefixes as null, and their messages name none.
 */
function namesForKey(err: ErrorResult, router: string, prefixes: Allowlist): ErrorResult {
  if (prefixes === null) return err;
  const d = err.detail as { cycle?: string[]; chain?: string[]; reason?: string; topic?: string } | undefined;
  const hide = (path: string[]) => path.map((t) => (allowsName(prefixes, t) ? t : null));
  if (err.code === 'router_cycle' && d?.cycle)
    return { ...err, message: `router ${router} would close a cycle of routers`, detail: { ...d, cycle: hide(d.cycle) } };
  if (d?.reason === 'router_chain_too_long' && d.chain)
    return {
      ...err,
      message: `router ${router} would make a chain of routers longer than a copy travels`,
      detail: { ...d, chain: hide(d.chain) },
    };
  if (d?.reason === 'router_dest_fan_in') return { ...err, message: `${d.topic} is already the dest of another router` };
  return err;
}

/** forwarded_total of each router, one stats request per source topic (no drain). */
async function totals(reg: RouterRegistry, page: StoredRouter[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  await Promise.all(
    page.map(async (r) => {
      const s = await reg.stats(r, false);
      out.set(r.name, s?.forwarded_total ?? 0);
    }),
  );
  return out;
}

export function routerRoutes(app: FastifyInstance, sup: Supervisor, admission: Admission): void {
  const reg = sup.routers;

  app.put(
    '/v0/routers/:router',
    withHttpErrors(async (req, reply) => {
      const raw = checkBody(req, false); // 415 comes before the 400 family (docs/API.md "Which error wins")
      const name = routerName(req.params);
      const body = parseSmallBody(raw);
      // docs/API.md "Authentication": the named ends against the key's allowlist, right after the body parses.
      const ends = [body.source, body.dest].filter((t): t is string => typeof t === 'string');
      admission.requireNames(req, 'topic', ends);
      // An existing router's stored ends too, as on GET and DELETE: a re-point refusal would show them.
      const had = reg.get(name);
      if (had) admission.requireRouterEnds(req, had.source, had.dest);
      const input = routerInput(body);
      const out = await reg.put(name, input);
      if (!out.ok) return sendError(req, reply, namesForKey(out, name, admission.allowlist(req)));
      return sendJson(req, reply, out.created ? 201 : 200, { ...routerJson(out.def), created: out.created });
    }),
  );

  app.get(
    '/v0/routers/:router',
    withHttpErrors(async (req, reply) => {
      const name = routerName(req.params);
      const r = reg.get(name);
      if (!r) return sendError(req, reply, fail('router_not_found', `router ${name} does not exist`, { router: name }));
      admission.requireRouterEnds(req, r.source, r.dest);
      const s = await reg.stats(r, true); // read-your-writes: pending forwards first
      return sendJson(req, reply, 200, { ...routerJson(defOf(r)), forwarded_total: s?.forwarded_total ?? 0 });
    }),
  );

  app.delete(
    '/v0/routers/:router',
    withHttpErrors(async (req, reply) => {
      const name = routerName(req.params);
      const r = reg.get(name);
      if (r) admission.requireRouterEnds(req, r.source, r.dest);
      return sendJson(req, reply, 200, { router: name, deleted: await reg.delete(name) });
    }),
  );

  app.get(
    '/v0/routers',
    withHttpErrors(async (req, reply) => {
      const prefix = queryString(req, 'prefix') ?? '';
      const source = queryString(req, 'source');
      const dest = queryString(req, 'dest');
      const { pageSize, after } = pageQuery(req);
      const all = reg
        .all()
        .filter(
          (r) =>
            admission.routerVisible(req, r) &&
            r.name > after &&
            r.name.startsWith(prefix) &&
            (source === undefined || r.source === source) &&
            (dest === undefined || r.dest === dest),
        );
      const page = all.slice(0, pageSize);
      const t = await totals(reg, page);
      const body: Record<string, unknown> = {
        routers: page.map((r) => ({
          router: r.name,
          source: r.source,
          dest: r.dest,
          guarantee: r.guarantee,
          forwarded_total: t.get(r.name) ?? 0,
        })),
      };
      if (all.length > pageSize) body.next_cursor = encodeCursor(page[page.length - 1]!.name);
      return sendJson(req, reply, 200, body);
    }),
  );
}
