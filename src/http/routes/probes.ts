// Health, readiness and metrics (docs/API.md "Health, readiness, metrics"). None of them touches a topic's recency.
import type { FastifyInstance } from 'fastify';
import type { Supervisor } from '../../supervisor/supervisor.js';
import type { Metrics } from '../metrics.js';
import type { Admission } from '../admission.js';
import { allowsName } from '../../auth/allowlist.js';
import { visibleJson, visiblePrometheus, type NameFilter } from '../metricsVisibility.js';
import { sendError, sendJson } from '../reply.js';
import { fail } from '../../protocol/errors.js';
import { StorageState, storageStateName } from '../../storage/storageState.js';
import { freeBytes } from '../../storage/freeSpace.js';
import type { Health, Ready } from '../../protocol/wire.js';

const VERSION = '0.1.0';

export function probeRoutes(app: FastifyInstance, sup: Supervisor, metrics: Metrics, admission: Admission): void {
  const started = Date.now();
  const health = async (req: import('fastify').FastifyRequest, reply: import('fastify').FastifyReply) =>
    sendJson(req, reply, 200, { status: 'ok', version: VERSION, uptime_ms: Date.now() - started } satisfies Health);
  app.get('/v0/health', health);
  app.get('/healthz', health);

  const ready = async (req: import('fastify').FastifyRequest, reply: import('fastify').FastifyReply) => {
    if (sup.lifecycle === 'recovering') {
      return sendError(req, reply, fail('not_ready', 'recovery in progress', sup.recoveryDetail));
    }
    if (sup.lifecycle === 'draining') return sendError(req, reply, fail('shutting_down', 'draining before exit'));
    // Ready serves reads even when storage is degraded; the body says whether writes are taken.
    const storage = storageStateName(sup.storageState);
    const body: Ready = {
      status: 'ready',
      wal_replay_complete: true,
      topics: sup.liveTopics(),
      storage,
      writable: storage === 'ok',
    };
    // A full disk says what writes wait for (space for the WAL's next file, or for segment
    // writes to catch up), what a WAL file needs, and what the volume has.
    if (storage === 'disk_full') {
      const waitsFor = sup.walStorageState === StorageState.FULL ? 'wal_file' : 'segment_writes';
      body.disk = { waits_for: waitsFor, wal_file_bytes: sup.walSize.walFileBytes, free_bytes: freeBytes(sup.settings.dataDir) ?? null };
    }
    return sendJson(req, reply, 200, body);
  };
  app.get('/v0/ready', ready);
  app.get('/readyz', ready);

  app.get('/v0/metrics', async (req, reply) => {
    // A key with name prefixes sees no series naming a topic or router outside them.
    const prefixes = admission.allowlist(req);
    const visible: NameFilter | null = prefixes && {
      topic: (name) => allowsName(prefixes, name),
      router: (name) => {
        const r = sup.routers.get(name);
        return r !== undefined && admission.routerVisible(req, r);
      },
    };
    if ((req.headers.accept ?? '').includes('application/json')) {
      const body = await metrics.json();
      return sendJson(req, reply, 200, visible ? visibleJson(body, visible) : body);
    }
    const text = await metrics.prometheus();
    return reply
      .code(200)
      .header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
      .send(visible ? visiblePrometheus(text, visible) : text);
  });
}
