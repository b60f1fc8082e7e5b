// Unit tests of the retention building blocks: the loss ledger and the tag index.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LossLedger } from '../../src/actors/topic/lossLedger.js';
import { TagIndex } from '../../src/actors/topic/tagIndex.js';

test('loss ledger: runs merge by reason; describe reports reason and count for a range', () => {
  const l = new LossLedger();
  for (let s = 1; s <= 10; s++) l.add(s, 'cap');
  for (let s = 11; s <= 15; s++) l.add(s, 'ttl');
  assert.deepEqual(l.runs, [
    { from: 1, to: 10, reason: 'cap', count: 10 },
    { from: 11, to: 15, reason: 'ttl', count: 5 },
  ]);
  assert.deepEqual(l.describe(1, 10), { reason: 'cap', count: 10 });
  assert.deepEqual(l.describe(12, 15), { reason: 'ttl', count: 4 });
  assert.deepEqual(l.describe(5, 15), { reason: 'mixed', count: 11 });
  assert.deepEqual(LossLedger.from(JSON.parse(JSON.stringify(l))).runs, l.runs);
});

test('loss ledger: never more than 64 runs; the oldest merge as mixed', () => {
  const l = new LossLedger();
  for (let s = 1; s <= 200; s++) l.add(s, s % 2 ? 'cap' : 'ttl');
  assert.ok(l.runs.length <= 64);
  assert.equal(l.runs[0]!.from, 1);
  assert.equal(l.runs[0]!.reason, 'mixed');
  assert.equal(l.runs.at(-1)!.to, 200);
  assert.equal(
    l.runs.reduce((a, r) => a + r.count, 0),
    200,
  );
});

test('tag index: Eq lookups, prefix Globs over sorted keys, pruning', () => {
  const t = new TagIndex();
  const tags = ['b', 'a', 'ab', 'abc', 'b', 'ba', 'c'];
  tags.forEach((tag, i) => t.add(tag, i + 1));
  assert.deepEqual(t.eq('b'), [1, 5]);
  assert.deepEqual(t.eq('zz'), []);
  assert.deepEqual(t.keysWithPrefix('a'), ['a', 'ab', 'abc']);
  assert.deepEqual(t.keysWithPrefix('b'), ['b', 'ba']);
  assert.deepEqual(t.keysWithPrefix(''), ['a', 'ab', 'abc', 'b', 'ba', 'c']);
  assert.deepEqual(t.keysWithPrefix('d'), []);
  t.prune('b', (s) => s !== 1);
  assert.deepEqual(t.eq('b'), [5]);
  t.prune('c', () => false);
  assert.deepEqual(t.keysWithPrefix('c'), []);
  t.add('aa', 9);
  assert.deepEqual(t.keysWithPrefix('a'), ['a', 'aa', 'ab', 'abc']);
});
