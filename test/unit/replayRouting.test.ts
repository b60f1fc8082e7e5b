// ReplayRouting (src/wal/replayRouting.ts): the WAL thread's replay routing agrees with a plain
// Map of the snapshot's ids plus the topics created after the cut, for any ids and worker count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ReplayRouting } from '../../src/wal/replayRouting.js';
import { workerOf } from '../../src/core/names.js';

test('routing matches a Map model: snapshot ids per worker, creations by name, unknown ids undefined', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 2, max: 4 }),
      fc.uniqueArray(fc.integer({ min: 1, max: 2 ** 40 }), { maxLength: 200 }),
      fc.array(fc.tuple(fc.integer({ min: 1, max: 2 ** 40 }), fc.string({ minLength: 1, maxLength: 8 })), { maxLength: 30 }),
      fc.array(fc.integer({ min: 0, max: 2 ** 40 }), { maxLength: 50 }),
      (workers, snapIds, creates, probes) => {
        const model = new Map<number, number>();
        const byWorker: number[][] = Array.from({ length: workers }, () => []);
        snapIds.forEach((id, i) => {
          byWorker[i % workers]!.push(id);
          model.set(id, i % workers);
        });
        const r = new ReplayRouting(
          byWorker.map((ids) => Float64Array.from(ids)),
          workers,
          snapIds.length,
        );
        for (const [id, name] of creates) {
          assert.equal(
            r.create(id, () => name),
            workerOf(name, workers),
          );
          model.set(id, workerOf(name, workers));
        }
        for (const id of [...probes, ...snapIds, ...creates.map(([id]) => id)])
          assert.equal(r.workerOf(id), id > 0 ? model.get(id) : undefined, `id ${id}`);
      },
    ),
  );
});

test('one worker: every topic id goes to it, no name is read; id 0 (BOOT) goes nowhere', () => {
  const r = new ReplayRouting([], 1, 2);
  assert.equal(
    r.create(11, () => assert.fail('no name lookup with one worker')),
    0,
  );
  assert.equal(r.workerOf(123456), 0);
  assert.equal(r.workerOf(0), undefined);
  assert.equal(r.size, 3);
});
