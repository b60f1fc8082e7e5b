// The package version, read once from package.json (dist/src/http/version.js → package.json).
import { createRequire } from 'node:module';

let cached: string | undefined;

export function version(): string {
  cached ??= (createRequire(import.meta.url)('../../../package.json') as { version: string }).version;
  return cached;
}
