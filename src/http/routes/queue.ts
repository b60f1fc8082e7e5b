// Queue routes (docs/QUEUES.md, docs/API.md "Queues"): claim, ack, nack, extend and term, and the lease list.
// Claim and ack bodies cross to the topic's worker unparsed (docs/ARCHITECTURE.md "Thread
// crossings"): this thread checks the media type, the empty body and the topic name, the worker
// parses and checks the body (src/protocol/queueBodies.ts) before its queue actor runs. The other
// bodies are small, rarer, and parsed here. The queue actor of the topic does the rest (404 and 409
// not_a_queue included). Queue routes never create a topic.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Supervisor } from '../../supervisor/supervisor.js';
import type { QueueBodyRequest, QueueRequest } from '../../protocol/messages/rpc.js';
import { checkBody, parseSmallBody, queryInt, queryString, topicParam } from '../parse.js';
import { sendResult, withHttpErrors } from '../reply.js';
import { nextWaitId } from '../longPoll.js';
import { extendRequest, leasesRequest, nackRequest, termRequest } from '../queueSchemas.js';

export function queueRoutes(app: FastifyInstance, sup: Supervisor): void {
  app.post(
    '/v0/topics/:topic/claim',
    withHttpErrors(async (req: FastifyRequest, reply: FastifyReply) => {
      const body = checkBody(req, false); // 415 comes before the 400 family (docs/API.md "Which error wins")
      const topic = topicParam(req);
      // A claim may wait (`wait_ms`, a jitter window): one whose client leaves first must take no
      // job, so its close sends `cancelWait`, after the claim on the same port (docs/QUEUES.md "Requests").
      if (req.raw.socket.destroyed) return reply.hijack(); // gone already: nothing to claim for
      const worker = sup.workerFor(topic);
      const waitId = nextWaitId();
      let answered = false;
      reply.raw.once('close', () => {
        if (!answered) worker.request({ op: 'cancelWait', topic, waitId }).catch(() => {}); // only an abandoned worker rejects
      });
      const result = await worker.request({ op: 'claimBody', topic, body, waitId });
      answered = true;
      return sendResult(req, reply, result);
    }),
  );
  const unparsed = (path: string, op: QueueBodyRequest['op']) =>
    app.post(
      `/v0/topics/:topic/${path}`,
      withHttpErrors(async (req: FastifyRequest, reply: FastifyReply) => {
        const body = checkBody(req, false); // 415 comes before the 400 family (docs/API.md "Which error wins")
        const topic = topicParam(req);
        return sendResult(req, reply, await sup.workerFor(topic).request({ op, topic, body }));
      }),
    );
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
  unparsed('ack', 'ackBody');
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
