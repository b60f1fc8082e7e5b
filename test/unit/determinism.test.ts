// Actor logic takes time and randomness only from its context (docs/ARCHITECTURE.md "Threads", "Traces and replay"): no wall
// clock, Math.random, crypto, performance, timers, process or fs under src/actors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src/actors');
const FORBIDDEN = [/\bDate\.now\b/, /\bnew Date\b/, /\bMath\.random\b/, /\bcrypto\b/, /\bperformance\b/, /\bsetTimeout\b/, /\bsetInterval\b/, /\bsetImmediate\b/, /\bprocess\./, /from 'node:fs/, /from 'node:worker_threads'/];

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

test('src/actors never reads the clock, randomness or I/O directly', () => {
  const found: string[] = [];
  for (const f of files(root)) {
    const lines = fs.readFileSync(f, 'utf8').split('\n');
    lines.forEach((line, i) => {
      const t = line.trim();
      if (t.startsWith('*') || t.startsWith('/*')) return; // doc comments
      const code = line.replace(/\/\/.*$/, '');
      for (const re of FORBIDDEN) if (re.test(code)) found.push(`${path.relative(root, f)}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(found, []);
});
