// The event-loop sampler behind the pressure gate's readings (src/core/loopSampler.ts): its delay
// histogram (a 10 ms timer) runs only while the loop works, and a long block that starts on an
// idle loop still shows in lagP99Ms, through the lateness of the sample itself. Real time: the
// sampler reads the real event loop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { LoopSampler } from '../../src/core/loopSampler.js';

const TICK_MS = 50;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Keeps the loop busy for `ms` (nothing else runs meanwhile). */
function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}
/**
 * Idle ticks until the sampler calls the loop idle: two on a quiet machine; on a loaded one the
 * test process's own housekeeping (the runner, a collection) can fill a tick's 2 %, so up to 20.
 */
async function idleTicks(s: LoopSampler): Promise<number> {
  let latest = 0; // how late the last tick's timer fired (ms): a loaded machine's own lag
  for (let i = 0; i < 20 && (i < 2 || s.measuringDelay); i++) {
    const t0 = performance.now();
    await sleep(TICK_MS);
    latest = performance.now() - t0 - TICK_MS;
    s.sample();
  }
  return latest;
}

test('the delay histogram stops on an idle loop and starts again once the loop works', async () => {
  const s = new LoopSampler(TICK_MS);
  try {
    assert.equal(s.measuringDelay, true, 'on at the start');
    const late = await idleTicks(s);
    assert.equal(s.measuringDelay, false, 'idle ticks: off');
    // No lag of its own: at most what the machine made the last tick late by.
    assert.ok(s.lagP99Ms < 40 + late, `idle lag ${s.lagP99Ms} ms, the tick ${late} ms late`);
    block(10); // a fifth of the tick
    await sleep(TICK_MS - 10);
    s.sample();
    assert.equal(s.measuringDelay, true, 'a working tick: on');
    // While on, a block delays the histogram's timer: the p99 shows it.
    block(80);
    await sleep(20);
    s.sample();
    assert.equal(s.measuringDelay, true);
    assert.ok(s.lagP99Ms >= 60, `lag p99 ${s.lagP99Ms} ms after an 80 ms block`);
  } finally {
    s.stop();
  }
});

test('a long block that starts on an idle loop shows in lagP99Ms (the sample came late)', async () => {
  const s = new LoopSampler(TICK_MS);
  try {
    await idleTicks(s);
    assert.equal(s.measuringDelay, false);
    await sleep(TICK_MS);
    block(150);
    s.sample(); // 150 ms late
    assert.ok(s.lagP99Ms >= 120, `lag p99 ${s.lagP99Ms} ms after a 150 ms block on an idle loop`);
    assert.equal(s.measuringDelay, true, 'the block was work: on again');
  } finally {
    s.stop();
  }
});
