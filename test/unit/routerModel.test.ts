// The fast-check model of router forwarding (fuzz/routerModel.ts) against the real source and
// dest actors on a SimHost: random runs of appends, WAL steps, peer deliveries, refusals, time,
// checkpoints and crashes. Reproduce a failure with ROUTER_MODEL_SEED=<seed>
// ROUTER_MODEL_PATH=<path>, or `npm run fuzz -- --router --seed <seed>`.
import { test } from 'node:test';
import fc from 'fast-check';
import { routerProperty } from '../../fuzz/routerModel.js';

test('router model: copies never duplicate, reorder or skip; progress never passes the dest', () => {
  const seed = process.env.ROUTER_MODEL_SEED !== undefined ? Number(process.env.ROUTER_MODEL_SEED) : undefined;
  fc.assert(routerProperty(60), {
    numRuns: Number(process.env.ROUTER_MODEL_RUNS ?? 150),
    includeErrorInReport: true,
    ...(seed !== undefined ? { seed, path: process.env.ROUTER_MODEL_PATH } : {}),
  });
});
