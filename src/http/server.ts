// The Fastify front end (main thread). Hook order follows docs/API.md "Which error wins": lifecycle gate (503),
// routing (404/405), body size (413, before parsing), media type (415), then the 400 family in
// the handlers, then state-dependent errors from the workers. Every non-2xx carries the spec's
// error body, including Fastify's and Node's own errors.
import Fastify, { FastifyInstance, FastifyError, LogController } from 'fastify';
import compress from '@fastify/compress';
import type { Socket } from 'node:net';
import crypto from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { RequestMetrics } from './requestMetrics.js';
import type { Supervisor } from '../supervisor/supervisor.js';
import { Metrics } from './metrics.js';
import { fail } from '../protocol/errors.js';
import { nowMs } from '../core/stopwatch.js';
import { sendError, HttpError } from './reply.js';
import { topicRoutes } from './routes/topics.js';
import { probeRoutes } from './routes/probes.js';
import { watchRoutes } from './routes/watch.js';
import { queueRoutes } from './routes/queue.js';
import { workRoutes } from './routes/work.js';
import { redriveRoutes } from './routes/redrive.js';
import { backupRoutes } from './routes/backup.js';
import { statusRoutes } from './routes/status.js';
import { registerOpenApi } from './openapi.js';
import { routerRoutes } from './routes/routers.js';
import { WorkRegistry } from '../streams/work/workRegistry.js';
import { SseSlots } from '../streams/sse/slots.js';
import { WatchHub } from '../streams/watch/hub.js';
import { WatchRegistry } from '../streams/watch/session.js';
import { SystemClock } from '../core/clock.js';
import { FlushPacer } from '../streams/sse/flushPacer.js';
import { KeyRing } from '../auth/keys.js';
import { Admission, ruleFor } from './admission.js';
import { PressureMonitor } from '../pressure/monitor.js';
import { PressureGate } from '../pressure/gate.js';
import { StreamPacer } from '../streams/streamPacer.js';
import { PriorityBook } from '../pressure/priorityBook.js';
import { registerPressureMetrics, seedPriorities } from './pressureWiring.js';
import { lazyChildLogger, levelEnabled } from './lazyLogger.js';
import { stageClock } from '../core/stageClock.js';
import { registerStageClock } from './stageHooks.js';
import { setCommonHeaders, watchDraining } from './responseHeaders.js';

/** Known paths and their methods, for 405 with Allow (Fastify only knows "not found"). */
export const ROUTE_TABLE: [RegExp, string[]][] = [
  [/^\/v0\/health$/, ['GET', 'HEAD']],
  [/^\/healthz$/, ['GET', 'HEAD']],
  [/^\/v0\/ready$/, ['GET', 'HEAD']],
  [/^\/readyz$/, ['GET', 'HEAD']],
  [/^\/v0\/metrics$/, ['GET', 'HEAD']],
  [/^\/v0\/topics$/, ['GET', 'HEAD']],
  [/^\/v0\/topics\/[^/]+$/, ['GET', 'HEAD', 'PUT', 'POST', 'DELETE']],
  [/^\/v0\/topics\/[^/]+\/diff$/, ['POST']],
  [/^\/v0\/topics\/[^/]+\/delete$/, ['POST']],
  [/^\/v0\/topics\/[^/]+\/(claim|ack|nack|extend|term|redrive)$/, ['POST']],
  [/^\/v0\/topics\/[^/]+\/work$/, ['GET']],
  [/^\/v0\/topics\/[^/]+\/leases$/, ['GET', 'HEAD']],
  [/^\/v0\/watch$/, ['POST']],
  [/^\/v0\/watch\/[^/]+$/, ['GET']],
  [/^\/v0\/routers$/, ['GET', 'HEAD']],
  [/^\/v0\/routers\/[^/]+$/, ['GET', 'HEAD', 'PUT', 'DELETE']],
  [/^\/v0\/backup$/, ['GET', 'HEAD']],
  [/^\/v0\/openapi\.json$/, ['GET', 'HEAD']],
  [/^\/$/, ['GET', 'HEAD']],
];

/** Routes that answer during recovery and draining (docs/ARCHITECTURE.md "Startup and shutdown"). */
const UNGATED = new Set(['/v0/health', '/healthz', '/v0/metrics', '/v0/ready', '/readyz', '/v0/openapi.json', '/']);

/** A URL fit for a log line: a `?token=` value (an API key) never reaches stderr. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1<redacted>');
}

function clientErrorResponse(status: number, reason: string, message: string): string {
  const body = JSON.stringify({ error: { code: status === 413 ? 'payload_too_large' : 'invalid_request', message } });
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/** An `x-request-id` from the client is used (and echoed) when it is this short and plain. */
const REQUEST_ID_RE = /^[\w.:@/+=-]{1,128}$/;

/**
 * Our own ids: a random prefix per process and a counter, unique within the process's logs.
 * (8 random bytes per request cost ~7% of the HTTP thread on small reads: randomFillSync was
 * the third frame of a 16-reader random-diff profile.)
 */
const ID_PREFIX = crypto.randomBytes(4).toString('hex');
let idCounter = 0;

function requestId(req: { headers: Record<string, string | string[] | undefined> }): string {
  const h = req.headers['x-request-id'];
  if (typeof h === 'string' && REQUEST_ID_RE.test(h)) return h;
  return `${ID_PREFIX}-${(++idCounter).toString(36)}`;
}

export async function buildServer(
  sup: Supervisor,
  keys: KeyRing = KeyRing.parse(undefined),
  logger?: FastifyBaseLogger,
): Promise<{ app: FastifyInstance; metrics: Metrics; hub: WatchHub; work: WorkRegistry; slots: SseSlots; admission: Admission }> {
  const s = sup.settings;
  const monitor = new PressureMonitor(
    { elu: s.pressureElu, lagMs: s.pressureLagMs, walQueueBytes: s.pressureWalQueueBytes, force: s.pressureForce },
    sup.gauges,
    s.workers,
  );
  monitor.start();
  const gate = new PressureGate(
    monitor,
    {
      parkBoundMs: s.pressureParkMs,
      maxParked: s.pressureMaxParked,
      inflightMax: s.pressureInflight,
      windowMs: s.pressureWindowMs,
      agingPerS: s.pressureAgingPerS,
    },
    Date.now,
  );
  const book = new PriorityBook(s.maxTopics);
  sup.whenReady(() => seedPriorities(sup, book));
  const admission = new Admission(
    keys,
    {
      probeAuth: s.probeAuth,
      maxInflightPerKey: s.maxInflightPerKey,
      maxSseConnectionsPerKey: s.maxSseConnectionsPerKey,
      maxTotalBytes: s.maxTotalBytes,
    },
    { gate, book, now: Date.now },
  );
  const app = Fastify({
    // pino (src/log.ts); Fastify's own per-request lines are off, onResponse below logs one.
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'req_id' }),
    // A request's child logger is made when it first writes a line, not for every request.
    childLoggerFactory: lazyChildLogger,
    genReqId: requestId,
    // Errors Fastify raises before routing (a bad percent-escape in the path): the spec's body.
    frameworkErrors(err, req, reply) {
      reply.header('x-request-id', req.id);
      sendError(req, reply, fail('invalid_request', err.code === 'FST_ERR_BAD_URL' ? `malformed URL: ${req.url}` : err.message), false);
    },
    bodyLimit: s.maxBodyBytes,
    // Topic names are up to 255 chars, up to 3x that percent-encoded; longer ones must still
    // reach the name check (400), not Fastify's own 414.
    routerOptions: { maxParamLength: 4096 },
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket) {
      if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
      const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
      socket.end(
        clientErrorResponse(
          tooLarge ? 431 : 400,
          tooLarge ? 'Request Header Fields Too Large' : 'Bad Request',
          `malformed HTTP request (${err.code ?? 'error'})`,
        ),
      );
    },
  });
  const registry = new WatchRegistry(new SystemClock(), s.watchSessionTtlMs, s.maxWatchSessions);
  // One pacer for every SSE stream of the process (watch now, work later): flushing as a whole
  // takes at most half the main thread.
  const pacer = new FlushPacer(new SystemClock());
  const slots = new SseSlots(s.maxSseConnections);
  const hub = new WatchHub(sup, registry, slots, (m) => app.log.error(m.replace(/^spool: /, '')), pacer);
  const work = new WorkRegistry(sup, pacer, slots);
  hub.onDelivery = (topic) => book.consumed(topic, Date.now());
  // Topics below priority 0 (a negative manual priority) are paced under pressure.
  const streamPacer = new StreamPacer(monitor, book, Date.now, hub, work, { paceMs: s.pressurePaceMs, below: 0 });
  streamPacer.start();
  const metrics = new Metrics(sup, hub, slots);
  registerPressureMetrics(metrics, monitor, gate);
  hub.onBatchLatency = (ms) => metrics.watchLatency.observe(ms / 1000);

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
  // One line per request at debug; every 5xx at error, with its request id and error code.
  app.addHook('onResponse', (req, reply, done) => {
    metrics.requests.observe(req, reply);
    // The line is built only when it will be written (a 5xx, or the debug level).
    if (reply.statusCode < 500 && !levelEnabled(req.log, 'debug')) return done();
    const line = {
      method: req.method,
      url: req.url,
      route: RequestMetrics.route(req),
      status: reply.statusCode,
      ms: Math.round((nowMs() - req.startedAt) * 1000) / 1000,
      error: req.spoolError?.code,
    };
    // A readiness probe's 503 is its normal answer while recovering or draining, not an error.
    const probe = reply.statusCode === 503 && (line.route === '/v0/ready' || line.route === '/readyz');
    if (reply.statusCode >= 500 && !probe) req.log.error(line, `${req.method} ${req.url} answered ${reply.statusCode}`);
    else req.log.debug(line, 'request');
    done();
  });

  await app.register(compress, { global: true, encodings: ['gzip'], requestEncodings: ['gzip'], threshold: 1024 });

  // Every body is read raw (413 decided on size first); media type and JSON are checked per
  // route, so the order of docs/API.md "Which error wins" holds and append bodies reach workers unparsed.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: s.maxBodyBytes }, (_req, body, done) => done(null, body));

  app.addHook('onClose', (_app, done) => (monitor.stop(), streamPacer.stop(), done()));

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0]!;
    for (const [re, methods] of ROUTE_TABLE) {
      if (re.test(path)) {
        reply.header('allow', methods.join(', '));
        return sendError(req, reply, new HttpError('method_not_allowed', `${req.method} is not allowed on ${path}`), false);
      }
    }
    return sendError(req, reply, new HttpError('not_found', `no route for ${req.method} ${path}`), false);
  });

  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof HttpError) return sendError(req, reply, err);
    switch (err.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendError(req, reply, fail('payload_too_large', `body exceeds ${s.maxBodyBytes} bytes`, { max: s.maxBodyBytes }), false);
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendError(req, reply, fail('unsupported_media_type', 'Content-Type must be application/json'));
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return sendError(req, reply, fail('invalid_request', err.message));
    }
    if (err.statusCode === 413)
      return sendError(req, reply, fail('payload_too_large', `body exceeds ${s.maxBodyBytes} bytes`, { max: s.maxBodyBytes }), false);
    if (err.statusCode === 415) return sendError(req, reply, fail('unsupported_media_type', err.message));
    if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500)
      return sendError(req, reply, fail('invalid_request', err.message));
    req.log.error({ err, req_id: req.id }, `internal error on ${req.method} ${redactUrl(req.url)}`);
    return sendError(req, reply, fail('internal', 'internal error'));
  });

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
  await registerOpenApi(app); // before the routes: it attaches each one's documented schema
  probeRoutes(app, sup, metrics);
  registerStageClock(app, sup);
  statusRoutes(app);
  topicRoutes(app, sup, metrics, admission);
  watchRoutes(app, sup, hub, admission);
  queueRoutes(app, sup);
  redriveRoutes(app, sup, admission);
  workRoutes(app, sup, work, admission);
  routerRoutes(app, sup, admission);
  backupRoutes(app, sup);
  return { app, metrics, hub, work, slots, admission };
}
