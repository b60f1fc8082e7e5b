// Comments and docs cite only what is in the repository: docs/API.md sections and
// docs/ARCHITECTURE.md section names, never a document outside it or an issue number (a
// newcomer cannot follow those). This test greps the source, tests, benches, fuzzers, scripts,
// README.md and docs/ for such references and fails on any hit; it is the one file allowed to
// spell the pattern. Runs in the test process (node:test), reading files only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const self = path.join(root, 'test/unit/docRefs.test.ts');
const SCANNED = ['src', 'docs', 'README.md', 'test', 'bench', 'fuzz', 'scripts'];
const TEXT = /\.(ts|mts|mjs|js|md|json|sh|txt)$/;

/** Outside references: spec/resolution/design section numbers, gap ids and issue numbers. */
const OUTSIDE_REF = /SPEC [0-9]|RESOLVED|DESIGN [0-9]|\bG[0-9]+\b|[Ii]ssue [0-9]+/;

function files(p: string): string[] {
  if (!fs.existsSync(p)) return [];
  if (!fs.statSync(p).isDirectory()) return TEXT.test(p) ? [p] : [];
  return fs.readdirSync(p, { withFileTypes: true }).flatMap((e) => (e.name === 'node_modules' ? [] : files(path.join(p, e.name))));
}

test('no comment or doc cites a document outside the repository or an issue number', () => {
  const hits: string[] = [];
  for (const f of SCANNED.flatMap((d) => files(path.join(root, d)))) {
    if (f === self) continue;
    fs.readFileSync(f, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (OUTSIDE_REF.test(line)) hits.push(`${path.relative(root, f)}:${i + 1}: ${line.trim().slice(0, 120)}`);
      });
  }
  assert.deepEqual(hits, [], `cite docs/API.md or docs/ARCHITECTURE.md sections instead:\n${hits.join('\n')}`);
});
