// Redrive across a crash at every point (docs/QUEUES.md "Redrive"), on a SimHost: the real queue
// and dead-letter actors, a simulated WAL whose writes and fsyncs and the peer messages between
// the two actors happen one at a time. Two redrives (the second waits for the first: two
// batches) are driven step by step (a peer message, one frame written, an fsync, in a fixed
// order); for every step k a fresh world replays the first k steps, crashes (SIGKILL: written
// frames survive; power loss: durable frames and a prefix of the written ones; or a checkpoint
// and then SIGKILL, so that recovery replays nothing of the redrive; or SIGKILL and a new
// redrive whose read overtakes the deletes recovery asks for again), recovers
// through the real code, lets everything settle (the queue asks again for the deletes it may not
// have seen), and checks that every job is in exactly one of the two topics, and that nothing is
// left pending. For every class pair of fsync and disk, and with a checkpoint first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimHost } from '../support/simHost.js';
import { resolveConfig } from '../../src/protocol/topicConfig.js';
import type { TopicRequest, TopicResult } from '../../src/protocol/messages/rpc.js';

const Q = 'q';
const DLQ = 'q.dlq';
const JOBS = 7;

function body(r: TopicResult | undefined): any {
  assert.ok(r?.ok, `unexpected ${JSON.stringify(r)}`);
  return JSON.parse(Buffer.from(r.json).toString('utf8') + '}');
}

function call(sim: SimHost, req: TopicRequest): any {
  const id = sim.request(req);
  settle(sim);
  const r = sim.replies.get(id);
  sim.replies.delete(id);
  return body(r);
}

/** Everything in flight happens: peer messages, WAL writes and fsyncs, due timers. */
function settle(sim: SimHost): void {
  for (let i = 0; i < 1000; i++) {
    sim.flushAll();
    if (sim.deliverPeer()) continue;
    const due = sim.nextTimerAtMs();
    if (due !== undefined && due <= sim.nowMs + 5000) {
      sim.advance(Math.max(0, due - sim.nowMs));
      continue;
    }
    if (sim.queuedFrames === 0) return;
  }
  throw new Error('the world does not settle');
}

/** The data ids a diff of `topic` reads (a read answers at once: nothing else moves meanwhile). */
function ids(sim: SimHost, topic: string): number[] {
  if (!sim.actor(topic).current) return [];
  const out: number[] = [];
  for (let from = 0; ;) {
    const id = sim.request({
      op: 'diff',
      topic,
      fromSeq: from,
      limit: 1000,
      nodes: null,
      includeTags: false,
      includeMeta: false,
      waitMs: 0,
      maxBatchBytes: 8 * 1024 * 1024,
    });
    const d = body(sim.replies.get(id));
    sim.replies.delete(id);
    out.push(...(d.records as { data: { id: number } }[]).map((r) => r.data.id));
    if (d.caught_up) return out;
    from = d.next_from_seq;
  }
}

/** A queue whose jobs are all in its dead-letter topic (termed), ready to be redriven. */
function world(qClass: string, dlqClass: string, checkpoint: boolean): SimHost {
  const sim = new SimHost({ seed: 'redrive-crash', maxLimit: 1000, segmentBytes: 64 * 1024 * 1024, maxTopics: 0 });
  for (const [name, cfg] of [
    [DLQ, { durability: dlqClass }],
    [Q, { type: 'queue', durability: qClass, lease_ms: 600_000, dead_letter: DLQ }],
  ] as const) {
    const r = resolveConfig(name, cfg);
    assert.ok(r.ok);
    call(sim, { op: 'put', topic: name, config: r.config });
  }
  const records = Array.from({ length: JOBS }, (_, id) => ({ data: { id }, meta: { m: id } }));
  call(sim, { op: 'append', topic: Q, body: Buffer.from(JSON.stringify({ records })), returnSeqs: false, headerIdemKey: undefined });
  const claimed = call(sim, { op: 'claim', topic: Q, node: 'w', max: JOBS, leaseMs: null });
  assert.equal(claimed.count, JOBS);
  const t = call(sim, {
    op: 'term',
    topic: Q,
    node: 'w',
    seqs: claimed.claimed.map((j: { $seq: number }) => j.$seq),
    leaseIds: null,
    reason: null,
  });
  assert.equal(t.terminated, JOBS);
  if (checkpoint) sim.takeCheckpoint();
  return sim;
}

type Step = 'peer' | 'write' | 'sync';

/** One step of the redrive in flight, in a fixed order; undefined when nothing is left to do. */
function step(sim: SimHost): Step | undefined {
  if (sim.deliverPeer()) return 'peer';
  if (sim.queuedFrames > 0) {
    sim.writeFrames(1);
    return 'write';
  }
  const before = sim.frames.filter((f) => f.state === 'written').length;
  if (before > 0) {
    sim.syncFrames();
    return 'sync';
  }
  return undefined;
}

/** Two redrives at once: 3 jobs, then the rest (the second waits for the first). */
function startRedrive(sim: SimHost): number[] {
  return [3, 10_000].map((max) => sim.request({ op: 'redrive', topic: Q, from: null, seqs: null, match: null, max, prefixes: null }));
}

for (const [qClass, dlqClass] of [
  ['fsync', 'fsync'],
  ['disk', 'fsync'],
  ['fsync', 'disk'],
  ['disk', 'disk'],
]) {
  for (const checkpoint of qClass === dlqClass ? [false, true] : [false]) {
    test(`a crash at any step of a redrive loses no job and copies none (${qClass} queue, ${dlqClass} dead-letter topic${checkpoint ? ', checkpoint first' : ''})`, () => {
      // The whole redrive, to count its steps and check its answer.
      const sim = world(qClass, dlqClass, checkpoint);
      const [first, second] = startRedrive(sim);
      let steps = 0;
      while (step(sim) !== undefined) steps++;
      assert.equal(body(sim.replies.get(first!)).redriven, 3);
      assert.equal(body(sim.replies.get(second!)).redriven, JOBS - 3);
      assert.deepEqual(
        ids(sim, Q).sort((x, y) => x - y),
        [...Array(JOBS).keys()],
      );
      assert.deepEqual(ids(sim, DLQ), []);
      assert.ok(steps > 10, `${steps} steps`);
      let midway = 0;
      let reconciled = 0;
      for (let k = 0; k <= steps; k++) {
        for (const [mode, keep, cut, again] of [
          ['kill', 0, false, false],
          ['power', 1, false, false],
          ['kill', 0, true, false],
          ['kill', 0, false, true],
        ] as const) {
          const w = world(qClass, dlqClass, checkpoint);
          startRedrive(w);
          for (let i = 0; i < k; i++) step(w);
          const before = ids(w, Q).length;
          // A checkpoint right before the crash: what is pending must come from the snapshot.
          if (cut) w.takeCheckpoint();
          w.crash(mode, keep);
          if (w.actor(Q).current!.queue!.redrivePending.size > 0) reconciled++;
          if (again) {
            // A new redrive whose read reaches the dead-letter topic before the deletes recovery
            // asked for again: it must not copy the records the queue already holds.
            startRedrive(w);
            w.peers.reverse();
          }
          settle(w);
          const inQ = ids(w, Q);
          const inD = ids(w, DLQ);
          const all = [...inQ, ...inD].sort((x, y) => x - y);
          assert.deepEqual(
            all,
            [...Array(JOBS).keys()],
            `after ${k} of ${steps} steps and a ${cut ? 'checkpoint and a ' : ''}${mode} crash${again ? ' and a redrive' : ''}: queue ${JSON.stringify(inQ)}, dead-letter topic ${JSON.stringify(inD)} (the queue showed ${before} before)`,
          );
          if (inQ.length > 0 && inD.length > 0) midway++;
          assert.equal(w.actor(Q).current!.queue!.redrivePending.size, 0, 'nothing left pending');
        }
      }
      assert.ok(midway > 0, 'some crashes leave the redrives half done');
      assert.ok(reconciled > 0, "some crashes come between a batch's append and its delete");
    });
  }
}
