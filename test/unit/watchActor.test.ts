// The topic actor's side of watch (docs/ARCHITECTURE.md "Watch streams"): what it publishes when records become visible or
// durable or the topic is deleted, and what a watch pull (`watchRead`) answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimActor } from '../support/simActor.js';
import { defaultConfig, type TopicConfig } from '../../src/protocol/topicConfig.js';
import type { WatchBatch, WatchEvent } from '../../src/protocol/messages/events.js';
import type { WatchReadMeta, WatchReadRequest } from '../../src/protocol/messages/rpc.js';

type Durability = 'ephemeral' | 'memory' | 'disk' | 'fsync';

function cfg(durability: Durability, extra: Partial<TopicConfig> = {}): TopicConfig {
  return { ...defaultConfig(), durability, durable: durability === 'fsync', ...extra };
}

function created(sim: SimActor, durability: Durability, extra: Partial<TopicConfig> = {}): void {
  const id = sim.send({ op: 'put', config: cfg(durability, extra) } as never);
  sim.ackAll();
  assert.equal(sim.reply(id).status, 201);
}

const lastFrameNo = (sim: SimActor) => sim.frames.at(-1)!.frameNo;

/** Events published since `from` (an index into sim.published). */
const since = (sim: SimActor, from: number): WatchEvent[] => sim.published.slice(from);

/** The records of a pushed batch, every piece included, parsed. */
function pushedRecords(b: WatchBatch): unknown[] {
  const buf = Buffer.from(b.buf.buffer, b.buf.byteOffset, b.buf.byteLength);
  const out = [];
  for (let i = 0; i < b.nodeIdx.length; i++) out.push(JSON.parse(buf.subarray(b.offs[i * 4]!, b.offs[i * 4 + 4]!).toString('utf8') + '}'));
  return out;
}

function watchRead(sim: SimActor, over: Partial<WatchReadRequest>): { watch: WatchReadMeta; json: string } {
  const id = sim.send({
    op: 'watchRead',
    fromSeq: 0,
    limit: 1000,
    maxBatchBytes: 0,
    nodes: null,
    includeTags: false,
    includeMeta: true,
    includeData: true,
    strong: false,
    first: true,
    ...over,
  } as never);
  const r = sim.replies.get(id);
  assert.ok(r && r.ok, `watchRead answered at once: ${JSON.stringify(r)}`);
  assert.ok(r.watch);
  return { watch: r.watch, json: Buffer.from(r.json).toString('utf8') };
}

test('not watched: nothing is published', () => {
  for (const cls of ['memory', 'disk', 'fsync'] as const) {
    const sim = new SimActor();
    created(sim, cls);
    sim.append({ records: [{ data: 1 }, { data: 2 }] });
    sim.ackAll();
    sim.append({ records: [{ data: 3 }] });
    const f = lastFrameNo(sim);
    sim.ack(f, f - 1);
    sim.ackAll();
    sim.send({ op: 'deleteTopic', ifEmpty: false } as never);
    sim.ackAll();
    assert.deepEqual(sim.published, [], cls);
  }
});

test('disk: a batch when the frame is written (durableHead lagging), then a durable event', () => {
  const sim = new SimActor();
  created(sim, 'disk');
  sim.watched = true;
  sim.append({ records: [{ data: 'a' }] });
  assert.equal(sim.published.length, 0, 'nothing before the ack');
  sim.ackAll(true); // first append: its reservation must be durable, so it is durable too
  assert.equal(sim.published.length, 1);
  const b1 = sim.published[0] as WatchBatch;
  assert.equal(b1.k, 'batch');
  assert.deepEqual([b1.from, b1.to, b1.head, b1.durableHead, b1.stale], [0, 1, 1, 1, false]);
  const durableFrame = lastFrameNo(sim);

  const n = sim.published.length;
  sim.append({
    records: [
      { data: { x: 1 }, meta: { m: true } },
      { data: [2], tag: 'tg', node: 'n1' },
    ],
  });
  const f = lastFrameNo(sim);
  assert.equal(sim.frames.at(-1)!.durable, false, 'a disk append frame');
  assert.equal(since(sim, n).length, 0, 'not visible before written');
  sim.ack(f, durableFrame);
  const evs = since(sim, n);
  assert.equal(evs.length, 1);
  const b = evs[0] as WatchBatch;
  assert.equal(b.k, 'batch');
  assert.equal(b.topic, 't');
  assert.equal(b.instanceId, b1.instanceId);
  assert.deepEqual([b.from, b.to, b.head, b.durableHead], [1, 3, 3, 1]);
  assert.equal(b.stale, false);
  assert.equal(b.dedupeNode, true);
  assert.deepEqual(b.nodes, ['n1']);
  assert.deepEqual([...b.nodeIdx], [-1, 0]);
  assert.equal(b.offs.length, 2 * 4 + 1);
  assert.deepEqual(pushedRecords(b), [
    { $seq: 2, $ts: sim.now, data: { x: 1 }, meta: { m: true } },
    { $seq: 3, $ts: sim.now, $node: 'n1', $tag: 'tg', data: [2] },
  ]);

  sim.ack(f, f);
  const d = since(sim, n + 1);
  assert.deepEqual(d, [{ k: 'durable', topic: 't', instanceId: b.instanceId, durableHead: 3, head: 3 }]);
  sim.ack(f, f);
  assert.equal(sim.published.length, n + 2, 'a repeated ack publishes nothing');
});

test('fsync: published only when durable, with durableHead == head', () => {
  const sim = new SimActor();
  created(sim, 'fsync');
  sim.watched = true;
  sim.append({ records: [{ data: 1 }, { data: 2 }] });
  const f = lastFrameNo(sim);
  sim.ack(f, f - 1);
  assert.equal(sim.published.length, 0, 'written is not visible for fsync');
  sim.ack(f, f);
  assert.equal(sim.published.length, 1);
  const b = sim.published[0] as WatchBatch;
  assert.equal(b.k, 'batch');
  assert.deepEqual([b.from, b.to, b.head, b.durableHead], [0, 2, 2, 2]);
  assert.deepEqual(
    pushedRecords(b).map((r) => (r as { data: number }).data),
    [1, 2],
  );
});

test('memory: published at visibility (at once under a durable reservation), durableHead == head', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  sim.watched = true;
  sim.append({ records: [{ data: 1 }] });
  assert.equal(sim.published.length, 0, 'waits for the first reservation');
  sim.ackAll(true);
  assert.equal(sim.published.length, 1);
  const b1 = sim.published[0] as WatchBatch;
  assert.deepEqual([b1.from, b1.to, b1.head, b1.durableHead], [0, 1, 1, 1]);
  // Under the durable reservation: visible on enqueue, no ack needed.
  sim.append({ records: [{ data: 2 }, { data: 3 }] });
  assert.equal(sim.published.length, 2);
  const b2 = sim.published[1] as WatchBatch;
  assert.equal(b2.k, 'batch');
  assert.deepEqual([b2.from, b2.to, b2.head, b2.durableHead], [1, 3, 3, 3]);
  assert.deepEqual(pushedRecords(b2), [
    { $seq: 2, $ts: sim.now, data: 2 },
    { $seq: 3, $ts: sim.now, data: 3 },
  ]);
  sim.ackAll(true);
  assert.equal(sim.published.length, 2, 'no durable event: memory was durable-equal all along');
});

test('discard:old: a batch bigger than cap_records is published stale; a smaller one is not', () => {
  const sim = new SimActor();
  created(sim, 'memory', { cap_records: 2, discard: 'old' });
  sim.watched = true;
  sim.append({ records: [{ data: 1 }, { data: 2 }, { data: 3 }, { data: 4 }, { data: 5 }] });
  sim.ackAll(true);
  assert.equal(sim.published.length, 1);
  const b = sim.published[0] as WatchBatch;
  assert.equal(b.k, 'batch');
  assert.equal(b.stale, true);
  assert.deepEqual([b.from, b.to, b.head], [0, 5, 5]);
  assert.equal(b.nodeIdx.length, 0);
  // Batches that evict only older records (6 evicts 4; 7 and 8 evict 5 and 6): still whole.
  sim.append({ records: [{ data: 6 }] });
  sim.append({ records: [{ data: 7 }, { data: 8 }] });
  const last = sim.published.at(-1) as WatchBatch;
  assert.equal(last.stale, false);
  assert.deepEqual([last.from, last.to], [6, 8]);
  assert.deepEqual(
    pushedRecords(last).map((r) => (r as { $seq: number }).$seq),
    [7, 8],
  );
});

test('topic delete: `deleted` only once the delete frame is durable', () => {
  const sim = new SimActor();
  created(sim, 'disk');
  sim.append({ records: [{ data: 1 }, { data: 2 }] });
  sim.ackAll(true);
  sim.watched = true;
  const instanceId = watchRead(sim, {}).watch.instanceId;
  const del = sim.send({ op: 'deleteTopic', ifEmpty: false } as never);
  const f = lastFrameNo(sim);
  assert.equal(sim.frames.at(-1)!.durable, true);
  assert.deepEqual(sim.published, []);
  sim.ack(f, f - 1);
  assert.deepEqual(sim.published, [], 'written is not enough');
  assert.equal(sim.reply(del), undefined);
  sim.ack(f, f);
  assert.deepEqual(sim.published, [{ k: 'deleted', topic: 't', instanceId, head: 2 }]);
  assert.equal(sim.reply(del).body.deleted, true);
});

test('watchRead: meta and the record frame payload', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  sim.append({ records: [{ data: { a: 1 }, meta: { k: 'v' }, tag: 'x' }, { data: 'two', node: 'n' }, { data: 3 }] });
  sim.ackAll(true);
  const ts = sim.now;
  const r = watchRead(sim, { fromSeq: 0, includeTags: true });
  assert.deepEqual(
    { ...r.watch, instanceId: 0 },
    {
      exists: true,
      instanceId: 0,
      head: 3,
      deliverableHead: 3,
      earliest: 1,
      next: 3,
      count: 3,
      tombstone: null,
    },
  );
  assert.ok(r.watch.instanceId > 0);
  assert.equal(
    r.json,
    `{"topic":"t","records":[{"$seq":1,"$ts":${ts},"$tag":"x","data":{"a":1},"meta":{"k":"v"}},` +
      `{"$seq":2,"$ts":${ts},"$node":"n","data":"two"},{"$seq":3,"$ts":${ts},"data":3}],"from_seq":0,"to_seq":3,"head_seq":3}`,
  );
  // Include flags, limit and a later cursor.
  const r2 = watchRead(sim, { fromSeq: 0, limit: 2, includeData: false, includeMeta: false, first: false });
  assert.deepEqual(JSON.parse(r2.json), {
    topic: 't',
    records: [
      { $seq: 1, $ts: ts },
      { $seq: 2, $ts: ts, $node: 'n' },
    ],
    from_seq: 0,
    to_seq: 2,
    head_seq: 3,
  });
  assert.deepEqual([r2.watch.next, r2.watch.count], [2, 2]);
  // Node filter (dedupe_node is the default).
  const r3 = watchRead(sim, { fromSeq: 1, nodes: ['n'] });
  assert.deepEqual(
    JSON.parse(r3.json).records.map((x: { $seq: number }) => x.$seq),
    [3],
  );
  assert.deepEqual([JSON.parse(r3.json).from_seq, JSON.parse(r3.json).to_seq], [1, 3]);
  // At the head: nothing, empty json.
  const r4 = watchRead(sim, { fromSeq: 3 });
  assert.equal(r4.json, '');
  assert.deepEqual([r4.watch.next, r4.watch.count, r4.watch.tombstone], [3, 0, null]);
});

test('watchRead: tombstones below the evict floor are from_seq_too_old first, then the ledger reason', () => {
  const sim = new SimActor();
  created(sim, 'memory', { cap_records: 3, discard: 'old' });
  sim.append({ records: Array.from({ length: 10 }, (_, i) => ({ data: i + 1 })) });
  sim.ackAll(true);
  const ts = sim.now;
  const first = watchRead(sim, { fromSeq: 0, first: true });
  assert.equal(first.watch.earliest, 8);
  assert.equal(first.watch.tombstone?.gapTo, 7);
  assert.deepEqual(JSON.parse(first.watch.tombstone!.json), {
    topic: 't',
    reason: 'from_seq_too_old',
    gap_from: 1,
    gap_to: 7,
    earliest_seq: 8,
    head_seq: 10,
  });
  assert.equal(
    first.json,
    `{"topic":"t","records":[{"$seq":8,"$ts":${ts},"data":8},{"$seq":9,"$ts":${ts},"data":9},{"$seq":10,"$ts":${ts},"data":10}],` +
      `"from_seq":7,"to_seq":10,"head_seq":10}`,
  );
  assert.deepEqual([first.watch.next, first.watch.count], [10, 3]);
  const later = watchRead(sim, { fromSeq: 5, first: false });
  assert.deepEqual(JSON.parse(later.watch.tombstone!.json), {
    topic: 't',
    reason: 'cap',
    gap_from: 6,
    gap_to: 7,
    earliest_seq: 8,
    head_seq: 10,
  });
  // At the floor: no tombstone.
  const atFloor = watchRead(sim, { fromSeq: 7, first: true });
  assert.equal(atFloor.watch.tombstone, null);
  assert.equal(JSON.parse(atFloor.json).from_seq, 7);
});

test('watchRead: a purely deleted gap is skipped without a tombstone', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  sim.append({ records: [{ data: 1 }, { data: 2 }, { data: 3 }] });
  sim.ackAll(true);
  sim.send({ op: 'deleteRecords', beforeSeq: 3, match: null } as never);
  sim.ackAll(true);
  const r = watchRead(sim, { fromSeq: 0, first: true });
  assert.equal(r.watch.tombstone, null);
  assert.equal(r.watch.earliest, 3);
  assert.deepEqual(
    JSON.parse(r.json).records.map((x: { $seq: number }) => x.$seq),
    [3],
  );
  assert.deepEqual([r.watch.next, r.watch.count], [3, 1]);
});

test('watchRead: a cursor beyond the head of a recreated topic is `recreated`, even on the first read', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  sim.append({ records: Array.from({ length: 10 }, (_, i) => ({ data: i })) });
  sim.ackAll(true);
  const oldId = watchRead(sim, { fromSeq: 10 }).watch.instanceId;
  sim.send({ op: 'deleteTopic', ifEmpty: false } as never);
  sim.ackAll(true);
  created(sim, 'memory');
  sim.append({ records: [{ data: 'x' }, { data: 'y' }] });
  sim.ackAll(true);
  for (const first of [true, false]) {
    const r = watchRead(sim, { fromSeq: 10, first });
    assert.notEqual(r.watch.instanceId, oldId);
    assert.deepEqual(JSON.parse(r.watch.tombstone!.json), {
      topic: 't',
      reason: 'recreated',
      gap_from: 1,
      gap_to: 0,
      earliest_seq: 1,
      head_seq: 2,
    });
    assert.equal(r.watch.tombstone!.gapTo, 0);
    const j = JSON.parse(r.json);
    assert.deepEqual([j.from_seq, j.to_seq, j.head_seq], [0, 2, 2]);
    assert.deepEqual(
      j.records.map((x: { data: string }) => x.data),
      ['x', 'y'],
    );
  }
});

test('watchRead: strong reads stop at the durable head', () => {
  const sim = new SimActor();
  created(sim, 'disk');
  sim.append({ records: [{ data: 1 }] });
  sim.ackAll(true);
  const durable = lastFrameNo(sim);
  sim.append({ records: [{ data: 2 }, { data: 3 }] });
  const f = lastFrameNo(sim);
  sim.ack(f, durable);
  const strong = watchRead(sim, { fromSeq: 0, strong: true });
  assert.deepEqual([strong.watch.head, strong.watch.deliverableHead, strong.watch.next, strong.watch.count], [3, 1, 1, 1]);
  const sj = JSON.parse(strong.json);
  assert.deepEqual([sj.from_seq, sj.to_seq, sj.head_seq, sj.records.length], [0, 1, 3, 1]);
  const atDurable = watchRead(sim, { fromSeq: 1, strong: true });
  assert.deepEqual([atDurable.watch.next, atDurable.watch.count, atDurable.json], [1, 0, '']);
  const eventual = watchRead(sim, { fromSeq: 0, strong: false });
  assert.deepEqual([eventual.watch.deliverableHead, eventual.watch.next, eventual.watch.count], [3, 3, 3]);
  sim.ack(f, f);
  const after = watchRead(sim, { fromSeq: 1, strong: true });
  assert.deepEqual([after.watch.deliverableHead, after.watch.next, after.watch.count], [3, 3, 2]);
});

test('watchRead: an absent topic answers exists:false', () => {
  const sim = new SimActor();
  const r = watchRead(sim, { fromSeq: 5 });
  assert.deepEqual(r.watch, { exists: false, instanceId: 0, head: 0, deliverableHead: 0, earliest: 1, next: 5, count: 0, tombstone: null });
  assert.equal(r.json, '');
  // And after a delete.
  created(sim, 'memory');
  sim.append({ records: [{ data: 1 }] });
  sim.ackAll(true);
  sim.send({ op: 'deleteTopic', ifEmpty: false } as never);
  sim.ackAll(true);
  assert.equal(watchRead(sim, { fromSeq: 1 }).watch.exists, false);
});

test('watchRead: TTL expiry applies at the read; a later tombstone says `ttl`', () => {
  const sim = new SimActor();
  created(sim, 'memory', { ttl_ms: 1000 });
  sim.append({ records: [{ data: 1 }, { data: 2 }] });
  sim.ackAll(true);
  sim.now += 500;
  sim.append({ records: [{ data: 3 }] });
  sim.now += 700; // 1 and 2 are 1200 ms old, 3 is 700
  const later = watchRead(sim, { fromSeq: 0, first: false });
  assert.deepEqual(JSON.parse(later.watch.tombstone!.json), {
    topic: 't',
    reason: 'ttl',
    gap_from: 1,
    gap_to: 2,
    earliest_seq: 3,
    head_seq: 3,
  });
  assert.deepEqual(
    JSON.parse(later.json).records.map((x: { $seq: number }) => x.$seq),
    [3],
  );
  const first = watchRead(sim, { fromSeq: 1, first: true });
  assert.equal(JSON.parse(first.watch.tombstone!.json).reason, 'from_seq_too_old');
  assert.equal(JSON.parse(first.watch.tombstone!.json).gap_from, 2);
});

test('a push to open streams counts as a read: last_read_ts moves, and only when watched', () => {
  const stateOf = (sim: SimActor) => {
    const id = sim.send({ op: 'state', touch: false } as never);
    return JSON.parse(Buffer.from((sim.replies.get(id) as { json: Uint8Array }).json).toString('utf8') + '}');
  };
  const sim = new SimActor();
  created(sim, 'memory');
  sim.append({ records: [{ data: 1 }] });
  sim.ackAll(); // visible once its seq reservation is durable
  assert.equal(stateOf(sim).head_seq, 1);
  assert.equal(stateOf(sim).last_read_ts, null, 'not watched: no read');
  sim.watched = true;
  sim.now += 5000;
  sim.append({ records: [{ data: 2 }] });
  sim.ackAll();
  assert.equal(stateOf(sim).head_seq, 2);
  assert.equal(stateOf(sim).last_read_ts, sim.now, 'a published batch is a delivery pass');
});

test('watchRead probe: the tombstone and where the next read starts, and no record', () => {
  const sim = new SimActor();
  created(sim, 'memory', { cap_records: 3, discard: 'old' });
  sim.append({ records: Array.from({ length: 10 }, (_, i) => ({ data: i + 1 })) });
  sim.ackAll(true);
  const below = watchRead(sim, { fromSeq: 0, first: true, probe: true });
  assert.equal(JSON.parse(below.watch.tombstone!.json).reason, 'from_seq_too_old');
  assert.equal(below.json, '', 'no record frame');
  assert.deepEqual([below.watch.next, below.watch.count, below.watch.head], [7, 0, 10]);
  const atFloor = watchRead(sim, { fromSeq: 8, first: true, probe: true });
  assert.equal(atFloor.watch.tombstone, null);
  assert.deepEqual([atFloor.watch.next, atFloor.watch.count], [8, 0]);
});
