// The OpenAPI 3.1 description (GET /v0/openapi.json) through @fastify/swagger: the schema of
// each route is attached here, by method and path, as routes are registered (an onRoute hook),
// so the route modules stay as they are. The schemas document; they do not validate: bodies
// are read raw and checked by the routes in the order of docs/API.md "Which error wins" (a no-op validator compiler),
// and replies are serialized by the routes (a plain serializer). The shapes used in more than
// one place are named component schemas (`TopicConfig`, `Record`, ...), and every operation
// carries the `bearerKey` security requirement its admission rule implies (scopes as roles).
import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import { CONFIG_SCHEMA } from '../protocol/topicConfig.js';
import { validateDiff, validateWatch } from './schemas.js';
import { validateRouter } from './routerSchemas.js';
import { ruleFor, type RouteRule } from './admission.js';
import { QUEUE_ROUTE_DOCS } from './queueSchemas.js';
import { version } from './version.js';
import { BATCH_RECORDS_MAX, IDEMPOTENCY_KEY_MAX_CHARS } from '../protocol/limits.js';

const u64 = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER };
const obj = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  ...(required.length ? { required } : {}),
});
/** A reference to a named component schema (registered by registerOpenApi). */
const ref = (name: string): { $ref: string } => ({ $ref: `${name}#` });
const ERROR = ref('SpoolError');
const errors = { '4XX': { description: 'the spec error body', ...ERROR }, '5XX': { description: 'the spec error body', ...ERROR } };
/** A reply whose body is a named schema. */
const named = (description: string, name: string, code = 200) => ({ [code]: { description, ...ref(name) } });
const ok = (description: string, code = 200) => ({ [code]: { description, type: 'object', additionalProperties: true } });
const topicParams = obj({ topic: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' } }, ['topic']);
const RECORD = obj({ data: {}, meta: { type: 'object' }, tag: { type: 'string' }, node: { type: 'string' } }, ['data']);
const QUEUE_SEQS = {
  node: { type: 'string' },
  seqs: { type: 'array', items: u64 },
  lease_ids: { type: 'array', items: { type: 'string' } },
};
const PERF = { performance: ref('Performance') };
const reply = (description: string, properties: Record<string, unknown>, code = 200) => ({
  [code]: { description, ...obj({ ...properties, ...PERF }) },
});
const CONFIG_OUT = { type: 'object', additionalProperties: true, description: 'the stored config: all 17 keys' };
const STATE = {
  topic: { type: 'string' },
  type: { enum: ['log', 'queue'] },
  head_seq: u64,
  earliest_seq: u64,
  next_seq: u64,
  count: u64,
  bytes: u64,
  config: CONFIG_OUT,
  effective_priority: { type: 'integer' },
  last_write_ts: { type: ['integer', 'null'] },
  last_read_ts: { type: ['integer', 'null'] },
  queue: {
    description: 'queue topics only',
    ...obj({ ready: u64, in_flight: u64, dead_lettered: u64 }),
  },
};
const RECORD_OUT = obj({ $seq: u64, $ts: u64, $node: { type: 'string' }, $tag: { type: 'string' }, data: {}, meta: { type: 'object' } }, [
  '$seq',
  '$ts',
]);
const TOMBSTONE = {
  type: 'object',
  description: 'records lost between the cursor and the first record returned',
  properties: {
    reason: { enum: ['cap', 'ttl', 'mixed', 'recreated'] },
    gap_from: u64,
    gap_to: u64,
    missed_estimate: u64,
    earliest_seq: u64,
    head_seq: u64,
  },
};
const APPENDED = {
  topic: { type: 'string' },
  first_seq: u64,
  last_seq: u64,
  seqs: { type: 'array', items: u64 },
  head_seq: u64,
  count: u64,
  created: { type: 'boolean' },
  deduped: { type: 'boolean' },
};
const ROUTER_PARAMS = obj({ router: { type: 'string' } }, ['router']);
const ROUTER = {
  router: { type: 'string' },
  created: { type: 'boolean' },
  source: { type: 'string' },
  dest: { type: 'string' },
  preserve_node: { type: 'boolean' },
  preserve_tag: { type: 'boolean' },
  filter: {},
  allow_cycle: { type: 'boolean' },
  guarantee: { enum: ['at_least_once', 'exactly_once'] },
};
const ROUTER_CONFIG = {
  ...(validateRouter.schema as object),
  properties: {
    ...(validateRouter.schema as { properties: object }).properties,
    filter: { description: 'a tag match tuple (as record delete), or null' },
  },
};

/** The component schemas the routes refer to by name (`#/components/schemas/<name>`). */
const NAMED_SCHEMAS = {
  Performance: obj({
    server_total_ms: { type: 'number' },
    wal_append_ms: { type: 'number' },
    fsync_ms: { type: 'number' },
    records_scanned: u64,
    throttle_wait_ms: { type: 'number' },
  }),
  TopicConfig: CONFIG_SCHEMA,
  AppendRecord: RECORD,
  Record: RECORD_OUT,
  Tombstone: TOMBSTONE,
  TopicState: obj({ ...STATE, ...PERF }),
  AppendResult: obj({ ...APPENDED, ...PERF }),
  DiffRequest: validateDiff.schema as object,
  WatchRequest: validateWatch.schema as object,
  RouterConfig: ROUTER_CONFIG,
  Router: obj({ ...ROUTER, forwarded_total: { ...u64, description: 'GET only: records forwarded since the router was created' }, ...PERF }),
};

const SSE = {
  200: { description: 'Server-Sent Events (text/event-stream)', content: { 'text/event-stream': { schema: { type: 'string' } } } },
};

interface RouteDoc {
  summary: string;
  tags: string[];
  params?: unknown;
  querystring?: unknown;
  body?: unknown;
  response: Record<string, unknown>;
  /** Set from the route's admission rule when the route is registered. */
  security?: Record<string, string[]>[];
}

/** Every route of the API by `METHOD path` (Fastify's path syntax). */
export const ROUTE_DOCS: Record<string, RouteDoc> = {
  'GET /v0/health': {
    summary: 'Liveness: 200 while the process runs',
    tags: ['probes'],
    response: reply('alive', { status: { const: 'ok' }, version: { type: 'string' }, uptime_ms: u64 }),
  },
  'GET /healthz': { summary: 'Alias of /v0/health', tags: ['probes'], response: ok('as /v0/health') },
  'GET /v0/ready': {
    summary: 'Readiness: 200 once recovered, 503 not_ready with replay_progress',
    tags: ['probes'],
    response: {
      ...reply('ready', {
        status: { const: 'ready' },
        wal_replay_complete: { type: 'boolean' },
        topics: u64,
        storage: { enum: ['ok', 'disk_full', 'failed'] },
        writable: { type: 'boolean' },
      }),
      ...errors,
    },
  },
  'GET /readyz': { summary: 'Alias of /v0/ready', tags: ['probes'], response: { ...ok('as /v0/ready'), ...errors } },
  'GET /v0/metrics': {
    summary: 'Prometheus text, or JSON totals with Accept: application/json',
    tags: ['probes'],
    response: { 200: { description: 'metrics', content: { 'text/plain': { schema: { type: 'string' } } } } },
  },
  'GET /v0/openapi.json': { summary: 'This document', tags: ['probes'], response: ok('OpenAPI 3.1') },
  'GET /': {
    summary: 'The status page (HTML)',
    tags: ['probes'],
    response: { 200: { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } } },
  },
  'GET /v0/topics': {
    summary: 'List topics (cursor-paginated)',
    tags: ['topics'],
    querystring: obj({ prefix: { type: 'string' }, limit: u64, cursor: { type: 'string' } }),
    response: {
      ...reply('a page of topics', {
        topics: {
          type: 'array',
          items: obj({
            topic: { type: 'string' },
            head_seq: u64,
            earliest_seq: u64,
            count: u64,
            bytes: u64,
            durable: { type: 'boolean' },
            effective_priority: { type: 'integer' },
          }),
        },
        next_cursor: { type: 'string', description: 'absent on the last page' },
      }),
      ...errors,
    },
  },
  'PUT /v0/topics/:topic': {
    summary: 'Create or configure a topic',
    tags: ['topics'],
    params: topicParams,
    body: ref('TopicConfig'),
    response: {
      ...reply('unchanged or reconfigured', { topic: { type: 'string' }, created: { type: 'boolean' }, config: CONFIG_OUT }),
      ...reply('created', { topic: { type: 'string' }, created: { type: 'boolean' }, config: CONFIG_OUT }, 201),
      ...errors,
    },
  },
  'GET /v0/topics/:topic': {
    summary: 'Topic state',
    tags: ['topics'],
    params: topicParams,
    querystring: obj({ touch: { type: 'boolean' } }),
    response: { ...named('the topic state', 'TopicState'), ...errors },
  },
  'DELETE /v0/topics/:topic': {
    summary: 'Delete a topic',
    tags: ['topics'],
    params: topicParams,
    querystring: obj({ if_empty: { type: 'boolean' } }),
    response: { ...ok('deleted'), ...errors },
  },
  'POST /v0/topics/:topic': {
    summary: 'Append an atomic batch',
    tags: ['records'],
    params: topicParams,
    querystring: obj({ return_seqs: { type: 'boolean' } }),
    body: obj(
      {
        records: { type: 'array', items: ref('AppendRecord'), minItems: 1, maxItems: BATCH_RECORDS_MAX },
        node: { type: 'string' },
        idempotency_key: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_CHARS }, // JSON Schema counts code points, as the server does
        create: { type: 'boolean' },
        config: ref('TopicConfig'),
        disable_backpressure: { type: 'boolean' },
      },
      ['records'],
    ),
    response: {
      ...named('appended (or a duplicate of an applied idempotency key)', 'AppendResult'),
      ...named('appended to a topic it created', 'AppendResult', 201),
      ...errors,
    },
  },
  'POST /v0/topics/:topic/diff': {
    summary: 'Read from a cursor (long-poll with wait_ms)',
    tags: ['records'],
    params: topicParams,
    body: ref('DiffRequest'),
    response: {
      ...reply('records after the cursor', {
        topic: { type: 'string' },
        records: { type: 'array', items: ref('Record') },
        next_from_seq: u64,
        head_seq: u64,
        earliest_seq: u64,
        caught_up: { type: 'boolean' },
        lag: u64,
        tombstone: { anyOf: [ref('Tombstone'), { type: 'null' }] },
      }),
      ...errors,
    },
  },
  'POST /v0/topics/:topic/delete': {
    summary: 'Delete records by seq and/or tag match',
    tags: ['records'],
    params: topicParams,
    body: obj({ before_seq: u64, match: {} }),
    response: { ...ok('deleted'), ...errors },
  },
  'POST /v0/topics/:topic/claim': {
    summary: 'Claim jobs of a queue',
    tags: ['queues'],
    params: topicParams,
    body: obj({ node: { type: 'string' }, max: u64, lease_ms: u64 }, ['node']),
    response: { ...ok('jobs'), ...errors },
  },
  'POST /v0/topics/:topic/ack': {
    summary: 'Acknowledge jobs',
    tags: ['queues'],
    params: topicParams,
    body: obj(QUEUE_SEQS, ['node', 'seqs']),
    response: { ...ok('results'), ...errors },
  },
  'POST /v0/topics/:topic/nack': {
    summary: 'Give jobs back, optionally delayed',
    tags: ['queues'],
    params: topicParams,
    body: obj({ ...QUEUE_SEQS, delay_ms: u64 }, ['node', 'seqs']),
    response: { ...ok('results'), ...errors },
  },
  'POST /v0/topics/:topic/extend': {
    summary: 'Extend leases',
    tags: ['queues'],
    params: topicParams,
    body: obj({ ...QUEUE_SEQS, lease_ms: u64 }, ['node', 'seqs', 'lease_ms']),
    response: { ...ok('results'), ...errors },
  },
  'GET /v0/topics/:topic/work': {
    summary: 'Jobs pushed over Server-Sent Events',
    tags: ['queues'],
    params: topicParams,
    querystring: obj({ node: { type: 'string' }, max: u64, lease_ms: u64 }),
    response: { ...SSE, ...errors },
  },
  'POST /v0/watch': {
    summary: 'Create a watch session over up to 256 topics',
    tags: ['watch'],
    body: ref('WatchRequest'),
    response: { ...ok('wid, cursors'), ...errors },
  },
  'GET /v0/watch/:wid': {
    summary: 'Stream a watch session (Server-Sent Events)',
    tags: ['watch'],
    params: obj({ wid: { type: 'string' } }, ['wid']),
    response: { ...SSE, ...errors },
  },
  'PUT /v0/routers/:router': {
    summary: 'Create or configure a router (forwarding from source to dest)',
    tags: ['routers'],
    params: ROUTER_PARAMS,
    body: ref('RouterConfig'),
    response: { ...named('unchanged or reconfigured', 'Router'), ...named('created', 'Router', 201), ...errors },
  },
  'GET /v0/routers/:router': {
    summary: 'A router, with records forwarded',
    tags: ['routers'],
    params: ROUTER_PARAMS,
    response: { ...named('the router', 'Router'), ...errors },
  },
  'DELETE /v0/routers/:router': {
    summary: 'Delete a router (idempotent)',
    tags: ['routers'],
    params: ROUTER_PARAMS,
    response: { ...reply('deleted, or absent', { router: { type: 'string' }, deleted: { type: 'boolean' } }), ...errors },
  },
  'GET /v0/routers': {
    summary: 'List routers (cursor-paginated)',
    tags: ['routers'],
    querystring: obj({
      prefix: { type: 'string' },
      source: { type: 'string' },
      dest: { type: 'string' },
      page_size: u64,
      cursor: { type: 'string' },
    }),
    response: {
      ...reply('a page of routers', {
        routers: {
          type: 'array',
          items: obj({
            router: { type: 'string' },
            source: { type: 'string' },
            dest: { type: 'string' },
            guarantee: { type: 'string' },
            forwarded_total: u64,
          }),
        },
        next_cursor: { type: 'string', description: 'absent on the last page' },
      }),
      ...errors,
    },
  },
  'GET /v0/backup': {
    summary: 'An online backup: a tar consistent as of one WAL position',
    tags: ['operations'],
    response: {
      200: { description: 'application/x-tar', content: { 'application/x-tar': { schema: { type: 'string', format: 'binary' } } } },
      ...errors,
    },
  },
  ...QUEUE_ROUTE_DOCS,
};

/** The bearer key of SERVICE_API_KEYS; its "scopes" in a requirement are the key's scopes. */
const SECURITY_SCHEMES = {
  bearerKey: {
    type: 'http',
    scheme: 'bearer',
    description:
      'An API key of SERVICE_API_KEYS as `Authorization: Bearer <key>`. The roles listed on an operation are the scopes it needs (read, write, delete, admin); a key may also be limited to name prefixes. A server without SERVICE_API_KEYS (dev mode) needs no key. docs/API.md "Authentication".',
  },
  tokenQuery: {
    type: 'apiKey',
    in: 'query',
    name: 'token',
    description: 'The same key as `?token=`, read only on the two Server-Sent Events GETs (an EventSource cannot set a header).',
  },
} as const;

/** The security requirement of a route, from its admission rule (src/http/admission.ts). */
function securityFor(rule: RouteRule): Record<string, string[]>[] {
  const scopes = [...rule.scopes];
  switch (rule.kind) {
    case 'public':
      return [{}];
    case 'probe':
      return [{}, { bearerKey: [] }]; // open, unless SERVICE_PROBE_AUTH: then any valid key
    case 'watchStream':
      return [{ bearerKey: [] }, { tokenQuery: [] }]; // the key that created the session
    case 'stream':
      return [{ bearerKey: scopes }, { tokenQuery: scopes }];
    default:
      return [{ bearerKey: scopes }];
  }
}

/** A documented route's schema with its security requirement and its 401 and 403 answers. */
function withSecurity(doc: RouteDoc, rule: RouteRule | undefined): RouteDoc {
  if (!rule) return doc;
  if (rule.kind === 'public') return { ...doc, security: securityFor(rule) }; // never refused
  const refusals: Record<string, unknown> = { 401: { description: 'unauthorized: no valid key (with SERVICE_API_KEYS)', ...ERROR } };
  if (rule.scopes.length > 0) {
    refusals[403] = {
      description: `forbidden: the key lacks a scope (${rule.scopes.join(' + ')}) or names a topic outside its prefixes`,
      ...ERROR,
    };
  }
  return { ...doc, security: securityFor(rule), response: { ...doc.response, ...refusals } };
}

/** Registers @fastify/swagger and the schema attachment; call before any route is added. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.addSchema({
    $id: 'SpoolError',
    type: 'object',
    required: ['error'],
    properties: {
      error: obj({ code: { type: 'string' }, message: { type: 'string' }, detail: { type: 'object' } }, ['code', 'message']),
      performance: { type: 'object' },
    },
  });
  for (const [name, schema] of Object.entries(NAMED_SCHEMAS)) app.addSchema({ ...schema, $id: name });
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const method = methods.find((m) => ROUTE_DOCS[`${m} ${route.url}`] !== undefined);
    const doc = method === undefined ? undefined : withSecurity(ROUTE_DOCS[`${method} ${route.url}`]!, ruleFor(method, route.url));
    if (doc) route.schema = { ...doc, ...(route.schema ?? {}) };
    else if (!route.url.startsWith('/v0/openapi')) route.schema = { ...(route.schema ?? {}), hide: true };
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'spool', version: version(), description: 'A persistent append-only log service over HTTP/JSON (docs/API.md).' },
      components: { securitySchemes: SECURITY_SCHEMES },
    },
    // Component schemas keep their names (`#/components/schemas/TopicConfig`), not `def-0`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
  app.get('/v0/openapi.json', async (_req, reply) =>
    reply.header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(app.swagger())),
  );
}
