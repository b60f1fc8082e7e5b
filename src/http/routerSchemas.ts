// Router request bodies (docs/API.md "Routers", "Conventions"), checked on the HTTP thread with ajv
// (coercion off), then defaulted into the registry's RouterInput. `filter` uses the record
// delete's match parser (docs/API.md "Record delete"), so both accept exactly the same tuples.
import { Ajv } from 'ajv';
import { isRouterName, isTopicName } from '../core/names.js';
import type { RouterInput } from '../supervisor/routerRegistry.js';
import type { RouterDef } from '../protocol/messages/router.js';
import { filterTuple } from '../actors/router/filter.js';
import { HttpError } from './reply.js';
import { check, parseMatch } from './schemas.js';

// validateSchema: false: the meta-schema's compile cost ~0.1-0.4 s at every boot; the schema is
// checked against it once, by a test (test/unit/schemasValid.test.ts).
const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false, validateSchema: false });

interface RouterBody {
  source: string;
  dest: string;
  preserve_node?: boolean;
  preserve_tag?: boolean;
  create_dest?: boolean;
  filter?: unknown;
  allow_cycle?: boolean;
  guarantee?: 'at_least_once' | 'exactly_once';
}

/** The router body's schema (test/unit/schemasValid checks it against JSON Schema's meta-schema). */
export const ROUTER_SCHEMA = {
  type: 'object',
  required: ['source', 'dest'],
  properties: {
    source: { type: 'string' },
    dest: { type: 'string' },
    preserve_node: { type: 'boolean' },
    preserve_tag: { type: 'boolean' },
    create_dest: { type: 'boolean' },
    allow_cycle: { type: 'boolean' },
    guarantee: { enum: ['at_least_once', 'exactly_once'] },
  },
};
export const validateRouter = ajv.compile<RouterBody>(ROUTER_SCHEMA);

export function routerName(params: unknown): string {
  const router = (params as { router: string }).router;
  if (!isRouterName(router)) throw new HttpError('invalid_request', 'invalid router name', { router });
  return router;
}

export function routerInput(body: unknown): RouterInput {
  const b = check(validateRouter, body);
  for (const topic of [b.source, b.dest]) if (!isTopicName(topic)) throw new HttpError('invalid_request', 'invalid topic name', { topic });
  if (b.source === b.dest) throw new HttpError('invalid_request', 'source and dest must differ', { field: 'dest' });
  let filter = null;
  if (b.filter !== undefined && b.filter !== null) {
    try {
      filter = parseMatch(b.filter);
    } catch (e) {
      throw e instanceof HttpError ? new HttpError('invalid_request', e.message.replace('match', 'filter'), { field: 'filter' }) : e;
    }
  }
  return {
    source: b.source,
    dest: b.dest,
    preserveNode: b.preserve_node ?? true,
    preserveTag: b.preserve_tag ?? true,
    createDest: b.create_dest ?? true,
    filter,
    allowCycle: b.allow_cycle ?? false,
    guarantee: b.guarantee ?? 'at_least_once',
  };
}

/** The resolved config as PUT and GET echo it (wire names). */
export function routerJson(d: RouterDef): Record<string, unknown> {
  return {
    router: d.name,
    source: d.source,
    dest: d.dest,
    preserve_node: d.preserveNode,
    preserve_tag: d.preserveTag,
    filter: filterTuple(d.filter),
    allow_cycle: d.allowCycle,
    guarantee: d.guarantee,
  };
}
