// The one table of SERVICE_* settings (main thread, read once at start): name, kind, default,
// bounds and meaning. config.ts validates the environment against the JSON Schema built from
// it (ajv); README's settings table is tested against it (test/unit/configSchema.test.ts), and
// unknown SERVICE_* names are reported with the closest known one. Booleans are exactly
// 1/0/true/false: `yes` is an error, never a silent false.
import { Ajv, type ErrorObject } from 'ajv';

export type SettingKind = 'int' | 'fraction' | 'bool' | 'string' | 'enum';

export interface SettingDef {
  env: string;
  kind: SettingKind;
  /** The README's default column, as written there. */
  readme: string;
  min?: number;
  max?: number;
  values?: readonly string[];
  /** Masked when the effective config is printed. */
  secret?: boolean;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const SAFE = Number.MAX_SAFE_INTEGER;
/** The longest delay a Node timer takes (2^31 − 1 ms, ~24.8 days): the bound of every `_MS` setting. */
export const TIMER_MAX_MS = 2 ** 31 - 1;
/** A number from 0 to 1 written plainly (`0.9`, `.5`, `1`). */
const FRACTION_PATTERN = '^\\s*(0|1|0?\\.\\d+|1\\.0*)\\s*$';

export const SETTINGS: readonly SettingDef[] = [
  { env: 'SERVICE_HOST', kind: 'string', readme: '`127.0.0.1`' },
  { env: 'SERVICE_PORT', kind: 'int', readme: '`4000`', max: 65535 },
  { env: 'SERVICE_PORT_FILE', kind: 'string', readme: 'unset' },
  { env: 'SERVICE_DATA_DIR', kind: 'string', readme: '`./data`' },
  { env: 'SERVICE_ALLOW_INSECURE_NO_AUTH', kind: 'bool', readme: 'unset' },
  { env: 'SERVICE_API_KEYS', kind: 'string', readme: 'unset', secret: true },
  { env: 'SERVICE_PROBE_AUTH', kind: 'bool', readme: 'unset' },
  { env: 'SERVICE_MAX_BODY_BYTES', kind: 'int', readme: '`67108864`', min: 1 },
  { env: 'SERVICE_MAX_LIMIT', kind: 'int', readme: '`1000`', min: 1 },
  { env: 'SERVICE_MAX_TOPICS', kind: 'int', readme: '`100000`' },
  { env: 'SERVICE_MAX_ROUTERS', kind: 'int', readme: '`10000`' },
  { env: 'SERVICE_WORKERS', kind: 'int', readme: 'cores − 1, 1..8', min: 1, max: 64 },
  { env: 'SERVICE_WAL_SYNC_INTERVAL_MS', kind: 'int', readme: '`200`' },
  { env: 'SERVICE_WAL_FILE_BYTES', kind: 'int', readme: '`67108864`', min: 1 << 20 },
  { env: 'SERVICE_WAL_PREALLOCATE', kind: 'bool', readme: '`1`' },
  { env: 'SERVICE_WAL_INFLIGHT_BYTES', kind: 'int', readme: '`67108864`' },
  { env: 'SERVICE_CHECKPOINT_MS', kind: 'int', readme: '`60000`' },
  { env: 'SERVICE_CHECKPOINT_WAL_BYTES', kind: 'int', readme: '`268435456`' },
  { env: 'SERVICE_SEGMENT_BYTES', kind: 'int', readme: '`67108864`', min: 1 << 16 },
  { env: 'SERVICE_SEGMENT_CACHE_BYTES', kind: 'int', readme: '`134217728`' },
  { env: 'SERVICE_WORKER_HEAP_FLOOR_MB', kind: 'int', readme: '`128`' },
  { env: 'SERVICE_SEGMENT_OPEN_FILES', kind: 'int', readme: '`1024`', min: 1 },
  { env: 'SERVICE_SEGMENT_WRITE_DELAY_MS', kind: 'int', readme: '`5`' },
  { env: 'SERVICE_PACK_BYTES', kind: 'int', readme: '`1048576`' },
  { env: 'SERVICE_PACK_FILE_BYTES', kind: 'int', readme: '`16777216`', min: 1 << 16 },
  { env: 'SERVICE_COMPACT_LIVE_PERCENT', kind: 'int', readme: '`50`', max: 100 },
  { env: 'SERVICE_COMPACT_BYTES_PER_SEC', kind: 'int', readme: '`8388608`' },
  { env: 'SERVICE_TOPIC_SLEEP_MS', kind: 'int', readme: '`10000`' },
  { env: 'SERVICE_TOPICS_AWAKE', kind: 'int', readme: '`10000`' },
  { env: 'SERVICE_LAZY_RECOVERY', kind: 'bool', readme: '`1`' },
  { env: 'SERVICE_RECOVERY_TRUNCATE', kind: 'bool', readme: 'unset' },
  { env: 'SERVICE_SHUTDOWN_GRACE_MS', kind: 'int', readme: '`10000`' },
  { env: 'SERVICE_REQUEST_TIMEOUT_MS', kind: 'int', readme: '`300000`', min: 1000 },
  { env: 'SERVICE_WATCH_SESSION_TTL_MS', kind: 'int', readme: '`300000`' },
  { env: 'SERVICE_MAX_WATCH_SESSIONS', kind: 'int', readme: '`10000`' },
  { env: 'SERVICE_MAX_SSE_CONNECTIONS', kind: 'int', readme: '`10000`' },
  { env: 'SERVICE_MAX_SSE_CONNECTIONS_PER_KEY', kind: 'int', readme: '`1000`' },
  { env: 'SERVICE_MAX_INFLIGHT_PER_KEY', kind: 'int', readme: '`1000`' },
  { env: 'SERVICE_MAX_TOTAL_BYTES', kind: 'int', readme: '`0`' },
  { env: 'SERVICE_PRESSURE_ELU', kind: 'fraction', readme: '`0.9`' },
  { env: 'SERVICE_PRESSURE_LAG_MS', kind: 'int', readme: '`50`' },
  { env: 'SERVICE_PRESSURE_WAL_QUEUE_BYTES', kind: 'int', readme: '`33554432`' },
  { env: 'SERVICE_PRESSURE_PARK_MS', kind: 'int', readme: '`1000`' },
  { env: 'SERVICE_PRESSURE_MAX_PARKED', kind: 'int', readme: '`10000`' },
  { env: 'SERVICE_PRESSURE_INFLIGHT', kind: 'int', readme: '`64`', min: 1 },
  { env: 'SERVICE_PRESSURE_WINDOW_MS', kind: 'int', readme: '`2`' },
  { env: 'SERVICE_PRESSURE_AGING_PER_S', kind: 'int', readme: '`1000`' },
  { env: 'SERVICE_PRESSURE_PACE_MS', kind: 'int', readme: '`1000`', min: 10 },
  { env: 'SERVICE_PRESSURE_FORCE', kind: 'bool', readme: 'unset' },
  { env: 'SERVICE_LOG_LEVEL', kind: 'enum', readme: '`info`', values: LOG_LEVELS },
  { env: 'SERVICE_TRACE_DIR', kind: 'string', readme: 'unset' },
  { env: 'SERVICE_TRACE_OUTPUTS', kind: 'bool', readme: 'unset' },
  { env: 'SERVICE_STAGE_CLOCK', kind: 'bool', readme: 'unset' },
  { env: 'SERVICE_TRACE_TOPICS', kind: 'string', readme: '(all)' },
  { env: 'SERVICE_TEST_RECOVERY_DELAY_MS', kind: 'int', readme: '`0`' },
];

const BY_NAME = new Map(SETTINGS.map((d) => [d.env, d]));

function propertySchema(d: SettingDef): Record<string, unknown> {
  switch (d.kind) {
    case 'int':
      return { type: 'string', pattern: '^\\s*\\d+\\s*$' };
    case 'fraction':
      return { type: 'string', pattern: FRACTION_PATTERN };
    case 'bool':
      return { type: 'string', enum: ['1', '0', 'true', 'false'] };
    case 'enum':
      return { type: 'string', enum: [...d.values!] };
    case 'string':
      return { type: 'string' };
  }
}

/** The JSON Schema of the environment (every value a string; ints are range-checked below). */
export const ENV_SCHEMA = {
  type: 'object',
  properties: Object.fromEntries(SETTINGS.map((d) => [d.env, propertySchema(d)])),
} as const;

// Ints stay strings in the schema (the environment has nothing else); their range is checked
// on the number in validateEnv.
// validateSchema: false: the meta-schema's compile cost ~0.1 s at every boot (in each thread that
// loads this); ENV_SCHEMA is checked against it once, by a test (test/unit/schemasValid.test.ts).
const ajv = new Ajv({ allErrors: true, strict: true, validateSchema: false });
const validate = ajv.compile(ENV_SCHEMA);

function describe(e: ErrorObject, raw: string): string {
  const name = e.instancePath.slice(1);
  if (e.keyword === 'enum')
    return `${name} must be one of ${(e.params as { allowedValues: string[] }).allowedValues.join(', ')}, got ${JSON.stringify(raw)}`;
  if (e.keyword === 'pattern') {
    const what = BY_NAME.get(name)?.kind === 'fraction' ? 'a number between 0 and 1' : 'a non-negative integer';
    return `${name} must be ${what}, got ${JSON.stringify(raw)}`;
  }
  return `${name} ${e.message ?? 'is invalid'}, got ${JSON.stringify(raw)}`;
}

/** Every problem with `env` (empty values count as unset), one message each; [] when valid. */
export function validateEnv(env: Record<string, string | undefined>): string[] {
  const present: Record<string, string> = {};
  for (const d of SETTINGS) {
    const v = env[d.env];
    if (v !== undefined && v !== '') present[d.env] = v;
  }
  const errors: string[] = [];
  if (!validate(present)) for (const e of validate.errors ?? []) errors.push(describe(e, present[e.instancePath.slice(1)] ?? ''));
  for (const d of SETTINGS) {
    const v = present[d.env];
    if (d.kind !== 'int' || v === undefined || !/^\s*\d+\s*$/.test(v)) continue;
    const n = Number(v.trim());
    const min = d.min ?? 0;
    // A longer delay overflows Node's timers: they fire at once (a 1 ms drain grace).
    const max = d.max ?? (d.env.endsWith('_MS') ? TIMER_MAX_MS : SAFE);
    if (n < min || n > max) errors.push(`${d.env} must be between ${min} and ${max}, got ${JSON.stringify(v)}`);
  }
  return errors;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/** SERVICE_* names in `env` that no setting has, each with the closest known name. */
export function unknownSettings(env: Record<string, string | undefined>): { name: string; closest: string }[] {
  const out: { name: string; closest: string }[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('SERVICE_') || BY_NAME.has(name)) continue;
    let closest = SETTINGS[0]!.env;
    let best = Infinity;
    for (const d of SETTINGS) {
      const dist = distance(name, d.env);
      if (dist < best) [best, closest] = [dist, d.env];
    }
    out.push({ name, closest });
  }
  return out;
}

/** The names whose values are never printed or logged. */
export const SECRET_SETTINGS: readonly string[] = SETTINGS.filter((d) => d.secret).map((d) => d.env);
