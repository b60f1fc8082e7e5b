// POST /v0/topics/:q/redrive (docs/QUEUES.md "Redrive"): move dead-lettered jobs back into their
// queue. The body is parsed here; a `from` it names must be in the key's allowlist (403),
// and a `from` taken from the queue's config is checked by the queue's actor against the same
// allowlist. The queue's actor does the rest with the dead-letter topic's actor (peer requests).
import type { FastifyInstance } from 'fastify';
import type { Supervisor } from '../../supervisor/supervisor.js';
import type { Admission } from '../admission.js';
import { checkBody, parseSmallBody, topicParam } from '../parse.js';
import { sendResult, withHttpErrors } from '../reply.js';
import { redriveRequest } from '../queueSchemas.js';

export function redriveRoutes(app: FastifyInstance, sup: Supervisor, admission: Admission): void {
  app.post(
    '/v0/topics/:topic/redrive',
    withHttpErrors(async (req, reply) => {
      const raw = checkBody(req, true); // an empty body means {}: every dead letter of the queue
      const topic = topicParam(req);
      const body = parseSmallBody(raw, req);
      // `from` against the key's allowlist right after the parse, before the body's other 400s.
      const from = (body as { from?: unknown } | null)?.from;
      if (typeof from === 'string') admission.requireNames(req, 'topic', [from]);
      const request = redriveRequest(topic, body, admission.allowlist(req));
      return sendResult(req, reply, await sup.workerFor(topic).request(request));
    }),
  );
}
