// Lazy WAL frames (src/topicThread/walLink.ts): a frame nothing waits for (a non-durable lease
// log) does not wake the WAL thread on its own. It leaves with the worker's next eager frame, in
// frame order ahead of it, or after LAZY_FLUSH_MS; a checkpoint mark and a drain take it at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { idleLinkHost, linkFrame } from '../support/walRig.js';
import { LAZY_FLUSH_MS, WalLink } from '../../src/topicThread/walLink.js';
import type { WalIn } from '../../src/protocol/messages/wal.js';

type Submit = Extract<WalIn, { t: 'submit' }>;

/** A WalLink whose port records what it posts; `turn()` lets the turns queued so far run. */
function lazyRig() {
  const ch = new MessageChannel();
  const posted: WalIn[] = [];
  ch.port2.on('message', (m: WalIn) => posted.push(m));
  const link = new WalLink(ch.port1, 0, idleLinkHost);
  const submits = () => posted.filter((m): m is Submit => m.t === 'submit');
  /** The bytes of a submission, one byte value per frame (linkFrame fills a frame with its number). */
  const frameBytes = (s: Submit) => [...new Set(new Uint8Array(s.buf, 0, s.bytes))];
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  return { link, posted, submits, frameBytes, sleep, close: () => ch.port1.close() };
}

const lazy = (frameNo: number) => ({ ...linkFrame(frameNo, 100), lazy: true });

test('a lazy frame alone is held past its turn and submitted LAZY_FLUSH_MS later', async () => {
  const r = lazyRig();
  try {
    r.link.queueFrame(lazy(1));
    await r.sleep(1);
    assert.equal(r.submits().length, 0, 'the turn ended without waking the WAL thread');
    await r.sleep(LAZY_FLUSH_MS + 20);
    assert.equal(r.submits().length, 1, 'the timer submitted it');
    assert.deepEqual(r.frameBytes(r.submits()[0]!), [1]);
  } finally {
    r.close();
  }
});

test('a lazy frame rides with the next eager frame, ahead of it, in one submission', async () => {
  const r = lazyRig();
  try {
    r.link.queueFrame(lazy(1));
    await r.sleep(1);
    r.link.queueFrame(linkFrame(2, 100));
    await r.sleep(1);
    assert.equal(r.submits().length, 1);
    assert.deepEqual(r.frameBytes(r.submits()[0]!), [1, 2], 'frame order kept');
    assert.equal(r.submits()[0]!.frames, 2);
    await r.sleep(LAZY_FLUSH_MS + 20);
    assert.equal(r.submits().length, 1, 'the timer was cleared: no empty or second submission');
  } finally {
    r.close();
  }
});

test('a checkpoint mark and a drain take held lazy frames at once', async () => {
  const r = lazyRig();
  try {
    r.link.queueFrame(lazy(1));
    await r.sleep(1);
    void r.link.markAndWaitWritten(7).catch(() => undefined);
    await r.sleep(1);
    assert.deepEqual(
      r.posted.map((m) => m.t),
      ['submit', 'mark'],
      'the frame goes before the mark, so a snapshot never precedes what it already holds',
    );
    r.link.queueFrame(lazy(2));
    await r.sleep(1);
    void r.link.whenIdle();
    await r.sleep(1);
    assert.equal(r.submits().length, 2, 'a drain submits it too');
  } finally {
    r.close();
  }
});
