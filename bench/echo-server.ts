// A bare Fastify JSON server, the baseline for the append-single workload: POST /echo parses the
// JSON body with Fastify's default parser and answers a small JSON object. For longpoll-wake,
// POST /v0/topics/:topic/diff holds its request unanswered until the client leaves: what node:http
// and Fastify alone keep per parked long-poll. It reads the same
// SERVICE_HOST / SERVICE_PORT / SERVICE_PORT_FILE settings as spool so bench/lib.ts starts both
// the same way. GET /ready answers 200 once listening.
//   node dist/bench/echo-server.js
import fs from 'node:fs';
import path from 'node:path';
import Fastify, { type FastifyReply } from 'fastify';

const host = process.env.SERVICE_HOST ?? '127.0.0.1';
const port = Number(process.env.SERVICE_PORT ?? 4100);
const portFile = process.env.SERVICE_PORT_FILE;

const app = Fastify({ logger: false });

app.post('/echo', async (req) => {
  const body = req.body as { records?: unknown[] } | null;
  const n = Array.isArray(body?.records) ? body.records.length : 0;
  return { ok: true, count: n };
});

// Held, never answered: no timer, nothing but the reply in a set until its connection closes.
const parked = new Set<FastifyReply>();
app.post('/v0/topics/:topic/diff', (_req, reply) => {
  parked.add(reply);
  reply.raw.once('close', () => parked.delete(reply));
});

app.get('/ready', async () => ({ ready: true }));

const shutdown = () => {
  void app.close().then(() => process.exit(0));
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

await app.listen({ host, port });
const addr = app.server.address();
const bound = typeof addr === 'object' && addr ? addr.port : port;
if (portFile) {
  const tmp = path.join(path.dirname(portFile), `.${path.basename(portFile)}.${process.pid}.tmp`);
  fs.writeFileSync(tmp, String(bound));
  fs.renameSync(tmp, portFile);
}
process.stderr.write(`echo: listening on http://${host}:${bound}\n`);
