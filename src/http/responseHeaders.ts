// The headers every response carries besides its own (HTTP thread): the request id, a Warning
// naming ignored request fields (unknown fields are accepted, docs/API.md "Conventions"), and
// Connection: close while draining, so a busy keep-alive client cannot hold the drain open. Set by
// the onSend hook on Fastify's send path and by rawReply.ts on the direct one; one list, so the
// two paths cannot drift apart.
import type { FastifyRequest } from 'fastify';
import { warningHeader } from '../core/unknownFields.js';
import './bodyFields.js'; // FastifyRequest.unknownFields

/** Whether the server drains now; set once when the server is built. */
let draining: () => boolean = () => false;

export function watchDraining(isDraining: () => boolean): void {
  draining = isDraining;
}

export function setCommonHeaders(req: FastifyRequest, set: (name: string, value: string) => void): void {
  set('x-request-id', req.id);
  if (req.unknownFields) set('warning', warningHeader(req.unknownFields));
  if (draining()) set('connection', 'close');
}
