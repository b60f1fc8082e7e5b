// The pure pressure scheduler and priority book (docs/API.md "GET /v0/topics/:topic"; docs/ARCHITECTURE.md "Admission"): run at once without
// pressure; under pressure highest score first with aging (a low priority is slowed, never
// starved), the inflight bound, shedding at the park bound and lowest-first when the park is
// full; unbounded (disable_backpressure) waiters are never shed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PressureScheduler } from '../../src/pressure/scheduler.js';
import { PriorityBook } from '../../src/pressure/priorityBook.js';

const opts = { agingPerMs: 1, parkBoundMs: 1000, maxParked: 3, inflightMax: 1 };

test('without pressure every request runs at once', () => {
  const s = new PressureScheduler<string>(opts);
  for (let i = 0; i < 5; i++) assert.equal(s.arrive(0, true, 0, false, 'x').kind, 'run');
  assert.equal(s.inflight, 5);
});

test('under pressure: highest priority first, at most inflightMax at a time', () => {
  const s = new PressureScheduler<string>({ ...opts, maxParked: 10 });
  s.arrive(-1000, true, 0, true, 'low1');
  s.arrive(1000, true, 1, true, 'high1');
  s.arrive(0, true, 2, true, 'mid');
  s.arrive(1000, true, 3, true, 'high2');
  const order: string[] = [];
  for (;;) {
    const ws = s.dispatch(true);
    assert.ok(ws.length <= 1);
    if (ws.length === 0) break;
    order.push(ws[0]!.payload);
    s.done();
  }
  assert.deepEqual(order, ['high1', 'high2', 'mid', 'low1']);
});

test('once nothing is parked, the heaps hold no waiter of the episode (lazy removal leaked them)', () => {
  const s = new PressureScheduler<string>({ ...opts, maxParked: 100, inflightMax: 100 });
  for (let i = 0; i < 50; i++) s.arrive(i % 7, true, i, true, `w${i}`);
  assert.ok(s.heldEntries >= 150);
  const ran = s.dispatch(false);
  assert.equal(ran.length, 50);
  assert.equal(s.parked, 0);
  assert.equal(s.heldEntries, 0, 'the worst and deadline heaps are emptied too');
  for (let i = 0; i < 50; i++) s.done();
  assert.equal(s.arrive(0, true, 100, false, 'after').kind, 'run');
});

test('aging: a low priority parked long enough outranks a fresh high one (never starved)', () => {
  const s = new PressureScheduler<string>({ ...opts, maxParked: 10, parkBoundMs: 1e9 });
  s.arrive(-1000, true, 0, true, 'old-low');
  s.arrive(1000, true, 1999, true, 'fresh-high-a');
  assert.equal(s.dispatch(true)[0]!.payload, 'fresh-high-a', 'at 1999 ms of waiting it is still behind');
  s.done();
  s.arrive(1000, true, 2001, true, 'fresh-high-b');
  assert.equal(s.dispatch(true)[0]!.payload, 'old-low', 'past 2000 ms it goes first');
});

test('the park bound sheds bounded waiters only', () => {
  const s = new PressureScheduler<string>({ ...opts, maxParked: 10 });
  s.arrive(0, true, 0, true, 'a');
  s.arrive(0, false, 0, true, 'unbounded');
  s.arrive(0, true, 500, true, 'b');
  assert.equal(s.nextDeadlineMs(), 1000);
  assert.deepEqual(
    s.expire(999).map((w) => w.payload),
    [],
  );
  assert.deepEqual(
    s.expire(1000).map((w) => w.payload),
    ['a'],
  );
  assert.deepEqual(
    s.expire(10_000).map((w) => w.payload),
    ['b'],
  );
  assert.equal(s.parked, 1);
  assert.equal(s.dispatch(true)[0]!.payload, 'unbounded');
});

test('a full park sheds the lowest score first, the newcomer when it is the lowest', () => {
  const s = new PressureScheduler<string>(opts);
  s.arrive(0, true, 0, true, 'mid');
  s.arrive(-500, true, 0, true, 'low');
  s.arrive(500, true, 0, true, 'high');
  const r = s.arrive(1000, true, 0, true, 'top');
  assert.equal(r.kind, 'parked');
  assert.equal(r.kind === 'parked' && r.shed?.payload, 'low');
  assert.equal(s.arrive(-1000, true, 0, true, 'lowest').kind, 'refused');
  assert.equal(s.arrive(-1000, false, 0, true, 'unbounded').kind, 'parked', 'never refused for pressure');
  assert.deepEqual(
    s.dispatch(false).map((w) => w.payload),
    ['top', 'high', 'mid', 'unbounded'],
    'pressure gone: all run',
  );
});

test('priority book: manual, auto from recency (docs/API.md "GET /v0/topics/:topic" formula), 0 otherwise', () => {
  const b = new PriorityBook(100);
  assert.equal(b.effective('t', 0), 0);
  b.consumed('t', 1000);
  assert.equal(b.effective('t', 1000), 500);
  assert.equal(b.effective('t', 31_000), 250);
  assert.equal(b.effective('t', 301_000), 0);
  b.configured('t', -7, true);
  assert.equal(b.effective('t', 1000), -7);
  b.configured('t', null, false);
  assert.equal(b.effective('t', 1000), 0);
  b.forget('t');
  assert.equal(b.effective('t', 1000), 0);
});
