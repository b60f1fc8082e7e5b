// A pressure pacing tick that finds a stream still opening (src/streams/streamPacer.ts; docs/ARCHITECTURE.md
// "Admission: keys, caps and pressure"). The hub holds a watch stream from before its watch interest
// reaches the workers, and the `/work` registry holds a stream from before the queue actor accepts it;
// a tick in that window leaves the stream to the first tick after it opened. Real hub, registry, pacer
// and SSE connections over loopback HTTP; a fake supervisor whose watch interest answers when the test
// says, so the tick lands in the window every time.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SystemClock } from '../../src/core/clock.js';
import type { PressureMonitor } from '../../src/pressure/monitor.js';
import { PriorityBook } from '../../src/pressure/priorityBook.js';
import type { TopicResult } from '../../src/protocol/messages/rpc.js';
import { FlushPacer } from '../../src/streams/sse/flushPacer.js';
import { SseSlots } from '../../src/streams/sse/slots.js';
import { StreamPacer } from '../../src/streams/streamPacer.js';
import { WatchHub } from '../../src/streams/watch/hub.js';
import { WatchRegistry } from '../../src/streams/watch/session.js';
import { WorkRegistry } from '../../src/streams/work/workRegistry.js';
import type { Supervisor } from '../../src/supervisor/supervisor.js';
import { openStream } from '../helpers/sse.js';

const servers: http.Server[] = [];
after(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

/** A loopback server whose one request's response is handed to the test. */
async function serve(): Promise<{ url: string; res: Promise<http.ServerResponse> }> {
  let resolve!: (r: http.ServerResponse) => void;
  const res = new Promise<http.ServerResponse>((r) => (resolve = r));
  const server = http.createServer((_req, r) => resolve(r));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, res };
}

/** One worker: its watch interest (+1) waits for `release`; every watch read finds an empty topic. */
function fakeSupervisor(): { sup: Supervisor; release: () => void; reads: string[] } {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const reads: string[] = [];
  const empty = (fromSeq: number): TopicResult => ({
    ok: true,
    status: 200,
    json: new Uint8Array(0),
    perf: {},
    watch: { exists: true, instanceId: 1, head: 0, deliverableHead: 0, earliest: 1, next: fromSeq, count: 0, tombstone: null },
  });
  const sup = {
    workers: [{ watchInterest: (_names: string[], delta: number) => (delta > 0 ? held : Promise.resolve()) }],
    namesByWorker: (names: readonly string[]) => [[...names]],
    routers: { drainInto: async () => undefined },
    workerFor: () => ({
      request: async (r: { op: string; topic: string; fromSeq?: number }) => {
        if (r.op === 'watchRead') reads.push(r.topic);
        return empty(r.fromSeq ?? 0);
      },
    }),
  };
  return { sup: sup as unknown as Supervisor, release, reads };
}

function pacing(sup: Supervisor, low: string): { hub: WatchHub; work: WorkRegistry; streamPacer: StreamPacer } {
  const pacer = new FlushPacer(new SystemClock());
  const slots = new SseSlots(0);
  const hub = new WatchHub(sup, new WatchRegistry(new SystemClock(), 60_000, 0), slots, () => undefined, pacer);
  const work = new WorkRegistry(sup, pacer, slots);
  const book = new PriorityBook(1000);
  book.configured(low, -5, false);
  const monitor = { pressured: true } as PressureMonitor;
  const streamPacer = new StreamPacer(monitor, book, Date.now, hub, work, { paceMs: 300, below: 0 });
  return { hub, work, streamPacer };
}

test('a tick while a watch stream waits for its interest: the stream opens with its head, then follows every topic', async () => {
  const { sup, release, reads } = fakeSupervisor();
  const { hub, streamPacer } = pacing(sup, 'w.slow');
  const session = hub.registry.create(
    {
      limit: 10,
      maxBatchBytes: 1024 * 1024,
      heartbeatMs: 60_000,
      includeMeta: false,
      includeTags: false,
      includeData: true,
      nodes: null,
      strong: false,
    },
    new Map([
      ['w.fast', 0],
      ['w.slow', 0],
    ]),
  )!;
  const { url, res } = await serve();
  const client = openStream(url, '', { path: '/' });
  const opening = hub.open(session, await res);
  streamPacer.tick(); // the stream is registered, its interest not yet answered
  await new Promise((r) => setTimeout(r, 20)); // anything the tick queued is flushed by now
  release();
  await opening; // the open's writeHead would throw had a frame left before it
  const s = await client;
  try {
    assert.equal(s.headers['content-type'], 'text/event-stream; charset=utf-8');
    const first = await s.next(() => true, 2000);
    assert.equal(first.kind, 'retry', 'the first bytes are retry: (docs/WATCH.md)');
    await s.nextEvent('caught-up', 2000, (f) => f.data.topic === 'w.fast');
    assert.ok(reads.includes('w.fast'), 'the unpaced topic is read');
    streamPacer.tick(); // the first tick after the open paces the low topic
    const adv = await s.nextEvent('error', 2000);
    assert.deepEqual(adv.data.topics, ['w.slow']);
    assert.equal(adv.data.terminal, false);
  } finally {
    await s.close();
  }
});

test('a tick while a /work stream waits for its actor: the stream gets its advisory frame once it opened', async () => {
  const { sup } = fakeSupervisor();
  const { work, streamPacer } = pacing(sup, 'wq');
  const { url, res } = await serve();
  const client = openStream(url, '', { path: '/' });
  const stream = work.create('wq', await res);
  streamPacer.tick(); // the actor has not accepted the stream yet
  stream.open();
  streamPacer.tick();
  const s = await client;
  try {
    const adv = await s.nextEvent('error', 2000);
    assert.equal(adv.data.topic, 'wq');
    assert.equal(adv.data.terminal, false);
    assert.deepEqual(
      s.frames.slice(0, 2).map((f) => f.kind),
      ['retry', 'comment'],
      'retry: and : hb come first',
    );
  } finally {
    await s.close();
  }
});

test("the drain's closeAll while a /work stream waits for its actor: the stream still gets its one terminal 503 frame", async () => {
  const { sup } = fakeSupervisor();
  const { work } = pacing(sup, 'wq');
  const { url, res } = await serve();
  const client = openStream(url, '', { path: '/' });
  const stream = work.create('wq', await res);
  await work.closeAll(); // SIGTERM: the actor has not accepted the stream yet
  stream.open(); // ... and now it has: the route opens it
  const s = await Promise.race([
    client,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no response: the request was left unanswered')), 3000)),
  ]);
  try {
    const end = await s.nextEvent('error', 2000);
    assert.equal(end.data.error, 'shutting_down');
    assert.equal(end.data.terminal, true);
    assert.equal(s.headers['content-type'], 'text/event-stream; charset=utf-8');
  } finally {
    await s.close();
  }
});
