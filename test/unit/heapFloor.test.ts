// The HTTP thread's heap floor (src/http/heapFloor.ts): a storm is the eighth full collection
// within two seconds, not one collection more spread out; the floor is 32 MiB of V8's large-object
// space, built a slice per event-loop turn; and a real full collection, observed through
// perf_hooks, raises it once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { GcStorm, HEAP_FLOOR_BYTES, HeapFloor, raisedFloor, watchHeapStorms } from '../../src/http/heapFloor.js';

test('a storm is eight full collections within two seconds', () => {
  const storm = new GcStorm(8, 2000);
  for (let i = 0; i < 7; i++) assert.equal(storm.note(i * 250), false, `collection ${i + 1}`);
  assert.equal(storm.note(1750), true, 'the eighth within 2 s');

  const spread = new GcStorm(8, 2000);
  const results = Array.from({ length: 30 }, (_, i) => spread.note(i * 300)); // eight span 2100 ms
  assert.ok(
    results.every((r) => !r),
    'one every 300 ms is no storm',
  );

  // The window slides: a late burst after a quiet spell is one.
  const late = new GcStorm(3, 100);
  assert.equal(late.note(0), false);
  assert.equal(late.note(1000), false);
  assert.equal(late.note(2000), false);
  assert.equal(late.note(2050), false);
  assert.equal(late.note(2090), true);
});

function largeObjectBytes(): number {
  return v8.getHeapSpaceStatistics().find((s) => s.space_name === 'large_object_space')!.space_used_size;
}

test('the floor is 32 MiB of arrays in the large-object space, built a slice per turn', async () => {
  const before = largeObjectBytes();
  const floor = new HeapFloor();
  let turnsWhileBuilding = 0;
  let building = true;
  const tick = (): void => {
    if (!building) return;
    turnsWhileBuilding++;
    setImmediate(tick);
  };
  setImmediate(tick);
  await floor.raise();
  building = false;
  assert.equal(floor.bytes, HEAP_FLOOR_BYTES);
  assert.ok(turnsWhileBuilding >= 8, `other callbacks ran between slices (${turnsWhileBuilding} turns)`);
  // Young large objects move to the old large-object space at the next scavenge or full collection.
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
  assert.ok(largeObjectBytes() - before >= HEAP_FLOOR_BYTES, `large-object space grew by ${largeObjectBytes() - before} B`);
});

test('a full collection in a storm raises the floor once, and it is kept', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const floor = new HeapFloor();
  const raised: number[] = [];
  let done!: () => void;
  const built = new Promise<void>((r) => (done = r));
  watchHeapStorms(
    floor,
    (bytes) => {
      raised.push(bytes);
      done();
    },
    new GcStorm(2, 60_000),
  );
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms)); // gc entries reach observers later
  gc();
  await sleep(50);
  gc();
  await sleep(50);
  await built;
  gc();
  gc();
  await sleep(50);
  assert.deepEqual(raised, [HEAP_FLOOR_BYTES], 'raised once, whatever collections follow');
  assert.equal(raisedFloor(), floor, 'held for the life of the process');
});
