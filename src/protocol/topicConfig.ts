// Topic config (docs/API.md "PUT /v0/topics/:topic"): validation of a request's config object and resolution
// to the stored 17-key form. Pure; used on the HTTP thread (PUT) and in workers (append config).
import { createRequire } from 'node:module';
import type { Ajv as AjvClass, ValidateFunction } from 'ajv';
import { fail, ErrorResult } from './errors.js';
import { isTopicName } from '../core/names.js';
import { describeAjvError } from '../core/ajvMessage.js';

export type Durability = 'ephemeral' | 'memory' | 'disk' | 'fsync';

/** Stored config, wire names (it is echoed verbatim in responses and kept in snapshots). */
export interface TopicConfig {
  type: 'log' | 'queue';
  ttl_ms: number;
  cap_records: number;
  cap_bytes: number;
  discard: 'old' | 'reject';
  durable: boolean;
  durability: Durability;
  priority: number | null;
  auto_priority: boolean;
  auto_create: boolean;
  idempotency_window_ms: number;
  dedupe_node: boolean;
  lease_ms: number;
  claim_jitter_ms: number;
  max_deliveries: number;
  dead_letter: string | null;
  leases_durable: boolean;
}

const u64 = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;
/** The JSON Schema of a topic config in a request (also the OpenAPI document's TopicConfig). */
export const CONFIG_SCHEMA = {
  type: 'object',
  properties: {
    type: { enum: ['log', 'queue'] },
    ttl_ms: u64,
    cap_records: u64,
    cap_bytes: u64,
    discard: { enum: ['old', 'reject'] },
    durable: { type: 'boolean' },
    durability: { enum: ['ephemeral', 'memory', 'disk', 'fsync'] },
    priority: { anyOf: [{ type: 'integer', minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }, { type: 'null' }] },
    auto_priority: { type: 'boolean' },
    auto_create: { type: 'boolean' },
    idempotency_window_ms: u64,
    dedupe_node: { type: 'boolean' },
    lease_ms: u64,
    claim_jitter_ms: u64,
    max_deliveries: u64,
    dead_letter: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    leases_durable: { type: 'boolean' },
  },
} as const;

let validator: ValidateFunction | undefined;

/**
 * The config validator, made on first use: a topic worker loads this module at boot but needs it
 * only for an append that carries a config, and ajv's load and this compile were ~70 ms of every
 * worker's boot. validateSchema: false: the meta-schema's compile cost ~0.1 s more; CONFIG_SCHEMA
 * is checked against it once, by a test (test/unit/schemasValid.test.ts).
 */
function validate(): ValidateFunction {
  if (!validator) {
    const { Ajv } = createRequire(import.meta.url)('ajv') as { Ajv: typeof AjvClass };
    validator = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false, validateSchema: false }).compile(CONFIG_SCHEMA);
  }
  return validator;
}

/** The config keys a request may send; anything else is ignored with a warning. */
export const CONFIG_FIELDS: ReadonlySet<string> = new Set(Object.keys(CONFIG_SCHEMA.properties));

export function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}

export function defaultConfig(): TopicConfig {
  return resolve({});
}

function resolve(c: Partial<Record<keyof TopicConfig, unknown>>): TopicConfig {
  const durability = (c.durability as Durability | undefined) ?? (c.durable === true ? 'fsync' : 'disk');
  const priority = c.priority === undefined || c.priority === null ? null : clamp(c.priority as number, -1000, 1000);
  return {
    type: (c.type as 'log' | 'queue' | undefined) ?? 'log',
    ttl_ms: (c.ttl_ms as number | undefined) ?? 0,
    cap_records: (c.cap_records as number | undefined) ?? 0,
    cap_bytes: (c.cap_bytes as number | undefined) ?? 0,
    discard: (c.discard as 'old' | 'reject' | undefined) ?? 'old',
    durable: durability === 'fsync',
    durability,
    priority,
    auto_priority: (c.auto_priority as boolean | undefined) ?? true,
    auto_create: (c.auto_create as boolean | undefined) ?? true,
    idempotency_window_ms: (c.idempotency_window_ms as number | undefined) ?? 120_000,
    dedupe_node: (c.dedupe_node as boolean | undefined) ?? true,
    lease_ms: clamp((c.lease_ms as number | undefined) ?? 30_000, 100, 86_400_000),
    claim_jitter_ms: clamp((c.claim_jitter_ms as number | undefined) ?? 0, 0, 5000),
    max_deliveries: (c.max_deliveries as number | undefined) ?? 0,
    dead_letter: (c.dead_letter as string | null | undefined) ?? null,
    leases_durable: (c.leases_durable as boolean | undefined) ?? false,
  };
}

/** Validates a config object from a request and resolves it (defaults overlaid, docs/API.md "PUT /v0/topics/:topic"). */
export function resolveConfig(topic: string, input: unknown): { ok: true; config: TopicConfig } | ErrorResult {
  if (input === undefined || input === null) input = {};
  if (typeof input !== 'object' || Array.isArray(input))
    return fail('invalid_request', 'config must be a JSON object', { field: 'config' });
  const valid = validate();
  if (!valid(input)) {
    const err = valid.errors?.[0];
    const field = err?.instancePath.replace(/^\//, '') || undefined;
    return fail(
      'invalid_request',
      `invalid config${field ? ` field ${field}` : ''}: ${describeAjvError(err)}`,
      field ? { field } : undefined,
    );
  }
  const c = input as Partial<Record<keyof TopicConfig, unknown>>;
  if (typeof c.dead_letter === 'string' && !isTopicName(c.dead_letter)) {
    return fail('invalid_request', 'dead_letter is not a valid topic name', { field: 'dead_letter', dead_letter: c.dead_letter });
  }
  const config = resolve(c);
  if (config.type === 'queue' && config.dead_letter === topic) {
    return fail('invalid_request', 'dead_letter must differ from the queue topic', {
      field: 'dead_letter',
      dead_letter: config.dead_letter,
    });
  }
  return { ok: true, config };
}

export function sameConfig(a: TopicConfig, b: TopicConfig): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/** Distinct configs kept for sharing; past this a config is interned only if it is the default. */
const INTERNED_MAX = 4096;
const interned = new Map<string, TopicConfig>();
const DEFAULT_CONFIG: TopicConfig = Object.freeze(defaultConfig());
const CONFIG_KEYS = Object.keys(DEFAULT_CONFIG) as (keyof TopicConfig)[];

/**
 * One shared, frozen object per distinct resolved config (a worker of 100k topics mostly holds
 * the default one, ~160 bytes a copy). Configs are never changed in place (a PUT replaces the
 * object), so sharing is safe; the freeze makes sure of it.
 */
export function internConfig(c: TopicConfig): TopicConfig {
  if (Object.isFrozen(c)) return c;
  if (CONFIG_KEYS.every((k) => c[k] === DEFAULT_CONFIG[k])) return DEFAULT_CONFIG;
  const key = JSON.stringify(c);
  const hit = interned.get(key);
  if (hit) return hit;
  const frozen = Object.freeze({ ...c });
  if (interned.size < INTERNED_MAX) interned.set(key, frozen);
  return frozen;
}
