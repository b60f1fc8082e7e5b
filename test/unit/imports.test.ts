// No import cycles under src/ (STYLE "No cycles, no reaching in"), type-only imports included:
// a cycle is a seam in the wrong place even when the compiler erases it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src');

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

/** Relative imports and re-exports of each module, resolved to file paths. */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of files(root)) {
    const src = fs.readFileSync(f, 'utf8');
    const deps = [...src.matchAll(/^(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gm)].map((m) => path.join(path.dirname(f), m[1]!.replace(/\.js$/, '.ts')));
    g.set(f, deps);
  }
  return g;
}

test('src/ has no import cycles', () => {
  const g = graph();
  const done = new Set<string>();
  const onPath: string[] = [];
  const cycles: string[] = [];
  const visit = (f: string): void => {
    const at = onPath.indexOf(f);
    if (at >= 0) {
      cycles.push([...onPath.slice(at), f].map((p) => path.relative(root, p)).join(' -> '));
      return;
    }
    if (done.has(f)) return;
    onPath.push(f);
    for (const d of g.get(f) ?? []) visit(d);
    onPath.pop();
    done.add(f);
  };
  for (const f of g.keys()) visit(f);
  assert.ok(g.size > 50, `found only ${g.size} modules under ${root}`);
  assert.deepEqual(cycles, []);
});

/** Modules that may import node:fs: the Fs seam itself, and files outside the data directory. */
const NODE_FS_ALLOWED = new Set([
  'storage/fs.ts', // the seam
  'cli.ts', // SERVICE_PORT_FILE
  'storage/lock.ts', // /proc/<pid>/stat (is the lock holder alive?)
  'replay/replayer.ts', // trace files
  'replay/traceWriter.ts',
]);

test('only the Fs seam touches the data directory: no other module imports node:fs', () => {
  const offenders = files(root)
    .map((f) => path.relative(root, f))
    .filter((rel) => !NODE_FS_ALLOWED.has(rel) && /from 'node:fs(\/promises)?'/.test(fs.readFileSync(path.join(root, rel), 'utf8')));
  assert.deepEqual(offenders, []);
});
