// FlushPacer (src/streams/sse/flushPacer.ts): dirty targets are flushed in the order they became dirty,
// in slices of about 4 ms with the event loop's other work between them, at most half the
// thread's time, and a target that becomes dirty again while the flush is under way is flushed
// again after the ones already waiting; an idle pacer flushes a lone target without waiting for
// the loop's next phase.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SystemClock } from '../../src/core/clock.js';
import { FlushPacer, type PacedFlush } from '../../src/streams/sse/flushPacer.js';

function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

test('a long flush runs in slices, with other work in between, and keeps the dirty order', async () => {
  const pacer = new FlushPacer(new SystemClock());
  const order: string[] = [];
  const make = (name: string, costMs: number): PacedFlush => ({
    flush: () => {
      order.push(name);
      spin(costMs);
    },
  });
  const targets = Array.from({ length: 200 }, (_, i) => make(`t${i}`, 0.1)); // ~20 ms in all
  for (const t of targets) pacer.markDirty(t);
  // Work that arrives while the flush is under way: it must not wait for the whole flush.
  let ranAt = -1;
  setImmediate(function again() {
    if (order.length === 0) return setImmediate(again);
    ranAt = order.length;
  });
  const t0 = performance.now();
  while (order.length < 200 && performance.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 1));
  assert.deepEqual(
    order,
    targets.map((_, i) => `t${i}`),
    'flushed once each, in the order they became dirty',
  );
  assert.ok(ranAt > 0 && ranAt < 200, `other work ran between slices (after ${ranAt} of 200 flushes)`);
  const wall = performance.now() - t0;
  assert.ok(wall >= 30, `flushing took at most about half the time (${wall.toFixed(1)} ms for ~20 ms of flushes)`);
});

test('a target dirty again during a sliced flush goes behind the ones already waiting', async () => {
  const pacer = new FlushPacer(new SystemClock());
  const order: string[] = [];
  const slow: PacedFlush[] = Array.from({ length: 100 }, (_, i) => ({
    flush: () => {
      order.push(`s${i}`);
      spin(0.1);
    },
  }));
  const a: PacedFlush = { flush: () => order.push('a') };
  pacer.markDirty(a);
  for (const t of slow) pacer.markDirty(t);
  // `a` was flushed first; marked again (new bytes) while the slow ones are still queued.
  while (order.length < 1) await new Promise((r) => setImmediate(r));
  pacer.markDirty(a);
  while (order.length < 102) await new Promise((r) => setTimeout(r, 1));
  assert.equal(order[0], 'a');
  assert.equal(order[101], 'a', 'flushed again after every target that was waiting');
});

test('an idle pacer flushes a lone target at the end of the current callback; a busy one waits its turn', async () => {
  // The pacer's own monotonic time, moved by hand: a preempted test process (two shared cores)
  // must not turn "busy" into "idle".
  let monoMs = 1000;
  const pacer = new FlushPacer(new SystemClock(), () => monoMs);
  const order: string[] = [];
  setImmediate(() => order.push('immediate'));
  pacer.markDirty({ flush: () => order.push('lone') });
  pacer.markDirty({ flush: () => order.push('second') }); // same callback: the same flush
  await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(order, ['lone', 'second', 'immediate'], 'flushed before the loop went on to its check phase');
  // Right after a slice that took time, the next flush waits (frames coalesce under load).
  const busy: string[] = [];
  monoMs += 5; // idle
  pacer.markDirty({ flush: () => (busy.push('slow'), (monoMs += 2)) });
  await new Promise((r) => setTimeout(r, 5));
  monoMs += 5; // idle again: flushed at once
  pacer.markDirty({ flush: () => busy.push('a') });
  pacer.markDirty({ flush: () => (busy.push('b'), (monoMs += 2)) });
  await new Promise((r) => setImmediate(r));
  setImmediate(() => busy.push('immediate'));
  pacer.markDirty({ flush: () => busy.push('c') }); // 'b' just took 2 ms: not idle
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(busy, ['slow', 'a', 'b', 'immediate', 'c']);
});
