// LongPoll (src/http/longPoll.ts), main's side of a diff long-poll: the count it keeps and when a
// client gone early cancels it — before the diff is posted it goes as a plain read; after, a
// cancelWait follows it on the same port, never ahead of it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { LongPoll, type WaitPort } from '../../src/http/longPoll.js';
import type { DiffRequest, TopicRequest, TopicResult } from '../../src/protocol/messages/rpc.js';

function diff(): DiffRequest {
  return {
    op: 'diff',
    topic: 't',
    fromSeq: 5,
    limit: 0,
    nodes: null,
    includeTags: false,
    includeMeta: true,
    waitMs: 20_000,
    maxBatchBytes: 0,
  };
}

/** A port that records what was sent, in order, and answers nothing. */
function port(): WaitPort & { sent: TopicRequest[] } {
  const sent: TopicRequest[] = [];
  return { sent, request: (r) => (sent.push({ ...r }), new Promise<TopicResult>(() => {})) };
}

function setUp(socketGone = false) {
  const p = port();
  const counter = { longPollsWaiting: 0 };
  const res = new EventEmitter();
  const d = diff();
  const poll = new LongPoll(d, p, counter, () => socketGone);
  poll.watch(res as never);
  return { p, counter, res, d, poll };
}

test('a long-poll is counted until it settles; a close after the answer sends nothing', () => {
  const { p, counter, res, poll, d } = setUp();
  assert.equal(counter.longPollsWaiting, 1);
  assert.ok(d.waitId! > 0, 'numbered for its cancel');
  void poll.post();
  assert.equal((p.sent[0] as DiffRequest).waitMs, 20_000);
  poll.settle();
  poll.settle();
  assert.equal(counter.longPollsWaiting, 0, 'counted down once');
  res.emit('close');
  assert.deepEqual(
    p.sent.map((r) => r.op),
    ['diff'],
  );
});

test('a client gone after the diff was posted: cancelWait follows the diff', () => {
  const { p, res, poll, d } = setUp();
  void poll.post();
  res.emit('close');
  assert.deepEqual(
    p.sent.map((r) => r.op),
    ['diff', 'cancelWait'],
  );
  assert.equal((p.sent[1] as { waitId: number }).waitId, d.waitId);
});

test('a client gone before the diff was posted: no cancel ahead of it, and the diff does not wait', () => {
  const { p, res, poll } = setUp();
  res.emit('close');
  assert.equal(p.sent.length, 0, 'nothing sent ahead of the diff (it would find nothing parked)');
  void poll.post();
  assert.deepEqual(
    p.sent.map((r) => r.op),
    ['diff'],
  );
  assert.equal((p.sent[0] as DiffRequest).waitMs, 0, 'posted as a plain read: answered at once');
});

test('a connection closed before the route saw it (no close event to come): the diff does not wait', () => {
  const { p, poll } = setUp(true);
  void poll.post();
  assert.equal((p.sent[0] as DiffRequest).waitMs, 0);
});
