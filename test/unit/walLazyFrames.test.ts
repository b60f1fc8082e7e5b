// Lazy WAL frames (src/topicThread/walLink.ts): a frame nothing waits for (a non-durable lease
// log) does not wake the WAL thread on its own. It leaves with the worker's next eager frame, in
// frame order ahead of it, or after LAZY_FLUSH_MS; a checkpoint mark and a drain take it at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel, type TransferListItem } from 'node:worker_threads';
import { idleLinkHost, linkFrame } from '../support/walRig.js';
import { LAZY_FLUSH_MS, WalLink } from '../../src/topicThread/walLink.js';
import type { WalIn } from '../../src/protocol/messages/wal.js';

type Submit = Extract<WalIn, { t: 'submit' }>;

/**
 * A WalLink whose port records what it posts, at the post (not on delivery, which a loaded
 * machine can delay past any fixed wait); `turn()` lets the turns queued so far run (the link's
 * flush is an immediate queued before ours); `sleep` waits out the lazy timer.
 */
function lazyRig(lazyFlushMs = LAZY_FLUSH_MS) {
  const ch = new MessageChannel();
  const posted: WalIn[] = [];
  const post = ch.port1.postMessage.bind(ch.port1);
  ch.port1.postMessage = (m: WalIn, transfer?: readonly TransferListItem[]) => {
    posted.push(m.t === 'submit' ? { ...m, buf: m.buf.slice(0) } : m); // its buffer leaves with the post
    post(m, transfer);
  };
  const link = new WalLink(ch.port1, 0, idleLinkHost, lazyFlushMs);
  const submits = () => posted.filter((m): m is Submit => m.t === 'submit');
  /** The bytes of a submission, one byte value per frame (linkFrame fills a frame with its number). */
  const frameBytes = (s: Submit) => [...new Set(new Uint8Array(s.buf, 0, s.bytes))];
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  // One immediate, queued after the link's flush: the check is made in the same check phase,
  // before any timer of the next loop turn could run.
  const turn = () => new Promise((r) => setImmediate(r));
  /** Waits (at most 2 s) until `cond` holds: what a timer makes happen, on a loaded machine too. */
  const until = async (cond: () => boolean) => {
    for (const end = Date.now() + 2000; !cond() && Date.now() < end;) await sleep(1);
  };
  return { link, posted, submits, frameBytes, sleep, turn, until, close: () => ch.port1.close() };
}

const lazy = (frameNo: number) => ({ ...linkFrame(frameNo, 100), lazy: true });

test('a lazy frame alone is held past its turn and submitted LAZY_FLUSH_MS later', async () => {
  const r = lazyRig();
  try {
    r.link.queueFrame(lazy(1));
    await r.turn();
    assert.equal(r.submits().length, 0, 'the turn ended without waking the WAL thread');
    await r.sleep(LAZY_FLUSH_MS);
    await r.until(() => r.submits().length > 0);
    assert.equal(r.submits().length, 1, 'the timer submitted it');
    assert.deepEqual(r.frameBytes(r.submits()[0]!), [1]);
  } finally {
    r.close();
  }
});

test('a lazy frame rides with the next eager frame, ahead of it, in one submission', async () => {
  // A long lazy delay: the eager frame comes a loop turn later, and a loaded machine must not let
  // the timer win that race.
  const r = lazyRig(300);
  try {
    r.link.queueFrame(lazy(1));
    await r.turn();
    r.link.queueFrame(linkFrame(2, 100));
    await r.turn();
    assert.equal(r.submits().length, 1);
    assert.deepEqual(r.frameBytes(r.submits()[0]!), [1, 2], 'frame order kept');
    assert.equal(r.submits()[0]!.frames, 2);
    await r.sleep(350);
    assert.equal(r.submits().length, 1, 'the timer was cleared: no empty or second submission');
  } finally {
    r.close();
  }
});

test('a checkpoint mark and a drain take held lazy frames at once', async () => {
  const r = lazyRig(60_000); // no timer takes them here

  try {
    r.link.queueFrame(lazy(1));
    await r.turn();
    void r.link.markAndWaitWritten(7).catch(() => undefined);
    await r.turn();
    assert.deepEqual(
      r.posted.map((m) => m.t),
      ['submit', 'mark'],
      'the frame goes before the mark, so a snapshot never precedes what it already holds',
    );
    r.link.queueFrame(lazy(2));
    await r.turn();
    void r.link.whenIdle();
    await r.turn();
    assert.equal(r.submits().length, 2, 'a drain submits it too');
  } finally {
    r.close();
  }
});
