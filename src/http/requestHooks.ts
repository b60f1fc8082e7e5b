// The hooks every request passes on the main thread: the lifecycle gate and admission
// (onRequest), the common headers (onSend), the request metrics and log line (onResponse); and,
// as routes register, the pressure gate on the routes whose admission rule has one (onRoute).
import type { FastifyInstance } from 'fastify';
import type { Supervisor } from '../supervisor/supervisor.js';
import type { Metrics } from './metrics.js';
import { fail } from '../protocol/errors.js';
import { nowMs } from '../core/stopwatch.js';
import { stageClock } from '../core/stageClock.js';
import { sendError } from './reply.js';
import { RequestMetrics } from './requestMetrics.js';
import { levelEnabled } from './lazyLogger.js';
import { redactUrl } from './errorHandlers.js';
import { setCommonHeaders, watchDraining } from './responseHeaders.js';
import { ruleFor, type Admission } from './admission.js';

/** Routes that answer during recovery and draining (docs/ARCHITECTURE.md "Startup and shutdown"). */
const UNGATED = new Set(['/v0/health', '/healthz', '/v0/metrics', '/v0/ready', '/readyz', '/v0/openapi.json', '/']);

/** Installs the onRequest, onSend and onResponse hooks. */
export function installRequestHooks(app: FastifyInstance, sup: Supervisor, admission: Admission, metrics: Metrics): void {
  // One callback hook, not an async one: it runs on every request and needs no promise. The
  // lifecycle gate, then admission (401, then once routed 403 and the per-key inflight cap), which
  // has nothing to do without keys (dev mode: the header is ignored).
  const admit = admission.enabled ? admission.hook : undefined;
  app.addHook('onRequest', (req, reply, done) => {
    req.startedAt = nowMs();
    if (stageClock.on) req.stamps = { recv: stageClock.now() };
    if (sup.lifecycle === 'ready') return admit ? admit(req, reply, done) : done();
    const q = req.url.indexOf('?');
    if (UNGATED.has(q < 0 ? req.url : req.url.slice(0, q))) return admit ? admit(req, reply, done) : done();
    if (sup.lifecycle === 'recovering') {
      sendError(req, reply, fail('not_ready', 'recovery in progress', sup.recoveryDetail));
    } else {
      // Draining: close the connection after this answer, or a busy keep-alive client would hold
      // the drain open until the grace period ends and the final checkpoint is skipped.
      reply.header('connection', 'close');
      sendError(req, reply, fail('shutting_down', 'server is shutting down'));
    }
  });
  watchDraining(() => sup.lifecycle === 'draining');
  app.addHook('onSend', (req, reply, payload, done) => {
    setCommonHeaders(req, (k, v) => reply.header(k, v));
    done(null, payload);
  });
  // One line per request at debug; every 5xx at error (a 503 not_ready at warn), with its request id and error code.
  app.addHook('onResponse', (req, reply, done) => {
    metrics.requests.observe(req, reply);
    // The line is built only when it will be written (a 5xx, or the debug level).
    if (reply.statusCode < 500 && !levelEnabled(req.log, 'debug')) return done();
    // A `?token=` (an API key, on the SSE routes) never reaches a log line.
    const url = redactUrl(req.url);
    const line = {
      method: req.method,
      url,
      route: RequestMetrics.route(req),
      status: reply.statusCode,
      ms: Math.round((nowMs() - req.startedAt) * 1000) / 1000,
      error: req.spoolError?.code,
    };
    if (reply.statusCode < 500 || RequestMetrics.probeNotReady(line.route, reply.statusCode)) req.log.debug(line, 'request');
    // Refused while recovering: counted as a server error, but the server is doing as it should.
    else if (line.error === 'not_ready') req.log.warn(line, `${req.method} ${url} answered ${reply.statusCode}`);
    else req.log.error(line, `${req.method} ${url} answered ${reply.statusCode}`);
    done();
  });
}

/** Adds the pressure gate to each gated route as it registers (before any route is added). */
export function gateRoutesOnRegister(app: FastifyInstance, admission: Admission): void {
  // Every route passes admission: one registered without a rule in ROUTE_RULES is a programming
  // error, caught at startup (a router route merged without its docs/API.md "Authentication" row, say).
  // Body read, route not yet run: the pressure gate (docs/ARCHITECTURE.md "Admission"), as a hook of the gated routes only,
  // made for each with its rule (no lookup per request, no hook where there is no gate).
  app.addHook('onRoute', (r) => {
    const methods = Array.isArray(r.method) ? r.method : [r.method];
    const rules = methods.map((m) => {
      const rule = ruleFor(m, r.url);
      if (!rule) throw new Error(`route ${m} ${r.url} has no admission rule (src/http/admission.ts ROUTE_RULES)`);
      return rule;
    });
    const gated = rules.filter((x) => x.gate);
    if (gated.length === 0) return;
    if (gated.length !== rules.length || gated.some((x) => x.gate !== gated[0]!.gate || x.consumes !== gated[0]!.consumes)) {
      throw new Error(`route ${methods.join(',')} ${r.url}: its methods need different gate rules; register them apart`);
    }
    const isAppend = methods.length === 1 && methods[0] === 'POST' && r.url === '/v0/topics/:topic';
    const own = r.preHandler === undefined ? [] : Array.isArray(r.preHandler) ? r.preHandler : [r.preHandler];
    // A new array: Fastify's HEAD twin of a GET route shares the GET's arrays.
    r.preHandler = [...own, admission.gateHookFor(gated[0]!, isAppend)];
  });
}
