// The settings schema (src/configSchema.ts): every error message, unknown names with the closest
// known one, masking, and README's settings table kept equal to the schema.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readSettings, SettingsError, effectiveSettings } from '../../src/config.js';
import { SETTINGS, unknownSettings, validateEnv } from '../../src/configSchema.js';

const README = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../README.md');

test('each kind of bad value is named, with what is allowed', () => {
  assert.deepEqual(validateEnv({ SERVICE_PORT: '70000' }), ['SERVICE_PORT must be between 0 and 65535, got "70000"']);
  assert.deepEqual(validateEnv({ SERVICE_ALLOW_INSECURE_NO_AUTH: 'yes' }), [
    'SERVICE_ALLOW_INSECURE_NO_AUTH must be one of 1, 0, true, false, got "yes"',
  ]);
  assert.deepEqual(validateEnv({ SERVICE_MAX_LIMIT: '-1' }), ['SERVICE_MAX_LIMIT must be a non-negative integer, got "-1"']);
  assert.deepEqual(validateEnv({ SERVICE_CHECKPOINT_MS: '1.5' }), ['SERVICE_CHECKPOINT_MS must be a non-negative integer, got "1.5"']);
  assert.deepEqual(validateEnv({ SERVICE_LOG_LEVEL: 'verbose' }), [
    'SERVICE_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"',
  ]);
  assert.deepEqual(validateEnv({ SERVICE_WORKERS: '0' }), ['SERVICE_WORKERS must be between 1 and 64, got "0"']);
  // Lower bounds are refused, never clamped in silence.
  assert.deepEqual(validateEnv({ SERVICE_SEGMENT_BYTES: '4096' }), [
    'SERVICE_SEGMENT_BYTES must be between 65536 and 9007199254740991, got "4096"',
  ]);
  assert.deepEqual(validateEnv({ SERVICE_MAX_LIMIT: '0' }), ['SERVICE_MAX_LIMIT must be between 1 and 9007199254740991, got "0"']);
  // A body cap of 0 would fail Fastify's own check at start (exit 1 and a stack): refused here.
  assert.deepEqual(validateEnv({ SERVICE_MAX_BODY_BYTES: '0' }), [
    'SERVICE_MAX_BODY_BYTES must be between 1 and 9007199254740991, got "0"',
  ]);
  // Every delay fits a Node timer (a longer one fires at once: a 3e9 ms grace drained in 4 ms).
  assert.deepEqual(validateEnv({ SERVICE_SHUTDOWN_GRACE_MS: '2147483647' }), []);
  assert.deepEqual(validateEnv({ SERVICE_SHUTDOWN_GRACE_MS: '3000000000' }), [
    'SERVICE_SHUTDOWN_GRACE_MS must be between 0 and 2147483647, got "3000000000"',
  ]);
  assert.deepEqual(validateEnv({ SERVICE_RECOVERY_TRUNCATE: 'TRUE' }).length, 1, 'booleans are exact');
  for (const ok of ['1', '0', 'true', 'false']) assert.deepEqual(validateEnv({ SERVICE_TRACE_OUTPUTS: ok }), []);
  assert.deepEqual(validateEnv({ SERVICE_PORT: '' }), [], 'empty is unset');
});

test('readSettings reports every problem at once as a SettingsError', () => {
  assert.throws(
    () => readSettings({ SERVICE_PORT: '70000', SERVICE_ALLOW_INSECURE_NO_AUTH: 'yes' }),
    (err: unknown) =>
      err instanceof SettingsError && /SERVICE_PORT/.test(err.message) && /SERVICE_ALLOW_INSECURE_NO_AUTH/.test(err.message),
  );
  const s = readSettings({ SERVICE_ALLOW_INSECURE_NO_AUTH: 'false', SERVICE_LOG_LEVEL: 'debug' });
  assert.equal(s.allowInsecureNoAuth, false);
  assert.equal(s.logLevel, 'debug');
  assert.equal(readSettings({}).logLevel, 'info');
});

test('unknown SERVICE_* names come with the closest known name', () => {
  assert.deepEqual(unknownSettings({ SERVICE_PROT: '1', SERVICE_PORT: '1', HOME: '/x', SERVICE_DATADIR: 'd' }), [
    { name: 'SERVICE_DATADIR', closest: 'SERVICE_DATA_DIR' },
    { name: 'SERVICE_PROT', closest: 'SERVICE_PORT' },
  ]);
});

test('the effective settings mask the API keys', () => {
  const eff = effectiveSettings(readSettings({}));
  assert.equal('apiKeys' in eff, false, 'no key field to print as [redacted] when there are no keys');
  const masked = effectiveSettings({ ...readSettings({}), apiKeys: 'k1:secret' });
  assert.equal(masked.apiKeys, '***');
  assert.doesNotMatch(JSON.stringify(masked), /secret/);
});

test("README's settings table lists exactly the schema's settings, with the same defaults", () => {
  const text = fs.readFileSync(README, 'utf8');
  const section = text.slice(text.indexOf('## Settings'), text.indexOf('\n## ', text.indexOf('## Settings') + 5));
  const rows = [...section.matchAll(/^\| `(SERVICE_[A-Z_]+)` \| ([^|]+) \|/gm)].map((m) => [m[1]!, m[2]!.trim()]);
  assert.deepEqual(rows.map(([n]) => n).sort(), SETTINGS.map((d) => d.env).sort(), 'every setting has a row and every row a setting');
  for (const [name, dflt] of rows) assert.equal(dflt, SETTINGS.find((d) => d.env === name)!.readme, `default of ${name}`);
});

test("every documented default is the code's default: setting it explicitly changes nothing", () => {
  // The schema's `readme` column is what README shows; readSettings holds the real defaults.
  const base = readSettings({});
  let checked = 0;
  for (const d of SETTINGS) {
    const m = /^`([^`]+)`$/.exec(d.readme);
    let value: string | undefined;
    if (d.kind === 'bool') value = d.readme === 'unset' ? '0' : m?.[1];
    else if (d.kind !== 'string' && m) value = m[1];
    if (value === undefined) continue;
    assert.deepEqual(readSettings({ [d.env]: value }), base, `${d.env}=${value} is documented as the default`);
    checked++;
  }
  assert.ok(checked >= 35, `${checked} defaults checked`);
});
