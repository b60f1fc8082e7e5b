// Wires the stage clock into the HTTP server when SERVICE_STAGE_CLOCK is on (debug; docs/
// PERFORMANCE.md "Stage clock"): each request is stamped when its head is parsed (onRequest, in
// server.ts), when its body is complete (preHandler), and when its response is written
// (onResponse); its worker's stamps come back on the result (reply.ts copies them to the
// request). GET /v0/debug/stages gives the per-stage p50/p99 per kind of request, each
// thread's CPU time and the messages main received from the workers (each one a wake of main);
// DELETE resets the samples. Nothing is registered when the setting is off.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Supervisor } from '../supervisor/supervisor.js';
import { stageClock, type RequestStamps } from '../core/stageClock.js';
import { threadCpuUs } from '../core/threadCpu.js';
import { StageStats } from './stageStats.js';
import { sendJson } from './reply.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Stage clock only. */
    stamps?: RequestStamps;
    /** Stage clock only: a finer kind than the route (e.g. a long-poll diff). */
    stageTag?: string;
  }
}

export function stageKind(req: FastifyRequest): string {
  // A request no route matched is `unmatched`, as in the metrics: its URL may name any tenant's
  // topic (or carry a `?token=`), and one kind per URL would grow the table without bound.
  return `${req.method} ${req.routeOptions.url ?? 'unmatched'}${req.stageTag ? ` ${req.stageTag}` : ''}`;
}

export function registerStageClock(app: FastifyInstance, sup: Supervisor): void {
  if (!stageClock.on) return;
  const stats = new StageStats();
  app.addHook('preHandler', (req, _reply, done) => {
    if (req.stamps) req.stamps.body = stageClock.now();
    done();
  });
  app.addHook('onResponse', (req, _reply, done) => {
    const t = req.stamps;
    if (t && !req.url.startsWith('/v0/debug/')) {
      t.sent = stageClock.now();
      stats.record(stageKind(req), t);
    }
    done();
  });
  app.get('/v0/debug/stages', async (req, reply) => {
    const threads = {
      main: threadCpuUs(),
      workers: await Promise.all(sup.workers.map((w) => w.threadCpuUs())),
      wal: await sup.walThreadCpuUs(),
    };
    return sendJson(req, reply, 200, { stages: stats.summary(), thread_cpu_us: threads, worker_messages: sup.workerMessagesIn() });
  });
  app.delete('/v0/debug/stages', async (req, reply) => {
    stats.reset();
    return sendJson(req, reply, 200, { reset: true });
  });
}
