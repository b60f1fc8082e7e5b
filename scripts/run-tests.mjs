// Runs the compiled test files under dist/test with node:test, in tiers (README "Tests"):
//   (none)   everything: CI and `npm test`;
//   --quick  everything but the slow tiers (crash and browser tests);
//   --unit   the fast tier: unit tests and the HTTP rule tests through inject() (no spawned server).
// A compiled test whose source file is gone (moved or deleted since the last clean build) is
// left out: tsc never removes what it built before.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const quick = process.argv.includes('--quick');
const unit = process.argv.includes('--unit');
const slowDirs = new Set(['crash', 'browser']);
const fastDirs = ['dist/test/unit', 'dist/test/inject'];
function collect(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (quick && slowDirs.has(name)) continue;
      out.push(...collect(p));
    } else if (name.endsWith('.test.js') && existsSync(p.replace(/^dist[/\\]/, '').replace(/\.js$/, '.ts'))) out.push(p);
  }
  return out;
}
const files = (unit ? fastDirs : ['dist/test']).flatMap(collect);
// A hung test fails after 5 minutes; a test file whose process never exits (a timer left
// running) stops the whole run after 40 minutes instead of waiting for CI's limit.
// TAP as before, then the failed tests named again after the totals (scripts/failures-reporter.mjs).
const reporters = [
  ...['--test-reporter=tap', '--test-reporter-destination=stdout'],
  ...['--test-reporter=./scripts/failures-reporter.mjs', '--test-reporter-destination=stdout'],
];
const r = spawnSync(process.execPath, ['--test', ...reporters, '--test-concurrency=2', '--test-timeout=300000', ...files], {
  stdio: 'inherit',
  timeout: 40 * 60 * 1000,
  killSignal: 'SIGKILL',
});
if (r.error) console.error(`test run stopped: ${r.error.message}`);
process.exit(r.status ?? 1);
