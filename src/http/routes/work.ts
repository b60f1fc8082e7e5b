// GET /v0/topics/:q/work (docs/API.md "Queues", "Work frames", "Which error wins"): jobs pushed over Server-Sent
// Events. Establishment errors come in the order of docs/API.md "Which error wins": 406, 400 (name, node, max,
// lease_ms), 404, 409, then 429 for the SSE connection cap; nothing is leased before the
// stream is accepted.
import type { FastifyInstance } from 'fastify';
import type { Supervisor } from '../../supervisor/supervisor.js';
import { fail } from '../../protocol/errors.js';
import { queryInt, queryString, topicParam } from '../parse.js';
import { HttpError, sendError, sendResult, withHttpErrors } from '../reply.js';
import { checkNode } from '../queueSchemas.js';
import { clampLeaseMs, clampMax } from '../../protocol/queueBodies.js';
import { acceptsEventStream } from '../../streams/sse/wire.js';
import type { WorkRegistry } from '../../streams/work/workRegistry.js';
import { clientGone } from '../../streams/sse/sseConnection.js';
import type { Admission } from '../admission.js';
import { setCommonHeaders } from '../responseHeaders.js';

export function workRoutes(app: FastifyInstance, sup: Supervisor, work: WorkRegistry, admission: Admission): void {
  app.get(
    '/v0/topics/:topic/work',
    { exposeHeadRoute: false }, // a HEAD would open a stream it can never send: 405
    withHttpErrors(async (req, reply) => {
      if (!acceptsEventStream(req.headers.accept)) throw new HttpError('not_acceptable', 'Accept must allow text/event-stream');
      const topic = topicParam(req);
      const node = checkNode(queryString(req, 'node'));
      const max = clampMax(queryInt(req, 'max'));
      const leaseMs = clampLeaseMs(queryInt(req, 'lease_ms'));
      const worker = sup.workerFor(topic);
      if (clientGone(reply.raw)) {
        reply.hijack(); // nobody to answer, and nothing taken yet
        return reply;
      }
      if (!work.slots.acquire()) {
        // At the cap: 404 and 409 still come first (docs/API.md "Which error wins"), so ask the topic.
        const st = await worker.request({ op: 'state', topic, touch: false });
        if (!st.ok) return sendResult(req, reply, st);
        const type = (JSON.parse(Buffer.from(st.json).toString('utf8') + '}') as { type: string }).type;
        if (type !== 'queue') return sendError(req, reply, fail('not_a_queue', `topic ${topic} is not a queue`, { topic }));
        return sendError(req, reply, fail('throttled', 'too many SSE connections', { limit: 'max_sse_connections', max: work.slots.max }));
      }
      let releaseKey: () => void;
      try {
        releaseKey = admission.acquireStream(req.apiKey); // charged to the opening key (docs/API.md "Limits")
      } catch (err) {
        work.slots.release();
        throw err;
      }
      reply.raw.once('close', releaseKey);
      const stream = work.create(topic, reply.raw);
      const opened = await worker.request({ op: 'workOpen', topic, connId: stream.connId, node, max, leaseMs });
      if (!opened.ok) {
        stream.fail({ code: opened.status, error: opened.code, message: opened.message, terminal: true }); // releases the slot
        return sendError(req, reply, opened);
      }
      // The stream's head is written past Fastify: the common headers (x-request-id) go on here.
      setCommonHeaders(req, (name, value) => reply.raw.setHeader(name, value));
      reply.hijack();
      stream.open();
      return reply;
    }),
  );
}
