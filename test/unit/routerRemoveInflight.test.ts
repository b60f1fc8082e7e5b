// A router removed while its forwarder has a copy batch out (src/actors/router/forwarder.ts
// removeRouter): the remove is answered only once the dest has answered that batch, so
// DELETE /v0/routers/:router returns after the last copy the router makes (docs/API.md
// "Routers": forwarding stops at once) and a read of the dest after it sees every copy.
// The real source and dest actors on a SimHost, whose peer messages cross only on command.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimHost } from '../support/simHost.js';
import { resolveConfig } from '../../src/protocol/topicConfig.js';
import type { TopicRequest } from '../../src/protocol/messages/rpc.js';
import type { RouterDef } from '../../src/protocol/messages/router.js';
import { forwardsOut } from '../../src/actors/router/forwarder.js';

const def: RouterDef = {
  name: 'r',
  id: 1,
  source: 's',
  dest: 'd',
  preserveNode: true,
  preserveTag: true,
  filter: null,
  allowCycle: false,
  guarantee: 'exactly_once',
};

function world(): { sim: SimHost; must: (req: TopicRequest) => void } {
  const sim = new SimHost({ seed: 'remove-inflight', maxLimit: 1000, segmentBytes: 64 * 1024 * 1024, maxTopics: 0 });
  const must = (req: TopicRequest) => {
    const id = sim.request(req);
    sim.flushAll();
    assert.ok(sim.replies.get(id)?.ok, `${req.op}: ${JSON.stringify(sim.replies.get(id))}`);
    sim.replies.delete(id);
  };
  for (const topic of ['s', 'd']) {
    const c = resolveConfig(topic, { durability: 'disk' });
    assert.ok(c.ok);
    must({ op: 'put', topic, config: c.config });
  }
  must({ op: 'routerSet', topic: 's', def, start: null });
  while (sim.deliverPeer()) sim.flushAll(); // its first probe of the dest, answered
  return { sim, must };
}

const destHead = (sim: SimHost) => sim.actor('d').current!.head;

test('a remove with a copy batch out is answered after the dest took it; nothing lands after', () => {
  const { sim, must } = world();
  must({ op: 'append', topic: 's', body: Buffer.from('{"records":[{"data":1},{"data":2}]}'), returnSeqs: false, headerIdemKey: undefined });
  assert.equal(forwardsOut(sim.actor('s').current!), 1, 'a copy batch is out, not yet delivered');
  const id = sim.request({ op: 'routerRemove', topic: 's', router: 'r' });
  sim.flushAll();
  assert.equal(sim.replies.get(id), undefined, 'not answered while the batch is out');
  while (sim.deliverPeer()) sim.flushAll();
  const r = sim.replies.get(id);
  assert.ok(r?.ok);
  assert.equal(Buffer.from(r.json).toString() + '}', '{"removed":true}');
  const head = destHead(sim);
  assert.equal(head, 2, 'both copies are in the dest when the remove is answered');
  // Later appends are not forwarded.
  must({ op: 'append', topic: 's', body: Buffer.from('{"records":[{"data":3}]}'), returnSeqs: false, headerIdemKey: undefined });
  while (sim.deliverPeer()) sim.flushAll();
  sim.advance(5000);
  assert.equal(destHead(sim), head);
  assert.equal(sim.actor('s').idle(), false, 'the source still has its topic');
  assert.equal(sim.actor('s').routerLeaving, undefined);
});

test('a remove with nothing out, or of an unknown router, is answered at once', () => {
  const { sim } = world();
  let id = sim.request({ op: 'routerRemove', topic: 's', router: 'r' });
  sim.flushAll();
  assert.equal(
    Buffer.from(sim.replies.get(id)!.ok ? (sim.replies.get(id) as { json: Uint8Array }).json : []).toString(),
    '{"removed":true',
  );
  id = sim.request({ op: 'routerRemove', topic: 's', router: 'r' });
  sim.flushAll();
  assert.equal(Buffer.from((sim.replies.get(id) as { json: Uint8Array }).json).toString(), '{"removed":false');
});

test('the source deleted while a remove waits: the remove is still answered when the batch is', () => {
  const { sim, must } = world();
  must({ op: 'append', topic: 's', body: Buffer.from('{"records":[{"data":1}]}'), returnSeqs: false, headerIdemKey: undefined });
  const id = sim.request({ op: 'routerRemove', topic: 's', router: 'r' });
  must({ op: 'deleteTopic', topic: 's', ifEmpty: false });
  assert.equal(sim.replies.get(id), undefined);
  assert.equal(sim.actor('s').idle(), false, 'kept while the remove waits');
  while (sim.deliverPeer()) sim.flushAll();
  assert.ok(sim.replies.get(id)?.ok);
  assert.equal(sim.actor('s').idle(), true);
});
