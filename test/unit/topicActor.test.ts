// TopicActor unit tests through a simulated host: ack points per durability class, seq
// reservations, idempotency, control-frame gating, long-poll timers, delete atomicity, and the
// deletes a full disk lets through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimActor } from '../support/simActor.js';
import { defaultConfig } from '../../src/protocol/topicConfig.js';
import { FrameType } from '../../src/format/constants.js';
import type { DiffRequest } from '../../src/protocol/messages/rpc.js';

function cfg(durability: 'ephemeral' | 'memory' | 'disk' | 'fsync') {
  return { ...defaultConfig(), durability, durable: durability === 'fsync' };
}

function created(sim: SimActor, durability: 'ephemeral' | 'memory' | 'disk' | 'fsync') {
  const id = sim.send({ op: 'put', config: cfg(durability) } as never);
  assert.equal(sim.reply(id), undefined, 'create waits for its durable frame');
  sim.ackAll();
  assert.equal(sim.reply(id).status, 201);
}

/** A diff of the whole page from `fromSeq`, parked up to `waitMs` (0: answered at once). */
function diffOf(fromSeq: number, waitMs: number, extra: Partial<DiffRequest> = {}): never {
  const req: Omit<DiffRequest, 'topic'> = {
    op: 'diff',
    fromSeq,
    limit: 0,
    nodes: null,
    includeTags: false,
    includeMeta: true,
    waitMs,
    maxBatchBytes: 0,
    ...extra,
  };
  return req as never;
}

test('disk: visible and acked when written, after the reservation is durable', () => {
  const sim = new SimActor();
  created(sim, 'disk');
  const id = sim.append({ records: [{ data: 1 }, { data: 2 }] });
  // Frames: the append, then a SEQ_RESERVE (durable). Nothing visible yet.
  assert.equal(sim.reply(id), undefined);
  const appendFrame = sim.frames.at(-2)!;
  const reserveFrame = sim.frames.at(-1)!;
  assert.equal(reserveFrame.durable, true);
  assert.equal(appendFrame.durable, false);
  sim.ack(appendFrame.frameNo, appendFrame.frameNo - 1);
  assert.equal(sim.reply(id), undefined, 'written but the reservation is not durable');
  sim.ack(reserveFrame.frameNo, reserveFrame.frameNo);
  const r = sim.reply(id);
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.seqs, [1, 2]);
  // The next append sits under the durable reservation: written is enough.
  const id2 = sim.append({ records: [{ data: 3 }] });
  sim.ack(sim.frames.at(-1)!.frameNo, reserveFrame.frameNo);
  assert.equal(sim.reply(id2).body.first_seq, 3);
});

test('fsync: acked only when durable; no reservation needed', () => {
  const sim = new SimActor();
  created(sim, 'fsync');
  const before = sim.frames.length;
  const id = sim.append({ records: [{ data: 'a' }] });
  assert.equal(sim.frames.length, before + 1, 'only the append frame');
  const f = sim.frames.at(-1)!;
  assert.equal(f.durable, true);
  sim.ack(f.frameNo, f.frameNo - 1);
  assert.equal(sim.reply(id), undefined, 'written is not enough for fsync');
  sim.ack(f.frameNo, f.frameNo);
  assert.equal(sim.reply(id).status, 200);
});

test('memory and ephemeral: acked at once once the reservation is durable', () => {
  for (const cls of ['memory', 'ephemeral'] as const) {
    const sim = new SimActor();
    created(sim, cls);
    const id = sim.append({ records: [{ data: 'a' }] });
    const frames = sim.frames.slice(-2).map((f) => f.durable);
    if (cls === 'ephemeral') assert.deepEqual(sim.frames.at(-1)!.durable, true, 'ephemeral writes only the reservation');
    else assert.deepEqual(frames, [false, true]);
    sim.ackAll(true);
    assert.equal(sim.reply(id).status, 200);
    const id2 = sim.append({ records: [{ data: 'b' }] });
    assert.equal(sim.reply(id2).status, 200, `${cls}: ack on enqueue under a durable reservation`);
  }
});

test("an append's frame is lazy only where nothing waits for it: a memory topic's", () => {
  for (const [cls, lazy, durable] of [
    ['memory', true, false],
    ['disk', false, false],
    ['fsync', false, true],
  ] as const) {
    const sim = new SimActor();
    created(sim, cls);
    const before = sim.frames.length;
    sim.append({ records: [{ data: 1 }] });
    const append = sim.frames.slice(before).find((f) => f.frame.readUInt8(8) === FrameType.APPEND);
    assert.ok(append, `${cls}: an APPEND frame`);
    assert.equal(append.lazy, lazy, `${cls}: lazy`);
    assert.equal(append.durable, durable, `${cls}: durable`);
    assert.ok(append.segment, `${cls}: it still goes to its segment once written`);
  }
});

test('batches become visible in seq order even when acks arrive for a later class first', () => {
  const sim = new SimActor();
  created(sim, 'fsync');
  const a = sim.append({ records: [{ data: 'a' }] });
  const fa = sim.frames.at(-1)!;
  // Reconfigure to memory: the later batch must not overtake the pending fsync batch.
  sim.send({ op: 'put', config: cfg('memory') } as never);
  sim.ack(fa.frameNo, fa.frameNo - 1);
  const b = sim.append({ records: [{ data: 'b' }] });
  sim.ack(sim.frames.at(-1)!.frameNo, fa.frameNo - 1);
  assert.equal(sim.reply(a), undefined);
  assert.equal(sim.reply(b), undefined, 'b waits behind a');
  sim.ackAll(true);
  assert.equal(sim.reply(a).body.first_seq, 1);
  assert.equal(sim.reply(b).body.first_seq, 2);
});

test('idempotency: a retry gets the original seqs, deduped, nothing appended', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  sim.ackAll();
  const a = sim.append({ records: [{ data: 1 }, { data: 2 }], idempotency_key: 'k' });
  sim.ackAll();
  const frames = sim.frames.length;
  const b = sim.append({ records: [{ data: 9 }] }, true, 'k');
  assert.equal(sim.frames.length, frames, 'no frame for a deduped append');
  assert.deepEqual(sim.reply(b).body.seqs, sim.reply(a).body.seqs);
  assert.equal(sim.reply(b).body.deduped, true);
  // Past the window the key is forgotten.
  sim.now += 120_001;
  const c = sim.append({ records: [{ data: 9 }], idempotency_key: 'k' });
  sim.ackAll();
  assert.equal(sim.reply(c).body.deduped, false);
  assert.equal(sim.reply(c).body.first_seq, 3);
});

test('long-poll diff parks with a timer and wakes on visibility', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  const d = sim.send(diffOf(0, 5000));
  assert.equal(sim.reply(d), undefined);
  assert.equal([...sim.timers.values()][0], sim.now + 5000);
  sim.append({ records: [{ data: 'x' }] });
  sim.ackAll();
  const r = sim.reply(d);
  assert.equal(r.body.records.length, 1);
  assert.equal(sim.timers.size, 0, 'timer cancelled');
  // A parked diff with nothing to read answers empty when its timer fires.
  const d2 = sim.send(diffOf(1, 100));
  const [timerId] = sim.timers.keys();
  sim.actor.onTimer(sim.ctx(), timerId!);
  assert.deepEqual(sim.reply(d2).body.records, []);
  assert.equal(sim.reply(d2).body.caught_up, true);
});

test('cancelWait: a parked long-poll whose client left answers at once and drops its timer; others stay parked', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  sim.append({ records: [{ data: 1 }] });
  sim.ackAll();
  const poll = (waitId: number) => sim.send(diffOf(1, 30_000, { waitId }));
  const gone = poll(7);
  const stays = poll(8);
  assert.equal(sim.timers.size, 1, 'one timer for all the long-polls of a topic');
  const c = sim.send({ op: 'cancelWait', waitId: 7 } as never);
  assert.equal(sim.reply(c).status, 200);
  assert.deepEqual(sim.reply(gone).body.records, [], 'answered now, with what it has');
  assert.equal(sim.reply(stays), undefined, 'the other waiter is still parked');
  assert.equal(sim.timers.size, 1, "the other waiter's deadline is still armed");
  // An unknown or already answered id is a no-op, answered ok.
  assert.equal(sim.reply(sim.send({ op: 'cancelWait', waitId: 7 } as never)).status, 200);
  sim.append({ records: [{ data: 2 }] });
  sim.ackAll();
  assert.equal(sim.reply(stays).body.records.length, 1);
  assert.equal(sim.timers.size, 0);
});

test('cancelWait finds its waiter by its waitId, without a scan of the parked table', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  sim.append({ records: [{ data: 1 }] });
  sim.ackAll();
  const polls = Array.from({ length: 100 }, (_, i) => sim.send(diffOf(1, 30_000, { waitId: 1000 + i })));
  // A diff without a waitId, and one repeating a parked waitId, park under keys of their own.
  const anonymous = sim.send(diffOf(1, 30_000));
  const repeat = sim.send(diffOf(1, 30_000, { waitId: 1000 }));
  // White box: the parked table refuses to be iterated, so a cancel that scans it throws.
  const parked = (sim.actor.reads as unknown as { parked: Map<number, unknown> }).parked;
  assert.equal(parked.size, 102);
  const scan = () => assert.fail('cancel scanned the parked table');
  Object.assign(parked, { [Symbol.iterator]: scan, entries: scan, values: scan, forEach: scan });
  for (const i of [57, 3, 99]) assert.equal(sim.reply(sim.send({ op: 'cancelWait', waitId: 1000 + i } as never)).status, 200);
  for (const [i, p] of polls.entries()) {
    if ([57, 3, 99].includes(i)) assert.deepEqual(sim.reply(p).body.records, [], `waiter ${i} answered at its cancel`);
    else assert.equal(sim.reply(p), undefined, `waiter ${i} still parked`);
  }
  assert.equal(parked.size, 99);
  assert.equal(sim.reply(anonymous), undefined);
  assert.equal(sim.reply(repeat), undefined, 'a repeated waitId did not overwrite (and lose) the first waiter');
  delete (parked as unknown as Record<symbol | string, unknown>)[Symbol.iterator];
  for (const k of ['entries', 'values', 'forEach']) delete (parked as unknown as Record<string, unknown>)[k];
  sim.append({ records: [{ data: 2 }] });
  sim.ackAll();
  for (const p of [...polls.filter((_, i) => ![57, 3, 99].includes(i)), anonymous, repeat])
    assert.equal(sim.reply(p).body.records.length, 1);
  assert.equal(sim.timers.size, 0);
});

test('long-polls share one timer armed for the earliest deadline; each answers at its own', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  sim.append({ records: [{ data: 1 }] });
  sim.ackAll();
  const poll = (waitMs: number) => sim.send(diffOf(1, waitMs));
  /** The host forgets a timer when it fires. */
  const fire = () => {
    const [id] = sim.timers.keys();
    sim.timers.delete(id!);
    sim.actor.onTimer(sim.ctx(), id!);
  };
  const t0 = sim.now;
  const late = poll(3000);
  const early = poll(1000);
  const same = poll(1000);
  assert.deepEqual([...sim.timers.values()], [t0 + 1000], 're-armed for the earlier deadline');
  sim.now = t0 + 1000;
  fire();
  assert.equal(sim.reply(early).body.caught_up, true);
  assert.equal(sim.reply(same).body.caught_up, true);
  assert.equal(sim.reply(late), undefined, 'not due yet');
  assert.deepEqual([...sim.timers.values()], [t0 + 3000]);
  sim.now = t0 + 3000;
  fire();
  assert.deepEqual(sim.reply(late).body.records, []);
  assert.equal(sim.timers.size, 0, 'nothing parked, no timer');
});

test('$ts never decreases within a topic even if the clock steps back', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  sim.ackAll();
  sim.append({ records: [{ data: 1 }] });
  sim.now -= 10_000;
  sim.append({ records: [{ data: 2 }] });
  sim.ackAll();
  const d = sim.send(diffOf(0, 0));
  const [a, b] = sim.reply(d).body.records;
  assert.ok(b.$ts >= a.$ts);
});

test('delete is atomic: later reads see an absent topic and a recreate starts at seq 1', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  sim.append({ records: [{ data: 1 }] });
  sim.ackAll();
  const del = sim.send({ op: 'deleteTopic', ifEmpty: false } as never);
  const st = sim.send({ op: 'state', touch: false } as never);
  assert.equal(sim.reply(st).error.code, 'topic_not_found');
  assert.equal(sim.reply(del), undefined, 'delete reply waits for its durable frame');
  sim.ackAll();
  assert.equal(sim.reply(del).body.deleted, true);
  const a = sim.append({ records: [{ data: 'new' }] });
  sim.ackAll();
  assert.equal(sim.reply(a).status, 201);
  assert.equal(sim.reply(a).body.first_seq, 1);
});

test('on a full disk a record delete and a topic delete go through while the WAL has room; other writes are refused', () => {
  const sim = new SimActor();
  created(sim, 'fsync');
  const a = sim.append({ records: [{ data: 1 }, { data: 2 }, { data: 3 }] });
  sim.ackAll();
  assert.equal(sim.reply(a).status, 200);
  sim.storageState = 1; // FULL
  const isDiskFull = (id: number, what: string) => {
    const r = sim.reply(id);
    assert.equal(r?.error?.status, 429, `${what}: ${JSON.stringify(r)}`);
    assert.deepEqual(r.error.detail, { limit: 'disk_space' }, what);
  };
  // No room in the WAL: refused like any write, nothing applied, no frame.
  sim.walRoom = false;
  const frames = sim.frames.length;
  isDiskFull(sim.send({ op: 'deleteRecords', beforeSeq: 2, match: null } as never), 'record delete without room');
  isDiskFull(sim.send({ op: 'deleteTopic', ifEmpty: false } as never), 'topic delete without room');
  assert.equal(sim.frames.length, frames);
  assert.equal(sim.reply(sim.send({ op: 'state', touch: false } as never)).body.count, 3);
  // Room: both go through, each one frame, answered at the class's ack point.
  sim.walRoom = true;
  isDiskFull(sim.append({ records: [{ data: 4 }] }), 'an append still');
  isDiskFull(sim.send({ op: 'put', config: { ...cfg('fsync'), cap_records: 1 } } as never), 'a config change still');
  const rd = sim.send({ op: 'deleteRecords', beforeSeq: 2, match: null } as never);
  assert.equal(sim.frames.at(-1)!.frame.readUInt8(8), FrameType.DELETE);
  sim.ackAll();
  assert.equal(sim.reply(rd).body.deleted, 1);
  // A failed disk refuses them as every write.
  sim.storageState = 2;
  assert.equal(sim.reply(sim.send({ op: 'deleteTopic', ifEmpty: false } as never)).error.status, 500);
  sim.storageState = 1;
  const del = sim.send({ op: 'deleteTopic', ifEmpty: false } as never);
  assert.equal(sim.frames.at(-1)!.frame.readUInt8(8), FrameType.TOPIC_DELETE);
  assert.equal(sim.reply(del), undefined, 'the reply waits for the durable frame');
  sim.ackAll();
  assert.equal(sim.reply(del).body.deleted, true);
});

// An ephemeral topic logs nothing, unless its segments hold records from an earlier class: they
// come back after a crash, so a delete of them is logged and answered once written, as on `disk`.
test('ephemeral: a delete is logged only when records stored under another class may be live', () => {
  const born = new SimActor();
  created(born, 'ephemeral');
  born.append({ records: [{ data: 1 }, { data: 2 }] });
  born.ackAll();
  const frames = born.frames.length;
  const d = born.send({ op: 'deleteRecords', beforeSeq: 2, match: null } as never);
  assert.equal(born.reply(d).body.deleted, 1, 'answered at once');
  assert.equal(born.frames.length, frames, 'no frame for a topic ephemeral from its creation');

  const turned = new SimActor();
  created(turned, 'disk');
  turned.append({ records: [{ data: 1 }, { data: 2 }] });
  turned.ackAll();
  const put = turned.send({ op: 'put', config: cfg('ephemeral') } as never);
  turned.ackAll();
  assert.equal(turned.reply(put).status, 200);
  const rd = turned.send({ op: 'deleteRecords', beforeSeq: 2, match: null } as never);
  const last = turned.frames.at(-1)!;
  assert.equal(last.frame.readUInt8(8), FrameType.DELETE, 'the delete is logged');
  assert.equal(last.durable, false);
  assert.equal(turned.reply(rd), undefined, 'answered once written');
  turned.ackAll();
  assert.equal(turned.reply(rd).body.deleted, 1);
});

test('invalid bodies are refused before anything is assigned', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  const frames = sim.frames.length;
  const r = sim.append({ records: [{ data: 1 }, { nodata: true }] });
  assert.equal(sim.reply(r).error.code, 'invalid_request');
  assert.equal(sim.frames.length, frames);
  const ok = sim.append({ records: [{ data: 1 }] });
  sim.ackAll();
  assert.equal(sim.reply(ok).body.first_seq, 1);
});

test('WAL credit exhausted: 429 with nothing applied, or deferred with disable_backpressure', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  sim.walCreditExhausted = true;
  const frames = sim.frames.length;
  const r = sim.append({ records: [{ data: 1 }] });
  const err = sim.reply(r).error;
  assert.equal(err.code, 'throttled');
  assert.equal(err.status, 429);
  assert.ok(err.detail.retry_after_ms > 0);
  assert.equal(sim.frames.length, frames, 'nothing applied');
  const d = sim.append({ records: [{ data: 1 }], disable_backpressure: true });
  assert.equal(sim.reply(d), undefined);
  assert.deepEqual(sim.deferred, [d]);
});

test('an idempotent retry of an fsync batch still in flight is answered once the batch is fsynced, not before', () => {
  const sim = new SimActor();
  created(sim, 'fsync');
  const a = sim.append({ records: [{ data: 1 }, { data: 2 }], idempotency_key: 'k' });
  const retry = sim.append({ records: [{ data: 1 }, { data: 2 }], idempotency_key: 'k' });
  assert.equal(sim.reply(retry), undefined, 'no answer while the batch is in flight');
  sim.ackAll(false); // written, not yet fsynced
  assert.equal(sim.reply(a), undefined);
  assert.equal(sim.reply(retry), undefined, 'no answer before the fsync');
  sim.ackAll(true);
  const first = sim.reply(a).body;
  const again = sim.reply(retry).body;
  assert.deepEqual([again.deduped, again.seqs, again.count, again.last_seq], [true, first.seqs, first.count, first.last_seq]);
});

test('an idempotent retry is answered under WAL pressure; a 404 wins over pressure', () => {
  const sim = new SimActor();
  created(sim, 'memory');
  const a = sim.append({ records: [{ data: 1 }], idempotency_key: 'k' });
  sim.ackAll();
  sim.walCreditExhausted = true;
  const retry = sim.append({ records: [{ data: 1 }], idempotency_key: 'k' });
  assert.equal(sim.reply(retry).body.deduped, true);
  assert.deepEqual(sim.reply(retry).body.seqs, sim.reply(a).body.seqs);
  const other = new SimActor('absent');
  other.walCreditExhausted = true;
  const r = other.append({ records: [{ data: 1 }], create: false });
  assert.equal(other.reply(r).error.code, 'topic_not_found');
  const r2 = other.append({ records: [{ data: 1 }] });
  assert.equal(other.reply(r2).error.code, 'throttled');
  assert.equal(other.frames.length, 0, 'a refused append creates nothing');
});

test("a small append's frame shares Node's buffer pool unless the topic is ephemeral", () => {
  // A written topic's texts leave the hot cache oldest first, so neighbouring frames of a pool
  // slab go together; an ephemeral topic's live records could each hold a slab for long.
  const disk = new SimActor();
  created(disk, 'disk');
  disk.append({ records: [{ data: 1 }] });
  const frame = disk.frames.at(-2)!.frame;
  assert.equal(frame.buffer.byteLength, Buffer.poolSize, 'a slice of the pool');
  assert.equal(disk.actor.current!.index.text(1)!.buf, frame, 'the hot text is the frame');

  const eph = new SimActor();
  created(eph, 'ephemeral');
  eph.append({ records: [{ data: 1 }] });
  const text = eph.actor.current!.index.text(1)!.buf;
  assert.equal(text.byteOffset, 0);
  assert.equal(text.buffer.byteLength, text.length, 'an ArrayBuffer of its own');
});
