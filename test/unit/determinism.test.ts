// Actor logic takes time and randomness only from its context (docs/ARCHITECTURE.md "Threads", "Traces and replay"): no wall
// clock, Math.random, crypto, performance, timers, process or fs under src/actors, nor in any module
// an actor imports, directly or through others (type-only imports carry no code and are skipped).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src');
const root = path.join(src, 'actors');
const FORBIDDEN = [
  /\bDate\.now\b/,
  /\bnew Date\b/,
  /\bMath\.random\b/,
  /\bcrypto\b/,
  /\bperformance\b/,
  /\bsetTimeout\b/,
  /\bsetInterval\b/,
  /\bsetImmediate\b/,
  /\bprocess\./,
  /from 'node:fs/,
  /from 'node:worker_threads'/,
];

function files(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

/** The modules an actor's code runs: src/actors and everything it imports for values, transitively. */
function actorModules(): string[] {
  const seen = new Set<string>();
  const visit = (f: string): void => {
    if (seen.has(f)) return;
    seen.add(f);
    const text = fs.readFileSync(f, 'utf8');
    for (const m of text.matchAll(/^(import|export)\s+(type\s)?[^'"]*?from\s+'(\.[^']+)'/gm)) {
      if (m[2]) continue; // `import type`: erased, no code runs
      visit(path.join(path.dirname(f), m[3]!.replace(/\.js$/, '.ts')));
    }
  };
  for (const f of files(root)) visit(f);
  return [...seen];
}

test('actor code never reads the clock, randomness or I/O directly, nor does anything it imports', () => {
  const found: string[] = [];
  const modules = actorModules();
  assert.ok(
    modules.some((f) => !f.startsWith(root)),
    'follows imports out of src/actors',
  );
  for (const f of modules) {
    const lines = fs.readFileSync(f, 'utf8').split('\n');
    lines.forEach((line, i) => {
      const t = line.trim();
      if (t.startsWith('*') || t.startsWith('/*')) return; // doc comments
      const code = line.replace(/\/\/.*$/, '');
      for (const re of FORBIDDEN) if (re.test(code)) found.push(`${path.relative(src, f)}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(found, []);
});
