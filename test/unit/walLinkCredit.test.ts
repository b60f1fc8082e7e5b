// WAL credit on a topic worker (src/worker/walLink.ts): frames count against the credit from the
// moment they are queued, so the requests of one turn (they reach the worker as one message)
// cannot together outrun it before the turn's submission leaves; the credit returns with the
// WAL thread's written ack.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { WalLink, type QueuedFrame, type WalLinkHost } from '../../src/worker/walLink.js';
import type { WalIn } from '../../src/core/messages/wal.js';

const host: WalLinkHost = {
  walAck: () => undefined,
  writeSegment: () => undefined,
  redeliver: () => undefined,
  onReplay: () => undefined,
  walFailed: () => undefined,
};

function frame(actor: object, frameNo: number, bytes: number): QueuedFrame {
  return { actor: actor as QueuedFrame['actor'], frameNo, buf: Buffer.alloc(bytes), durable: false, segment: undefined };
}

test('frames of one turn count against the WAL credit before the turn is submitted', async () => {
  const ch = new MessageChannel();
  const submitted: WalIn[] = [];
  ch.port2.on('message', (m: WalIn) => submitted.push(m));
  const link = new WalLink(ch.port1, 1000, host);
  try {
    const actor = {};
    link.queueFrame(frame(actor, 1, 600));
    assert.equal(link.creditExhausted(), false);
    link.queueFrame(frame(actor, 2, 600));
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

test('appends waiting for credit are redelivered highest effective priority first (G16)', async () => {
  const ch = new MessageChannel();
  const order: number[] = [];
  const link = new WalLink(ch.port1, 1000, { ...host, redeliver: (reqId) => void order.push(reqId) });
  try {
    link.queueFrame(frame({}, 1, 2000));
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
