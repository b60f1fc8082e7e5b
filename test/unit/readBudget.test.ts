// ReadBudget (src/streams/watch/readBudget.ts): a watch stream's reads start while what the
// connection holds plus the reads in flight stay within its high water (and their number within
// readsMax), one at a time once they would not, never while it is paused; waiting reads start in arrival order, and a close answers
// every waiter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ReadBudget } from '../../src/streams/watch/readBudget.js';

const MiB = 1024 * 1024;

/** A budget of 4 reads of 1 MiB over a connection holding `held.bytes`. */
function budget(): { b: ReadBudget; held: { bytes: number } } {
  const held = { bytes: 0 };
  const b = new ReadBudget({ highWaterBytes: 4 * MiB, readBytes: MiB, readsMax: 4, heldBytes: () => held.bytes });
  return { b, held };
}

/** Which of `turns` have been answered, and how, after pending callbacks ran. */
async function answered(turns: Promise<boolean>[]): Promise<(boolean | 'waiting')[]> {
  const out: (boolean | 'waiting')[] = turns.map(() => 'waiting');
  turns.forEach((p, i) => void p.then((v) => (out[i] = v)));
  await new Promise((r) => setImmediate(r));
  return out;
}

test('an idle connection starts reads until they fill the high water', async () => {
  const { b } = budget();
  const turns = Array.from({ length: 6 }, () => b.take());
  assert.deepEqual(await answered(turns), [true, true, true, true, 'waiting', 'waiting']);
  assert.equal(b.inFlight, 4);
  assert.equal(b.waitingCount, 2);
});

test('a read ending lets the oldest waiting read start; a new read goes behind the waiting ones', async () => {
  const { b, held } = budget();
  const first = [b.take(), b.take(), b.take(), b.take()];
  const a = b.take();
  const c = b.take();
  await answered(first);
  held.bytes = MiB; // the first read's frame is queued: it counts as held now
  b.done();
  assert.deepEqual(await answered([a, c]), ['waiting', 'waiting'], 'the frame and three reads fill the high water');
  held.bytes = 0; // a flush: the kernel took it
  b.startWaiting();
  assert.deepEqual(await answered([a, c]), [true, 'waiting']);
  const late = b.take(); // the read that ended reads again: behind c
  b.done();
  assert.deepEqual(await answered([c, late]), [true, 'waiting']);
});

test('small reads: no more than readsMax at once', async () => {
  const held = { bytes: 0 };
  const b = new ReadBudget({ highWaterBytes: 4 * MiB, readBytes: 1024, readsMax: 4, heldBytes: () => held.bytes });
  const turns = Array.from({ length: 6 }, () => b.take());
  assert.deepEqual(await answered(turns), [true, true, true, true, 'waiting', 'waiting']);
  b.done();
  assert.deepEqual(await answered(turns.slice(4)), [true, 'waiting']);
});

test('over the high water nothing starts; with no read in flight one starts while it holds no more than it', async () => {
  const { b, held } = budget();
  held.bytes = 4 * MiB + 1;
  const t1 = b.take();
  assert.deepEqual(await answered([t1]), ['waiting']);
  held.bytes = 4 * MiB; // a flush: the kernel took a little
  b.startWaiting();
  assert.deepEqual(await answered([t1]), [true]);
  // At the high water, one read in flight: a second would pass it by more than one read.
  const t2 = b.take();
  assert.deepEqual(await answered([t2]), ['waiting']);
  assert.equal(b.inFlight, 1);
});

test('a paused connection (held: Infinity) starts nothing until it resumes', async () => {
  const { b, held } = budget();
  held.bytes = Infinity;
  const t = b.take();
  b.startWaiting();
  assert.deepEqual(await answered([t]), ['waiting']);
  held.bytes = 0;
  b.startWaiting();
  assert.deepEqual(await answered([t]), [true]);
});

test('close answers every waiting read with false, and later takes too', async () => {
  const { b } = budget();
  const turns = Array.from({ length: 5 }, () => b.take());
  b.close();
  assert.deepEqual(await answered([...turns, b.take()]), [true, true, true, true, false, false]);
  for (let i = 0; i < 4; i++) b.done(); // reads in flight still end
  assert.equal(b.inFlight, 0);
  assert.throws(() => b.done(), /never taken/);
});
