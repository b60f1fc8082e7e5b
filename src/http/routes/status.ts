// GET / : the status page (static/status.html), a single static file with no build step. It
// reads the public API from the browser: health, readiness, metrics JSON, the topic list, and
// a live tail of one topic over the watch API. Served during recovery too, so it can show it.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

/** dist/src/http/routes → static/status.html at the package root. */
const PAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../static/status.html');

export function statusRoutes(app: FastifyInstance): void {
  let html: Buffer | undefined;
  app.get('/', async (_req, reply) => {
    html ??= fs.readFileSync(PAGE);
    return reply.code(200).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-cache').send(html);
  });
}
