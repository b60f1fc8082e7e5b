// A router definition as RouterRegistry.put takes it (src/supervisor/routerRegistry.ts), with the
// API's defaults and create_dest on: what the registry's unit tests register.
import type { RouterInput } from '../../src/supervisor/routerRegistry.js';
import type { StoredRouter } from '../../src/storage/routerStore.js';

export const routerInput = (source: string, dest: string): RouterInput => ({
  source,
  dest,
  preserveNode: true,
  preserveTag: true,
  createDest: true,
  filter: null,
  allowCycle: false,
  guarantee: 'at_least_once',
});

/** A router as meta/routers.json stores it, with the API's defaults. */
export const storedRouter = (name: string, id: number, source: string, dest: string): StoredRouter => ({
  name,
  id,
  source,
  dest,
  preserveNode: true,
  preserveTag: true,
  allowCycle: false,
  guarantee: 'at_least_once',
  filter: null,
  start: 0,
});
