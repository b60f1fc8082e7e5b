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
      const request = redriveRequest(topic, parseSmallBody(raw, req), admission.allowlist(req));
      if (request.from !== null) admission.requireNames(req, 'topic', [request.from]);
      return sendResult(req, reply, await sup.workerFor(topic).request(request));
    }),
  );
}
