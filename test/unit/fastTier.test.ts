// The fast tier (`npm run test:unit`: test/unit and test/inject) spawns no server: no test file
// there reaches the spawning harness (test/helpers/server.ts, spoolServer.ts) or the browser
// driver through its imports, followed transitively; type-only imports are erased and allowed.
// A test that needs a real server belongs in test/http, test/cli, test/client or test/crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const testRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test');
const FAST_DIRS = ['unit', 'inject'];
const SPAWNING = ['helpers/server.ts', 'helpers/spoolServer.ts', 'helpers/browser.ts'].map((p) => path.join(testRoot, p));

/** Relative value imports and re-exports of a test module, resolved to .ts paths under test/. */
function valueImports(file: string): string[] {
  const src = fs.readFileSync(file, 'utf8');
  return [...src.matchAll(/^(?:import|export)\s(?!type\s)[^'"]*?from\s+'(\.[^']+)'/gm)]
    .map((m) => path.join(path.dirname(file), m[1]!.replace(/\.js$/, '.ts')))
    .filter((p) => p.startsWith(testRoot + path.sep));
}

/** The chain of imports from `file` to a spawning module, or undefined. */
function spawningChain(file: string, seen = new Set<string>()): string[] | undefined {
  if (SPAWNING.includes(file)) return [file];
  if (seen.has(file) || !fs.existsSync(file)) return undefined;
  seen.add(file);
  for (const dep of valueImports(file)) {
    const chain = spawningChain(dep, seen);
    if (chain) return [file, ...chain];
  }
  return undefined;
}

test('no test of the fast tier imports the harness that spawns servers', () => {
  const files = FAST_DIRS.flatMap((d) =>
    fs
      .readdirSync(path.join(testRoot, d))
      .filter((n) => n.endsWith('.test.ts'))
      .map((n) => path.join(testRoot, d, n)),
  );
  assert.ok(files.length > 50, `found ${files.length} fast-tier test files`);
  const bad = files
    .map((f) => spawningChain(f))
    .filter((c) => c !== undefined)
    .map((c) => c.map((p) => path.relative(testRoot, p)).join(' -> '));
  assert.deepEqual(bad, []);
});

test('the check sees a value import and lets a type-only one pass', () => {
  assert.deepEqual(
    spawningChain(path.join(testRoot, 'http/diff.test.ts'))?.map((p) => path.relative(testRoot, p)),
    ['http/diff.test.ts', 'support/httpSuite.ts', 'helpers/server.ts'],
  );
  assert.equal(
    spawningChain(path.join(testRoot, 'helpers/injectServer.ts')),
    undefined,
    'injectServer.ts imports server.ts for a type only',
  );
});
