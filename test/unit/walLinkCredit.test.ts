// WAL credit on a topic worker (src/topicThread/walLink.ts): frames count against the credit from the
// moment they are queued, so the requests of one turn (they reach the worker as one message)
// cannot together outrun it before the turn's submission leaves; the credit returns with the
// WAL thread's written ack. Cumulative acks step only the actors with newly written or durable
// frames, and each frame goes to its segment once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { WalLink, type QueuedFrame } from '../../src/topicThread/walLink.js';
import { idleLinkHost, linkFrame } from '../support/walRig.js';
import type { WalIn } from '../../src/protocol/messages/wal.js';

test('frames of one turn count against the WAL credit before the turn is submitted', async () => {
  const ch = new MessageChannel();
  const submitted: WalIn[] = [];
  ch.port2.on('message', (m: WalIn) => submitted.push(m));
  const link = new WalLink(ch.port1, 1000, idleLinkHost);
  try {
    const actor = {};
    link.queueFrame(linkFrame(1, 600, actor));
    assert.equal(link.creditExhausted(), false);
    link.queueFrame(linkFrame(2, 600, actor));
    assert.equal(link.creditExhausted(), true, 'exhausted within the turn, before any submission');
    assert.equal(submitted.length, 0);
    while (submitted.length === 0) await new Promise((r) => setTimeout(r, 5));
    assert.equal(submitted.length, 1, 'one submission for the turn');
    assert.equal(link.creditExhausted(), true, 'still exhausted until written');
    ch.port2.postMessage({ t: 'ack', writtenThrough: 1, durableThrough: 0 });
    while (link.creditExhausted()) await new Promise((r) => setTimeout(r, 5));
    assert.equal(link.inflightBytes, 0, 'the written ack returns the whole credit');
  } finally {
    ch.port1.close();
  }
});

test('appends waiting for credit are redelivered highest effective priority first (docs/ARCHITECTURE.md "Admission")', async () => {
  const ch = new MessageChannel();
  const order: number[] = [];
  const link = new WalLink(ch.port1, 1000, { ...idleLinkHost, redeliver: (reqId) => void order.push(reqId) });
  try {
    link.queueFrame(linkFrame(1, 2000, {}));
    assert.equal(link.creditExhausted(), true);
    const req = { op: 'append', topic: 't', body: new Uint8Array(), returnSeqs: true, headerIdemKey: undefined } as const;
    link.defer(1, req, -1000);
    link.defer(2, req, 0);
    link.defer(3, req, 1000);
    link.defer(4, req, 0);
    await new Promise((r) => setTimeout(r, 20)); // the submission leaves
    ch.port2.postMessage({ t: 'ack', writtenThrough: 1, durableThrough: 0 });
    while (order.length < 4) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(order, [3, 2, 4, 1], 'by priority, then arrival');
  } finally {
    ch.port1.close();
  }
});

test('acks step only actors with newly written or durable frames, each frame goes to its segment once', async () => {
  const ch = new MessageChannel();
  const acks: [string, number, number][] = [];
  const segments: number[] = [];
  const link = new WalLink(ch.port1, 0, {
    ...idleLinkHost,
    walAck: (actor, w, d) => void acks.push([(actor as unknown as { name: string }).name, w, d]),
    writeSegment: (place) => void segments.push(place.offset),
  });
  const submitted: WalIn[] = [];
  ch.port2.on('message', (m: WalIn) => submitted.push(m));
  const a = { name: 'a' };
  const b = { name: 'b' };
  const place = (offset: number) => ({ topicId: 1, segFirstSeq: 1, offset });
  const turn = async (frames: QueuedFrame[]) => {
    const n = submitted.length;
    for (const f of frames) link.queueFrame(f);
    while (submitted.length === n) await new Promise((r) => setTimeout(r, 2));
  };
  const ack = async (writtenThrough: number, durableThrough: number) => {
    const n = acks.length;
    ch.port2.postMessage({ t: 'ack', writtenThrough, durableThrough });
    // An ack that steps nobody leaves nothing to wait for: give it time to arrive.
    for (let i = 0; i < 20 && acks.length === n; i++) await new Promise((r) => setTimeout(r, 2));
    return acks.splice(n);
  };
  try {
    await turn([
      { ...linkFrame(1, 10, a), segment: place(1) },
      { ...linkFrame(1, 10, b), segment: place(2) },
    ]); // seq 1
    await turn([{ ...linkFrame(2, 10, a), segment: place(3) }]); // seq 2
    await turn([{ ...linkFrame(2, 10, b), segment: place(4) }]); // seq 3
    assert.deepEqual(await ack(1, 0), [
      ['a', 1, 0],
      ['b', 1, 0],
    ]);
    assert.deepEqual(await ack(2, 0), [['a', 2, 0]], 'b has nothing new: not stepped');
    assert.deepEqual(
      await ack(2, 1),
      [
        ['a', 1, 1],
        ['b', 1, 1],
      ],
      'seq 1 became durable',
    );
    assert.deepEqual(
      await ack(3, 3),
      [
        ['b', 2, 2],
        ['a', 2, 2],
      ],
      'seq 3 written, seqs 2 and 3 durable',
    );
    assert.deepEqual(await ack(3, 3), [], 'a repeated ack steps nobody');
    assert.deepEqual(segments, [1, 2, 3, 4], 'every frame went to its segment once, in order');
    assert.equal(link.inflightBytes, 0);
    await link.whenIdle(); // everything durable: resolves
  } finally {
    ch.port1.close();
  }
});

test('a frame keeps its timing until it is durable, past the compaction of many durable frames', async () => {
  const ch = new MessageChannel();
  const link = new WalLink(ch.port1, 0, idleLinkHost);
  const submitted: WalIn[] = [];
  ch.port2.on('message', (m: WalIn) => submitted.push(m));
  const a = { name: 'a' } as unknown as QueuedFrame['actor'];
  const b = { name: 'b' } as unknown as QueuedFrame['actor'];
  const acked = async (writtenThrough: number, durableThrough: number) => {
    ch.port2.postMessage({ t: 'ack', writtenThrough, durableThrough });
    await new Promise((r) => setTimeout(r, 10));
  };
  const timed = (actor: QueuedFrame['actor'], frameNo: number) => link.perf(actor, 0, frameNo, false)?.wal_append_ms !== undefined;
  try {
    // 300 turns of one frame of `a` each (a submission per turn), with a frame of `b` every 10th.
    for (let i = 1; i <= 300; i++) {
      link.queueFrame(linkFrame(i, 10, a));
      if (i % 10 === 0) link.queueFrame(linkFrame(i / 10, 10, b));
      while (submitted.length < i) await new Promise((r) => setImmediate(r));
    }
    assert.ok(timed(a, 1) && timed(a, 300) && timed(b, 30));
    // Durable in steps: every frame up to the step loses its timing, every later one keeps it.
    for (const through of [1, 63, 64, 65, 130, 200, 299]) {
      await acked(through, through);
      for (const no of [through - 1, through, through + 1, 300]) {
        if (no >= 1) assert.equal(timed(a, no), no > through, `a's frame ${no} after seq ${through} became durable`);
      }
      assert.equal(timed(b, 30), true);
      assert.equal(timed(b, Math.floor(through / 10) || 1), through < 10, `b after seq ${through}`);
    }
    assert.equal(timed(a, 301), false, 'a frame never queued has no timing');
    await acked(300, 300);
    assert.equal(timed(a, 300), false);
    assert.equal(timed(b, 30), false);
    await link.whenIdle();
  } finally {
    ch.port1.close();
  }
});
