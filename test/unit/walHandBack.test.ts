// WAL submission buffers handed back (src/topicThread/submitBuffers.ts, src/wal/groupCommit.ts):
// the WAL thread writes only a submission's first `bytes`, hands a written `handBack` buffer
// back in the ack's `spare`, and a topic worker builds later turns in it instead of in a fresh
// allocation. The real GroupCommit on a SimDisk (test/support/walRig.ts) and a real WalLink.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { WalRig, idleLinkHost, linkFrame } from '../support/walRig.js';
import { SubmitBuffers } from '../../src/topicThread/submitBuffers.js';
import { WalLink } from '../../src/topicThread/walLink.js';
import type { WalIn, WalOut } from '../../src/protocol/messages/wal.js';

test('the WAL writes only the submitted bytes of a buffer and hands a written one back', async () => {
  const rig = new WalRig({ fileBytes: 1 << 20 });
  rig.start();
  try {
    const first = rig.submitInSpare(0, [1, 2], 64 * 1024);
    await rig.until('written', () => rig.durable() >= first);
    const spare = rig.acks().flatMap((a) => a.spare ?? []);
    assert.equal(spare.length, 1, rig.diag());
    assert.equal(spare[0]!.byteLength, 64 * 1024, 'the whole buffer comes back');
    const plain = rig.submit(0, [3]);
    await rig.until('written', () => rig.durable() >= plain);
    assert.equal(rig.acks().flatMap((a) => a.spare ?? []).length, 1, 'a submission without handBack stays with the WAL');
    // The junk after the frames never reached the log: it reads back as exactly the frames.
    assert.deepEqual(await rig.scan(), [-1, 1, 2, 3]);
  } finally {
    rig.close();
  }
});

test('submission buffers: powers of two from 64 KiB, the smallest spare that fits, a few kept', () => {
  const b = new SubmitBuffers();
  const small = b.take(1000);
  assert.equal(small.byteLength, 64 * 1024);
  const mid = b.take(70 * 1024);
  assert.equal(mid.byteLength, 128 * 1024);
  b.give([mid, small]);
  assert.equal(b.take(10), small, 'the smallest that fits');
  assert.equal(b.take(100 * 1024), mid);
  assert.equal(b.take(100 * 1024).byteLength, 128 * 1024, 'none left: a new one');
  b.give([new ArrayBuffer(8 * 1024 * 1024)]);
  assert.equal(b.count, 0, 'a huge one is not kept');
  b.give(Array.from({ length: 12 }, () => new ArrayBuffer(64 * 1024)));
  assert.equal(b.count, 8);
});

test('a topic worker builds its next turn in the buffer the WAL handed back', async () => {
  const ch = new MessageChannel();
  const submitted: Extract<WalIn, { t: 'submit' }>[] = [];
  ch.port2.on('message', (m: WalIn) => {
    if (m.t === 'submit') submitted.push(m);
  });
  const link = new WalLink(ch.port1, 0, idleLinkHost);
  const turn = async (n: number) => {
    link.queueFrame(linkFrame(n, 3000));
    while (submitted.length < n) await new Promise((r) => setTimeout(r, 2));
    return submitted[n - 1]!;
  };
  try {
    const one = await turn(1);
    assert.equal(one.handBack, true);
    assert.equal(one.bytes, 3000);
    assert.deepEqual(Buffer.from(one.buf, 0, 3000), Buffer.alloc(3000, 1));
    ch.port2.postMessage({ t: 'ack', writtenThrough: 1, durableThrough: 1, spare: [one.buf] } satisfies WalOut, [one.buf]);
    while (link.buffers.count === 0) await new Promise((r) => setTimeout(r, 2));
    const two = await turn(2);
    assert.equal(link.buffers.count, 0, 'the spare was taken for the next turn');
    assert.equal(two.buf.byteLength, 64 * 1024);
    assert.deepEqual(Buffer.from(two.buf, 0, two.bytes), Buffer.alloc(3000, 2));
  } finally {
    ch.port1.close();
  }
});
