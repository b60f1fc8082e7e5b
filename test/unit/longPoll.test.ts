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

/** LongPoll with its sends recorded. */
class TestPoll extends LongPoll {
  readonly sent: unknown[] = [];
  constructor(
    d: DiffRequest,
    p: WaitPort,
    counter: { longPollsWaiting: number },
    res: EventEmitter,
    private readonly gone: boolean,
  ) {
    super(d, p, counter, res as never);
  }
  protected send(r: TopicResult): void {
    this.sent.push(r);
  }
  protected sendError(err: unknown): void {
    this.sent.push(err);
  }
  protected socketGone(): boolean {
    return this.gone;
  }
}

function setUp(socketGone = false) {
  const p = port();
  const counter = { longPollsWaiting: 0 };
  const res = new EventEmitter();
  const d = diff();
  const poll = new TestPoll(d, p, counter, res, socketGone);
  return { p, counter, res, d, poll };
}

test('a long-poll is counted until it settles; a close after the answer sends nothing', () => {
  const { p, counter, res, poll, d } = setUp();
  assert.equal(counter.longPollsWaiting, 1);
  assert.ok(d.waitId! > 0, 'numbered for its cancel');
  void poll.post(d);
  assert.equal((p.sent[0] as DiffRequest).waitMs, 20_000);
  const ok: TopicResult = { ok: true, status: 200, json: Buffer.from('{'), perf: {} };
  poll.answer(ok);
  poll.failed(new Error('late'));
  assert.equal(counter.longPollsWaiting, 0, 'counted down once');
  assert.equal(poll.sent[0], ok, 'the answer is sent');
  res.emit('close');
  assert.deepEqual(
    p.sent.map((r) => r.op),
    ['diff'],
  );
});

test('a client gone after the diff was posted: cancelWait follows the diff', () => {
  const { p, res, poll, d } = setUp();
  void poll.post(d);
  res.emit('close');
  assert.deepEqual(
    p.sent.map((r) => r.op),
    ['diff', 'cancelWait'],
  );
  assert.equal((p.sent[1] as { waitId: number }).waitId, d.waitId);
});

test('a client gone before the diff was posted: no cancel ahead of it, and the diff does not wait', () => {
  const { p, res, poll, d } = setUp();
  res.emit('close');
  assert.equal(p.sent.length, 0, 'nothing sent ahead of the diff (it would find nothing parked)');
  void poll.post(d);
  assert.deepEqual(
    p.sent.map((r) => r.op),
    ['diff'],
  );
  assert.equal((p.sent[0] as DiffRequest).waitMs, 0, 'posted as a plain read: answered at once');
});

test('a connection closed before the route saw it (no close event to come): the diff does not wait', () => {
  const { p, poll, d } = setUp(true);
  void poll.post(d);
  assert.equal((p.sent[0] as DiffRequest).waitMs, 0);
});
