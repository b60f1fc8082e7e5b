// The Fastify front end (main thread). Hook order follows docs/API.md "Which error wins": lifecycle gate (503),
// routing (404/405), body size (413, before parsing), media type (415), then the 400 family in
// the handlers, then state-dependent errors from the workers. Every non-2xx carries the spec's
// error body, including Fastify's and Node's own errors.
import Fastify, { FastifyInstance } from 'fastify';
import compress from '@fastify/compress';
import type { FastifyBaseLogger } from 'fastify';
import type { Supervisor } from '../supervisor/supervisor.js';
import { Metrics } from './metrics.js';
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
import { Admission } from './admission.js';
import { fastifyOptions } from './fastifyOptions.js';
import { installErrorHandlers } from './errorHandlers.js';
import { gateRoutesOnRegister, installRequestHooks } from './requestHooks.js';
import { PressureMonitor } from '../pressure/monitor.js';
import { PressureGate } from '../pressure/gate.js';
import { StreamPacer } from '../streams/streamPacer.js';
import { PriorityBook } from '../pressure/priorityBook.js';
import { registerPressureMetrics, seedPriorities } from './pressureWiring.js';
import { registerStageClock } from './stageHooks.js';
import { OpenConnections } from './openConnections.js';

/** The HTTP front end as buildServer makes it: what start-up listens on and the drain closes. */
export interface FrontEnd {
  app: FastifyInstance;
  metrics: Metrics;
  hub: WatchHub;
  work: WorkRegistry;
  slots: SseSlots;
  admission: Admission;
  connections: OpenConnections;
}

export async function buildServer(
  sup: Supervisor,
  keys: KeyRing = KeyRing.parse(undefined),
  logger?: FastifyBaseLogger,
): Promise<FrontEnd> {
  const s = sup.settings;
  const { monitor, gate, book } = pressureParts(sup);
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
  const app = Fastify(fastifyOptions(s.maxBodyBytes, s.requestTimeoutMs, logger));
  const { hub, work, slots, streamPacer } = streamParts(app, sup, monitor, book);
  const metrics = new Metrics(sup, hub, slots);
  registerPressureMetrics(metrics, monitor, gate);
  hub.onBatchLatency = (ms) => metrics.watchLatency.observe(ms / 1000);

  installRequestHooks(app, sup, admission, metrics);

  await app.register(compress, { global: true, encodings: ['gzip'], requestEncodings: ['gzip'], threshold: 1024 });

  // Every body is read raw (413 decided on size first); media type and JSON are checked per
  // route, so the order of docs/API.md "Which error wins" holds and append bodies reach workers unparsed.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: s.maxBodyBytes }, (_req, body, done) => done(null, body));

  app.addHook('onClose', (_app, done) => (monitor.stop(), streamPacer.stop(), done()));

  installErrorHandlers(app, s.maxBodyBytes);

  gateRoutesOnRegister(app, admission);
  await registerOpenApi(app); // before the routes: it attaches each one's documented schema
  probeRoutes(app, sup, metrics, admission);
  registerStageClock(app, sup);
  statusRoutes(app);
  topicRoutes(app, sup, metrics, admission);
  watchRoutes(app, sup, hub, admission);
  queueRoutes(app, sup);
  redriveRoutes(app, sup, admission);
  workRoutes(app, sup, work, admission);
  routerRoutes(app, sup, admission);
  backupRoutes(app, sup);
  const connections = new OpenConnections(app.server);
  return { app, metrics, hub, work, slots, admission, connections };
}

/** The CPU-pressure machinery of the front end: monitor (started), admission gate, priority book. */
function pressureParts(sup: Supervisor): { monitor: PressureMonitor; gate: PressureGate; book: PriorityBook } {
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
  return { monitor, gate, book };
}

/** The stream side: watch sessions and hub, `/work` streams, their shared flush pacer and slots, pacing under pressure (started). */
function streamParts(
  app: FastifyInstance,
  sup: Supervisor,
  monitor: PressureMonitor,
  book: PriorityBook,
): { hub: WatchHub; work: WorkRegistry; slots: SseSlots; streamPacer: StreamPacer } {
  const s = sup.settings;
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
  return { hub, work, slots, streamPacer };
}
