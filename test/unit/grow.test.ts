// grownTo (src/core/columns/grow.ts): the one growth rule of the column layer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { grownTo } from '../../src/core/columns/grow.js';

test('grownTo: the same array while it has room; else at least double, same kind, contents first', () => {
  const a = Float64Array.from([1, 2, 3]);
  assert.equal(grownTo(a, 3), a);
  const b = grownTo(a, 4);
  assert.ok(b instanceof Float64Array);
  assert.equal(b.length, 6);
  assert.deepEqual([...b], [1, 2, 3, 0, 0, 0]);
  const c = grownTo(Int32Array.from([7]), 10);
  assert.ok(c instanceof Int32Array);
  assert.equal(c.length, 10);
  assert.equal(c[0], 7);
  assert.equal(grownTo(new Uint32Array(0), 1).length, 1);
});
