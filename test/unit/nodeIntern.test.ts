// NodeIntern (many-topics issue): no map until a node or literal is seen, the same ids before and
// after the recovery caches are dropped, and the caches gone once recovery ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NodeIntern } from '../../src/actors/topic/nodeIntern.js';

const maps = (n: NodeIntern) => {
  const x = n as unknown as Record<string, Map<string, unknown> | undefined>;
  return { ids: x.ids, idsByLiteral: x.idsByLiteral, tagsByLiteral: x.tagsByLiteral };
};

test('an instance that never saw a node or literal holds no map', () => {
  const n = new NodeIntern();
  assert.equal(n.id(undefined), 0);
  assert.equal(n.knownId('a'), undefined);
  assert.deepEqual(maps(n), { ids: undefined, idsByLiteral: undefined, tagsByLiteral: undefined });
});

test('recovery caches go at endRecovery; ids stay the same', () => {
  const n = new NodeIntern();
  const a = n.idOfLiteral('"node-a"');
  assert.equal(n.idOfLiteral('"node-a"'), a);
  assert.equal(n.tagOfLiteral('"t\\u00e9"'), 'té');
  assert.equal(maps(n).idsByLiteral?.size, 1);
  n.endRecovery();
  assert.equal(maps(n).idsByLiteral, undefined);
  assert.equal(maps(n).tagsByLiteral, undefined);
  assert.equal(n.knownId('node-a'), a, 'node ids survive');
  assert.equal(n.id('node-a'), a);
  assert.equal(n.idOfLiteral('"node-a"'), a, 'a literal seen again maps to the same id');
  assert.equal(n.name(a), 'node-a');
  assert.equal(n.name(0), '', 'id 0 is no node');
});
