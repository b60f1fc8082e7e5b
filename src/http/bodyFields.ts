// The fields each small request body may carry, by route (docs/API.md), for the unknown-field
// warnings of src/core/unknownFields.ts. Append, claim and ack bodies are scanned in the workers,
// which report their own unknown names (appendParse.ts, queueBodies.ts); the config keys come
// from the config schema, the others from the wire types (fieldsOf, src/protocol/bodySchemas.ts).
import type { FastifyRequest } from 'fastify';
import { CONFIG_FIELDS } from '../protocol/topicConfig.js';
import { collectUnknown } from '../core/unknownFields.js';
import { fieldsOf } from '../protocol/bodySchemas.js';
import type { DiffBody, RecordDeleteBody, WatchBody } from '../protocol/wire.js';
import type { ExtendBody, NackBody, RedriveBody, TermBody } from '../protocol/wireQueues.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Names of ignored request fields, for the Warning header (set before the reply is sent). */
    unknownFields?: string[];
  }
}

interface Fields {
  top: ReadonlySet<string>;
  /** A field whose value is a map of objects with these keys (watch `topics`). */
  nested?: { field: string; keys: ReadonlySet<string> };
}

const SEQS = { node: true, seqs: true, lease_ids: true } as const;

const BY_ROUTE: Record<string, Fields> = {
  'PUT /v0/topics/:topic': { top: CONFIG_FIELDS },
  'POST /v0/topics/:topic/diff': {
    top: fieldsOf<DiffBody>({
      from_seq: true,
      from_ts: true,
      limit: true,
      node: true,
      include_tags: true,
      include_meta: true,
      wait_ms: true,
      max_batch_bytes: true,
    }),
  },
  'POST /v0/topics/:topic/delete': { top: fieldsOf<RecordDeleteBody>({ before_seq: true, match: true }) },
  'POST /v0/watch': {
    top: fieldsOf<WatchBody>({
      topics: true,
      cursor: true,
      node: true,
      limit: true,
      max_batch_bytes: true,
      heartbeat_ms: true,
      include_meta: true,
      include_tags: true,
      include_data: true,
      consistency: true,
    }),
    nested: { field: 'topics', keys: fieldsOf<WatchBody['topics'][string]>({ from_seq: true, tail: true, from_ts: true }) },
  },
  // claim and ack bodies are parsed in the topic workers (src/protocol/queueBodies.ts).
  'POST /v0/topics/:topic/nack': { top: fieldsOf<NackBody>({ ...SEQS, delay_ms: true }) },
  'POST /v0/topics/:topic/extend': { top: fieldsOf<ExtendBody>({ ...SEQS, lease_ms: true }) },
  'POST /v0/topics/:topic/term': { top: fieldsOf<TermBody>({ ...SEQS, reason: true }) },
  'POST /v0/topics/:topic/redrive': { top: fieldsOf<RedriveBody>({ from: true, seqs: true, match: true, max: true }) },
};

/** Notes the fields of `body` that the request's route does not know. */
export function noteUnknownFields(req: FastifyRequest, body: Record<string, unknown>): void {
  const fields = BY_ROUTE[`${req.method} ${req.routeOptions?.url ?? ''}`];
  if (!fields) return;
  const names: string[] = [];
  collectUnknown(names, body, fields.top);
  const nested = fields.nested && body[fields.nested.field];
  if (fields.nested && nested && typeof nested === 'object') {
    for (const [k, v] of Object.entries(nested)) collectUnknown(names, v, fields.nested.keys, `${fields.nested.field}.${k}.`);
  }
  if (names.length > 0) req.unknownFields = names;
}
