// Watch sessions (docs/API.md "Watch", "Watch frames"; docs/WATCH.md "Resume"): the registry's idle GC and cap, wid format, and
// the session's cursor map (rewind only lowers; the frame id follows every change).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/core/clock.js';
import { WatchRegistry, WatchSession, type WatchOptions } from '../../src/streams/watch/session.js';
import { decodeCursor, encodeCursor } from '../../src/streams/watch/cursor.js';

const OPTS: WatchOptions = {
  limit: 256,
  maxBatchBytes: 262144,
  heartbeatMs: 15000,
  includeMeta: true,
  includeTags: false,
  includeData: true,
  nodes: null,
  strong: false,
};

const start = (entries: [string, number][] = [['a', 0]]) => new Map(entries);

test('wid: "wid_" + 22 base64url chars (16 random bytes), unique per session', () => {
  const reg = new WatchRegistry(new FakeClock(), 1000, 0);
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const s = reg.create(OPTS, start())!;
    assert.match(s.wid, /^wid_[A-Za-z0-9_-]{22}$/);
    assert.equal(Buffer.from(s.wid.slice(4), 'base64url').length, 16);
    assert.ok(!seen.has(s.wid));
    seen.add(s.wid);
    assert.equal(reg.get(s.wid), s);
  }
  assert.equal(reg.size, 200);
  assert.equal(reg.get('wid_AAAAAAAAAAAAAAAAAAAAAA'), undefined);
});

test('create: names ascending, cursors parallel, frame id is the docs/API.md "Watch frames" encoding', () => {
  const reg = new WatchRegistry(new FakeClock(), 1000, 0);
  const s = reg.create(
    OPTS,
    start([
      ['jobs', 312],
      ['audit', 75],
      ['b', 0],
    ]),
  )!;
  assert.deepEqual(s.names, ['audit', 'b', 'jobs']);
  assert.deepEqual(
    [0, 1, 2].map((i) => s.cursor(i)),
    [75, 0, 312],
  );
  assert.equal(s.frameId(), encodeCursor(['audit', 'b', 'jobs'], [75, 0, 312]));
  assert.equal(Buffer.from(s.frameId(), 'base64url').toString(), '{"audit":75,"b":0,"jobs":312}');
  assert.equal(s.streams, 0);
  assert.equal(s.opts, OPTS);
});

test('idle GC: collected only once idle longer than the ttl', () => {
  const clock = new FakeClock(1_000_000);
  const reg = new WatchRegistry(clock, 5000, 0);
  const s = reg.create(OPTS, start())!;
  assert.equal(s.lastAccessMs, 1_000_000);
  clock.advance(5000);
  reg.collect();
  assert.equal(reg.get(s.wid), s, 'idle exactly ttl: kept');
  clock.advance(1);
  // Lazy: nothing happens until something collects.
  assert.equal(reg.get(s.wid), s);
  reg.collect();
  assert.equal(reg.get(s.wid), undefined);
  assert.equal(reg.size, 0);
});

test('idle GC runs on create (POST) and spares sessions with an open stream', () => {
  const clock = new FakeClock();
  const reg = new WatchRegistry(clock, 1000, 0);
  const idle = reg.create(OPTS, start())!;
  const open = reg.create(OPTS, start())!;
  reg.touch(open, 1);
  assert.equal(open.streams, 1);
  clock.advance(10_000);
  const fresh = reg.create(OPTS, start())!;
  assert.equal(reg.get(idle.wid), undefined, 'collected by create');
  assert.equal(reg.get(open.wid), open, 'never while a stream is open');
  assert.equal(reg.get(fresh.wid), fresh);
  assert.equal(reg.size, 2);
  // Two streams at once: closing one keeps the session pinned.
  reg.touch(open, 1);
  reg.touch(open, -1);
  assert.equal(open.streams, 1);
  clock.advance(10_000);
  reg.collect();
  assert.equal(reg.get(open.wid), open);
  assert.equal(reg.get(fresh.wid), undefined);
});

test('touch +1 and -1 both count as access: the ttl runs from the close', () => {
  const clock = new FakeClock(0);
  const reg = new WatchRegistry(clock, 1000, 0);
  const s = reg.create(OPTS, start())!;
  clock.advance(900);
  reg.touch(s, 1);
  assert.equal(s.lastAccessMs, 900);
  clock.advance(50_000);
  reg.touch(s, -1);
  assert.equal(s.lastAccessMs, 50_900);
  assert.equal(s.streams, 0);
  clock.advance(1000);
  reg.collect();
  assert.equal(reg.get(s.wid), s, 'idle exactly ttl since the close');
  clock.advance(1);
  reg.collect();
  assert.equal(reg.get(s.wid), undefined);
});

test('cap: undefined at maxSessions, room again once idle sessions are collected', () => {
  const clock = new FakeClock();
  const reg = new WatchRegistry(clock, 1000, 2);
  const a = reg.create(OPTS, start())!;
  const b = reg.create(OPTS, start())!;
  assert.ok(a && b);
  assert.equal(reg.create(OPTS, start()), undefined);
  assert.equal(reg.size, 2);
  reg.touch(a, 1); // a stays pinned
  clock.advance(1001);
  const c = reg.create(OPTS, start());
  assert.ok(c, 'b was collected by the create, making room');
  assert.equal(reg.get(b.wid), undefined);
  assert.equal(reg.size, 2);
  assert.equal(reg.create(OPTS, start()), undefined, 'a (open) and c (fresh) fill the cap');
  // maxSessions 0: no cap.
  const free = new WatchRegistry(clock, 1000, 0);
  for (let i = 0; i < 50; i++) assert.ok(free.create(OPTS, start()));
  assert.equal(free.size, 50);
});

test('rewind: only lowers, per named topic; unknown topics are ignored', () => {
  const reg = new WatchRegistry(new FakeClock(), 1000, 0);
  const s = reg.create(
    OPTS,
    start([
      ['a', 10],
      ['b', 20],
      ['c', 30],
    ]),
  )!;
  s.rewind(
    new Map([
      ['a', 5],
      ['b', 25],
      ['zz', 0],
      ['c', 30],
    ]),
  );
  assert.deepEqual(
    [0, 1, 2].map((i) => s.cursor(i)),
    [5, 20, 30],
  );
  s.rewind(new Map([['b', 0]]));
  assert.deepEqual(
    [0, 1, 2].map((i) => s.cursor(i)),
    [5, 0, 30],
  );
  s.rewind(new Map());
  s.rewind(new Map([['nope', 1]]));
  assert.deepEqual(
    [0, 1, 2].map((i) => s.cursor(i)),
    [5, 0, 30],
  );
  assert.deepEqual(
    decodeCursor(s.frameId()),
    new Map([
      ['a', 5],
      ['b', 0],
      ['c', 30],
    ]),
  );
});

test('frameId: cached, and invalidated by setCursor and rewind', () => {
  const s = new WatchSession('wid_x', OPTS, ['a', 'b'], [1, 2], 0);
  const id1 = s.frameId();
  assert.equal(id1, encodeCursor(['a', 'b'], [1, 2]));
  assert.equal(s.frameId(), id1);
  s.setCursor(1, 7);
  assert.equal(s.cursor(1), 7);
  const id2 = s.frameId();
  assert.equal(id2, encodeCursor(['a', 'b'], [1, 7]));
  assert.notEqual(id2, id1);
  s.setCursor(1, 7); // unchanged value
  assert.equal(s.frameId(), id2);
  s.setCursor(0, 100);
  assert.equal(s.frameId(), encodeCursor(['a', 'b'], [100, 7]));
  s.rewind(new Map([['a', 3]]));
  assert.equal(s.frameId(), encodeCursor(['a', 'b'], [3, 7]));
  s.setCursor(0, 1);
  s.setCursor(1, 2);
  assert.equal(s.frameId(), id1);
});
