// Queue routes (docs/QUEUES.md, docs/API.md "Queues"): claim, ack, nack, extend and term, and the lease list.
// Bodies are small and parsed here; the queue actor of the topic does the rest (404 and 409
// not_a_queue included). Queue routes never create a topic.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Supervisor } from '../../supervisor/supervisor.js';
import type { QueueRequest } from '../../protocol/messages/rpc.js';
import { checkBody, parseSmallBody, queryInt, queryString, topicParam } from '../parse.js';
import { sendResult, withHttpErrors } from '../reply.js';
import { ackRequest, claimRequest, extendRequest, leasesRequest, nackRequest, termRequest } from '../queueSchemas.js';

export function queueRoutes(app: FastifyInstance, sup: Supervisor): void {
  const route = (path: string, build: (topic: string, body: unknown) => QueueRequest) =>
    app.post(
      `/v0/topics/:topic/${path}`,
      withHttpErrors(async (req: FastifyRequest, reply: FastifyReply) => {
        const raw = checkBody(req, false); // 415 comes before the 400 family (docs/API.md "Which error wins")
        const topic = topicParam(req);
        const request = build(topic, parseSmallBody(raw, req));
        return sendResult(req, reply, await sup.workerFor(topic).request(request));
      }),
    );
  route('claim', claimRequest);
  route('ack', ackRequest);
  route('nack', nackRequest);
  route('extend', extendRequest);
  route('term', termRequest);
  app.get(
    '/v0/topics/:topic/leases',
    withHttpErrors(async (req: FastifyRequest, reply: FastifyReply) => {
      const topic = topicParam(req);
      const request = leasesRequest(topic, queryInt(req, 'from_seq'), queryInt(req, 'limit'), queryString(req, 'node'));
      return sendResult(req, reply, await sup.workerFor(topic).request(request));
    }),
  );
}
