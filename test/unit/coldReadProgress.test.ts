// A diff whose records are read back from segments makes progress even when the cache is so
// small that what one read-back brought leaves memory while the next part of the page is read:
// it answers with the records it holds rather than reading back and forth until it gives up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimActor } from '../support/simActor.js';
import { resolveConfig } from '../../src/protocol/topicConfig.js';

function diffFrom(sim: SimActor, fromSeq: number): number {
  return sim.send({
    op: 'diff',
    fromSeq,
    limit: 200,
    nodes: null,
    includeTags: false,
    includeMeta: false,
    waitMs: 0,
    maxBatchBytes: 0,
  } as never);
}

test('a page whose parts leave the cache in turn answers with the part read back', () => {
  const sim = new SimActor();
  const create = sim.send({ op: 'put', config: { durability: 'disk' } } as never);
  sim.ackAll();
  assert.equal(sim.reply(create).status, 201);
  for (let b = 0; b < 2; b++) {
    const id = sim.append({ records: Array.from({ length: 50 }, (_, i) => ({ data: { b, i } })) });
    sim.ackAll();
    assert.equal(sim.reply(id).status, 200);
  }
  assert.ok(
    sim.frames.some((f) => f.segment),
    'appends are placed in segments',
  );

  // Both frames are in their segment; the first batch's texts leave memory.
  sim.evict(1, 50);
  const d = diffFrom(sim, 0);
  assert.equal(sim.reply(d), undefined, 'waits for the first batch to come back');
  assert.equal(sim.coldReads.length, 1);
  // While that read is under way the second batch's texts leave memory too.
  sim.evict(51, 100);
  sim.answerColdRead();

  const r = sim.reply(d);
  assert.ok(r && !r.error, `answered without another read-back: ${JSON.stringify(r?.error)}`);
  assert.deepEqual(
    r.body.records.map((x: { $seq: number }) => x.$seq),
    Array.from({ length: 50 }, (_, i) => i + 1),
  );
  assert.equal(r.body.next_from_seq, 50);
  assert.equal(r.body.caught_up, false);
  assert.equal(sim.coldReads.length, 0);

  // The rest of the page: read back on the next diff.
  sim.evict(1, 50);
  const d2 = diffFrom(sim, 50);
  sim.answerColdRead();
  const r2 = sim.reply(d2);
  assert.equal(r2.body.records.length, 50);
  assert.equal(r2.body.records[0].data.i, 0);
  assert.equal(r2.body.caught_up, true);
});

test('a claim pass whose jobs leave the cache while others are read back hands out every job it leased', () => {
  const sim = new SimActor('q');
  const resolved = resolveConfig('q', { type: 'queue', durability: 'disk', claim_jitter_ms: 0, lease_ms: 60_000 });
  assert.ok(resolved.ok);
  const create = sim.send({ op: 'put', config: resolved.config } as never);
  sim.ackAll();
  assert.equal(sim.reply(create).status, 201);
  for (let b = 0; b < 2; b++) {
    const id = sim.append({ records: Array.from({ length: 5 }, (_, i) => ({ data: { b, i } })) });
    sim.ackAll();
    assert.equal(sim.reply(id).status, 200);
  }
  sim.evict(1, 5);
  const claim = sim.send({ op: 'claim', node: 'w', max: 10, leaseMs: null } as never);
  sim.ackAll();
  assert.equal(sim.coldReads.length, 1, 'the cold jobs are read back');
  // While they are read, the other jobs' texts leave memory.
  sim.evict(6, 10);
  sim.answerColdRead();
  while (sim.coldReads.length > 0) sim.answerColdRead();
  sim.ackAll();
  const r = sim.reply(claim);
  assert.ok(r && !r.error, JSON.stringify(r?.error));
  assert.deepEqual(
    r.body.claimed.map((j: { $seq: number }) => j.$seq),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    'no job stays leased without being handed out',
  );
});

test('a dead-letter term whose jobs leave the cache while others are read back moves them all', () => {
  const sim = new SimActor('q');
  const resolved = resolveConfig('q', { type: 'queue', durability: 'disk', claim_jitter_ms: 0, lease_ms: 60_000, dead_letter: 'q-dead' });
  assert.ok(resolved.ok, JSON.stringify(resolved));
  const create = sim.send({ op: 'put', config: resolved.config } as never);
  sim.ackAll();
  assert.equal(sim.reply(create).status, 201);
  for (let b = 0; b < 2; b++) {
    sim.append({ records: Array.from({ length: 5 }, (_, i) => ({ data: { b, i } })) });
    sim.ackAll();
  }
  const claim = sim.send({ op: 'claim', node: 'w', max: 10, leaseMs: null } as never);
  sim.ackAll();
  assert.equal(sim.reply(claim).body.count, 10);
  sim.evict(1, 5);
  const seqs = Array.from({ length: 10 }, (_, i) => i + 1);
  const term = sim.send({ op: 'term', node: 'w', seqs, leaseIds: null, reason: null } as never);
  sim.ackAll();
  assert.equal(sim.coldReads.length, 1);
  sim.evict(6, 10);
  while (sim.coldReads.length > 0) sim.answerColdRead();
  assert.equal(sim.reply(term), undefined, `no failure while the copy is on its way: ${JSON.stringify(sim.reply(term))}`);
  assert.equal(sim.peerRequests.length, 1, 'the jobs go to the dead-letter topic');
  const body = JSON.parse((sim.peerRequests[0]!.req as unknown as { body: Buffer }).body.toString());
  assert.equal(body.records.length, 10);
});
