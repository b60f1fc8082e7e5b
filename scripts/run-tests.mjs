// Runs every compiled test file under dist/test with node:test. `--quick` skips the slow tiers
// (crash and browser tests) for everyday work; CI runs everything.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const quick = process.argv.includes('--quick');
const slowDirs = new Set(['crash', 'browser']);
function collect(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (quick && slowDirs.has(name)) continue;
      out.push(...collect(p));
    } else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}
const files = collect('dist/test');
// A hung test fails after 5 minutes; a test file whose process never exits (a timer left
// running) stops the whole run after 40 minutes instead of waiting for CI's limit.
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=300000', ...files], {
  stdio: 'inherit',
  timeout: 40 * 60 * 1000,
  killSignal: 'SIGKILL',
});
if (r.error) console.error(`test run stopped: ${r.error.message}`);
process.exit(r.status ?? 1);
