// IdIndex (src/core/columns/idIndex.ts): a topic id -> int32 index in pages of typed arrays. Checked
// against a Map through sets, overwrites, deletes and re-adds, over ids near 0, on both sides of
// a page boundary, of later epochs, past 2^32 and up to 2^53 - 1; pages go when emptied.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { IdIndex } from '../../src/core/columns/idIndex.js';

const EDGE_IDS = [
  0,
  1,
  4095,
  4096,
  4097,
  0x01_000000,
  0x01_000001,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 32 + 4096,
  2 ** 52,
  Number.MAX_SAFE_INTEGER,
];

test('get, set, delete and size on ids near 0, at page edges and past 2^32', () => {
  const ix = new IdIndex();
  for (const [i, id] of EDGE_IDS.entries()) ix.set(id, i - 7); // negative values too
  assert.equal(ix.size, EDGE_IDS.length);
  for (const [i, id] of EDGE_IDS.entries()) assert.equal(ix.get(id), i - 7, `id ${id}`);
  assert.equal(ix.get(2), undefined);
  assert.equal(ix.get(2 ** 32 + 1), undefined);
  ix.set(4096, 99); // an overwrite is not a second id
  assert.equal(ix.size, EDGE_IDS.length);
  assert.equal(ix.get(4096), 99);
  assert.equal(ix.delete(4096), true);
  assert.equal(ix.delete(4096), false);
  assert.equal(ix.has(4096), false);
  assert.equal(ix.get(4097), 4 - 7, 'a neighbour in the page stays');
  assert.equal(ix.size, EDGE_IDS.length - 1);
  for (const id of EDGE_IDS) assert.equal(ix.has(id), id !== 4096, `id ${id}`);
});

test('values must be storable int32s and ids non-negative safe integers', () => {
  const ix = new IdIndex();
  assert.throws(() => ix.set(1, -0x8000_0000), /not a storable int32/);
  assert.throws(() => ix.set(1, 2 ** 31), /not a storable int32/);
  assert.throws(() => ix.set(1, 1.5), /not a storable int32/);
  assert.throws(() => ix.set(-1, 0), /not a non-negative safe integer/);
  assert.throws(() => ix.set(2 ** 53, 0), /not a non-negative safe integer/);
  assert.equal(ix.get(-1), undefined);
  assert.equal(ix.delete(-1), false);
  assert.equal(ix.size, 0);
});

test('an emptied page goes, and an id of it can come back', () => {
  const ix = new IdIndex();
  ix.set(8192, 1);
  ix.set(8193, 2);
  ix.delete(8192);
  ix.delete(8193);
  assert.equal(ix.size, 0);
  assert.equal((ix as unknown as { pages: Map<number, Int32Array> }).pages.size, 0);
  assert.equal(ix.get(8193), undefined, 'the remembered last page went with it');
  ix.set(8193, 3);
  assert.equal(ix.get(8193), 3);
  assert.equal(ix.get(8192), undefined);
});

test('IdIndex agrees with a Map through any sequence of sets and deletes', () => {
  // Ids cluster (a few pages) with edge ids mixed in, so pages fill, empty and come back.
  const idArb = fc.oneof(
    fc.integer({ min: 0, max: 3 * 4096 }),
    fc.constantFrom(...EDGE_IDS),
    fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  );
  const valueArb = fc.integer({ min: -0x7fff_ffff, max: 0x7fff_ffff });
  const opArb = fc.oneof(
    { weight: 3, arbitrary: fc.record({ t: fc.constant('set' as const), id: idArb, v: valueArb }) },
    { weight: 2, arbitrary: fc.record({ t: fc.constant('delete' as const), id: idArb }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('get' as const), id: idArb }) },
  );
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 200 }), (ops) => {
      const ix = new IdIndex();
      const model = new Map<number, number>();
      for (const op of ops) {
        if (op.t === 'set') {
          ix.set(op.id, op.v);
          model.set(op.id, op.v);
        } else if (op.t === 'delete') assert.equal(ix.delete(op.id), model.delete(op.id));
        else assert.equal(ix.get(op.id), model.get(op.id));
        assert.equal(ix.size, model.size);
      }
      for (const [id, v] of model) assert.equal(ix.get(id), v);
      // With the sizes equal, every id of the model held means no other id is.
      for (const op of ops) assert.equal(ix.has(op.id), model.has(op.id));
    }),
    { numRuns: 300 },
  );
});
