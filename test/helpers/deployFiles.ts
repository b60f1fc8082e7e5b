// Reading the deployment files of the repository (Dockerfile, deploy/spool.service) for the deploy
// tests: the repository root, a file's text, the runtime stage's ENV and the image's command line.
// Shared by test/unit/deploy.test.ts (the files' properties) and test/cli/deployImage.test.ts
// (the image's command run as a plain process).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/test/helpers → the repository root. */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const read = (p: string) => fs.readFileSync(path.join(root, p), 'utf8');

/** The runtime stage's ENV instructions (continuation lines joined), as name → value. */
export function imageEnv(dockerfile: string): Record<string, string> {
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  const env: Record<string, string> = {};
  for (const m of runtime.replace(/\\\n\s*/g, ' ').matchAll(/^ENV (.+)$/gm)) {
    for (const pair of m[1]!.trim().split(/\s+/)) {
      const eq = pair.indexOf('=');
      env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return env;
}

/** The image's command line: ENTRYPOINT then CMD, both in exec form. */
export function imageCommand(dockerfile: string): string[] {
  const exec = (kw: string) => JSON.parse(new RegExp(`^${kw} (\\[.*\\])$`, 'm').exec(dockerfile)?.[1] ?? '[]') as string[];
  return [...exec('ENTRYPOINT'), ...exec('CMD')];
}
