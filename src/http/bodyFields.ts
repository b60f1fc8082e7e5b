// The fields each small request body may carry, by route (docs/API.md), for the unknown-field
// warnings of src/core/unknownFields.ts. Append bodies are scanned in the workers, which report
// their own unknown names (appendParse.ts); the config keys come from the config schema.
import type { FastifyRequest } from 'fastify';
import { CONFIG_FIELDS } from '../protocol/topicConfig.js';
import { collectUnknown } from '../core/unknownFields.js';

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

const f = (...names: string[]) => new Set(names);
const QUEUE_BASE = ['node', 'seqs', 'lease_ids'];

const BY_ROUTE: Record<string, Fields> = {
  'PUT /v0/topics/:topic': { top: CONFIG_FIELDS },
  'POST /v0/topics/:topic/diff': {
    top: f('from_seq', 'from_ts', 'limit', 'node', 'include_tags', 'include_meta', 'wait_ms', 'max_batch_bytes'),
  },
  'POST /v0/topics/:topic/delete': { top: f('before_seq', 'match') },
  'POST /v0/watch': {
    top: f(
      'topics',
      'cursor',
      'node',
      'limit',
      'max_batch_bytes',
      'heartbeat_ms',
      'include_meta',
      'include_tags',
      'include_data',
      'consistency',
    ),
    nested: { field: 'topics', keys: f('from_seq', 'tail', 'from_ts') },
  },
  'POST /v0/topics/:topic/claim': { top: f('node', 'max', 'lease_ms', 'wait_ms') },
  'POST /v0/topics/:topic/ack': { top: f(...QUEUE_BASE) },
  'POST /v0/topics/:topic/nack': { top: f(...QUEUE_BASE, 'delay_ms') },
  'POST /v0/topics/:topic/extend': { top: f(...QUEUE_BASE, 'lease_ms') },
  'POST /v0/topics/:topic/term': { top: f(...QUEUE_BASE, 'reason') },
  'POST /v0/topics/:topic/redrive': { top: f('from', 'seqs', 'match', 'max') },
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
