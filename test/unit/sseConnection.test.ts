// The SSE transport (src/streams/sse/): one SseConnection over a real ServerResponse on a loopback
// server, with the process-wide FlushPacer. Checks the opening (`retry: 2000`, then `: hb` when
// asked), one write per loop iteration, heartbeats after silence and not within a written
// window, pause on a backed-up socket and resume on 'drain', and the terminal error frame.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { SystemClock } from '../../src/core/clock.js';
import { FlushPacer } from '../../src/streams/sse/flushPacer.js';
import { SseConnection, type SseConnectionOptions } from '../../src/streams/sse/sseConnection.js';
import { SharedChunks } from '../../src/streams/sse/sharedChunks.js';

const pacer = new FlushPacer(new SystemClock());
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tick = () => new Promise((r) => setImmediate(r));

/** At least two loop iterations, then more (up to 1 s) until `done`. */
async function ticksUntil(done: () => boolean): Promise<void> {
  await tick();
  await tick();
  const end = Date.now() + 1000;
  while (!done() && Date.now() < end) await tick();
}

interface Served {
  conn: SseConnection;
  /** Every chunk the connection wrote (res.write, then the socket directly), in order. */
  writes: Buffer[];
  /** The Buffers it wrote straight to the socket (as written, not copied). */
  raw: Buffer[];
  events: string[];
}

type Opts = Partial<Pick<SseConnectionOptions, 'highWaterBytes' | 'heartbeatMs'>> & { initialHeartbeat?: boolean; pacer?: FlushPacer };

const servers: http.Server[] = [];
// Every connection is cut at the end, so a failed assertion cannot leave the run hanging.
after(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

/** A server whose one request becomes an opened SseConnection. */
async function serve(o: Opts = {}): Promise<{ port: number; served: Promise<Served> }> {
  let resolve!: (s: Served) => void;
  const served = new Promise<Served>((r) => (resolve = r));
  const server = http.createServer((_req, res) => {
    // Every write the connection makes: through res.write (the first, with the head) or, after
    // it, straight to the socket (not the socket writes res.write itself makes).
    const writes: Buffer[] = [];
    const raw: Buffer[] = [];
    let inRes = false;
    const write = res.write;
    res.write = ((chunk: any, ...rest: any[]) => {
      writes.push(Buffer.from(chunk));
      inRes = true;
      try {
        return (write as any).call(res, chunk, ...rest);
      } finally {
        inRes = false;
      }
    }) as typeof res.write;
    const sock = res.socket!;
    const sockWrite = sock.write;
    sock.write = ((chunk: any, ...rest: any[]) => {
      if (!inRes && !res.writableEnded) {
        writes.push(Buffer.from(chunk));
        raw.push(chunk);
      }
      return (sockWrite as any).call(sock, chunk, ...rest);
    }) as typeof sock.write;
    const events: string[] = [];
    const conn = new SseConnection(res, o.pacer ?? pacer, {
      highWaterBytes: o.highWaterBytes ?? 1024 * 1024,
      heartbeatMs: o.heartbeatMs ?? 60_000,
      now: () => Date.now(),
      onPause: () => events.push('pause'),
      onResume: () => events.push('resume'),
      onClose: () => events.push('close'),
    });
    conn.open({ initialHeartbeat: o.initialHeartbeat });
    resolve({ conn, writes, raw, events });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, served };
}

/** A client that keeps the decoded body; `blocks()` splits it into SSE blocks. */
async function get(port: number) {
  let body = '';
  let ended = false;
  const res = await new Promise<http.IncomingMessage>((r, j) => {
    http.get({ port, host: '127.0.0.1', path: '/', agent: false, headers: { accept: 'text/event-stream' } }, r).on('error', j);
  });
  res.setEncoding('utf8');
  res.on('data', (d: string) => (body += d));
  res.on('end', () => (ended = true));
  return {
    res,
    blocks: () => body.split('\n\n').slice(0, -1),
    ended: () => ended,
    async until(pred: () => boolean, timeoutMs = 1000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!pred()) {
        if (Date.now() > deadline) throw new Error(`timed out; body so far: ${JSON.stringify(body)}`);
        await sleep(5);
      }
    },
  };
}

test('open: the SSE head, then `retry: 2000`; `: hb` right after it when asked', async () => {
  for (const initialHeartbeat of [false, true]) {
    const { port, served } = await serve({ initialHeartbeat });
    const c = await get(port);
    const s = await served;
    assert.equal(c.res.statusCode, 200);
    assert.equal(c.res.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(c.res.headers['cache-control'], 'no-store');
    await c.until(() => c.blocks().length >= (initialHeartbeat ? 2 : 1));
    assert.deepEqual(c.blocks(), initialHeartbeat ? ['retry: 2000', ': hb'] : ['retry: 2000']);
    // The opening leaves in one write, like any other iteration's frames.
    assert.equal(s.writes.length, 1);
    s.conn.end();
  }
});

test('frames written in one loop iteration leave in one write; the next iteration in another', async () => {
  const { port, served } = await serve();
  const c = await get(port);
  const s = await served;
  await c.until(() => c.blocks().length === 1);
  const before = s.writes.length;
  s.conn.write(Buffer.from('id: 1\nevent: record\ndata: {"a":1}\n\n'));
  s.conn.write(Buffer.from('id: 2\nevent: record\ndata: {"a":2}\n\n'));
  s.conn.write(Buffer.from('id: 3\nevent: record\ndata: {"a":3}\n\n'));
  assert.equal(s.writes.length, before, 'nothing is written before the paced flush');
  // The pacer waits after a flush as long as the flush took, so on a loaded machine the next
  // flush may take a few iterations: wait for it, then check it wrote once.
  await ticksUntil(() => s.writes.length > before);
  assert.equal(s.writes.length, before + 1);
  s.conn.write(Buffer.from('id: 4\nevent: record\ndata: {"a":4}\n\n'));
  await ticksUntil(() => s.writes.length > before + 1);
  assert.equal(s.writes.length, before + 2);
  await c.until(() => c.blocks().length === 5);
  assert.deepEqual(
    c
      .blocks()
      .slice(1)
      .map((b) => b.split('\n')[0]),
    ['id: 1', 'id: 2', 'id: 3', 'id: 4'],
  );
  s.conn.end();
});

test('heartbeats: `: hb` after heartbeatMs of silence, none while frames keep going out', async () => {
  const heartbeatMs = 80;
  const { port, served } = await serve({ heartbeatMs });
  const c = await get(port);
  const s = await served;
  // Busy: a frame every 20 ms for 300 ms, so no window of heartbeatMs is ever silent.
  for (let i = 0; i < 15; i++) {
    s.conn.write(Buffer.from(`id: ${i}\nevent: record\ndata: {}\n\n`));
    await sleep(20);
  }
  await c.until(() => c.blocks().length === 16);
  assert.ok(!c.blocks().includes(': hb'), 'no heartbeat while writing');
  // Silent: heartbeats come, about one per heartbeatMs.
  await sleep(heartbeatMs * 3 + 40);
  const hbs = c.blocks().filter((b) => b === ': hb').length;
  assert.ok(hbs >= 2 && hbs <= 4, `${hbs} heartbeats in ~3 windows`);
  s.conn.end();
});

test('a heartbeat queued behind a late flush is one heartbeat, not one per millisecond until the flush', async () => {
  // Under load the pacer waits between slices, so a queued frame can stay unflushed for a few ms.
  // A pacer that always flushes 30 ms late: the heartbeat timer must not take the queued
  // heartbeat for silence and queue another every time it re-arms.
  const late = {
    markDirty(t: SseConnection): void {
      setTimeout(() => t.flush(Date.now(), new SharedChunks()), 30);
    },
  } as unknown as FlushPacer;
  const heartbeatMs = 60;
  const { port, served } = await serve({ heartbeatMs, pacer: late });
  const c = await get(port);
  const s = await served;
  await sleep(heartbeatMs * 4 + 50);
  const hbs = c.blocks().filter((b) => b === ': hb').length;
  assert.ok(hbs >= 2 && hbs <= 5, `${hbs} heartbeats in ~4 windows`);
  s.conn.end();
});

test('pause when the client stops reading (bytes queued past high water), resume on drain', async () => {
  const highWaterBytes = 64 * 1024;
  const { port, served } = await serve({ highWaterBytes, heartbeatMs: 30 });
  // A raw client that does not read until told to.
  const sock = net.connect(port, '127.0.0.1').unref();
  sock.write('GET / HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n');
  sock.pause();
  const s = await served;
  const chunk = Buffer.alloc(1024 * 1024, 'x');
  // Wait in real time between writes: the pacer delays a flush by as long as the previous one
  // took, which on a loaded machine is longer than a couple of loop turns.
  for (let i = 0; i < 64 && !s.conn.paused; i++) {
    const flushed = s.writes.length;
    s.conn.write(chunk);
    const until = Date.now() + 500;
    while (s.writes.length === flushed && Date.now() < until) await sleep(2);
  }
  assert.equal(s.conn.paused, true, 'paused once the socket backed up');
  assert.deepEqual(s.events, ['pause']);
  // No heartbeat is queued while paused.
  const writes = s.writes.length;
  await sleep(100);
  assert.equal(s.writes.length, writes);
  sock.resume(); // read everything from here on
  const deadline = Date.now() + 2000;
  while (s.conn.paused && Date.now() < deadline) await sleep(5);
  assert.equal(s.conn.paused, false, 'resumed on drain');
  assert.deepEqual(s.events, ['pause', 'resume']);
  sock.destroy();
  while (!s.conn.closed && Date.now() < deadline) await sleep(5);
  assert.deepEqual(s.events, ['pause', 'resume', 'close'], 'a client that goes away closes the connection');
});

test('fail: a terminal error frame with no id line, then the response ends; writes after it are dropped', async () => {
  const { port, served } = await serve();
  const c = await get(port);
  const s = await served;
  s.conn.write(Buffer.from('id: 1\nevent: record\ndata: {}\n\n'));
  s.conn.fail({ code: 503, error: 'shutting_down', message: 'draining', terminal: true, retry_after_ms: 1000 });
  assert.equal(s.conn.closed, true);
  assert.deepEqual(s.events, ['close']);
  s.conn.write(Buffer.from('id: 2\nevent: record\ndata: {}\n\n'));
  s.conn.fail({ code: 500, error: 'internal', message: 'again', terminal: true });
  await c.until(() => c.ended());
  const blocks = c.blocks();
  assert.deepEqual(blocks.slice(0, 2), ['retry: 2000', 'id: 1\nevent: record\ndata: {}']);
  assert.equal(blocks.length, 3);
  const last = blocks[2]!.split('\n');
  assert.deepEqual(last, [
    'event: error',
    `data: ${JSON.stringify({ code: 503, error: 'shutting_down', message: 'draining', terminal: true, retry_after_ms: 1000 })}`,
  ]);
  assert.ok(!last.some((l) => l.startsWith('id:')));
  assert.deepEqual(s.events, ['close'], 'onClose once');
});

test('after the head, frames go straight to the socket as one HTTP chunk, shared by connections that queued the same frames', async () => {
  const a = await serve();
  const b = await serve();
  const ca = await get(a.port);
  const cb = await get(b.port);
  const sa = await a.served;
  const sb = await b.served;
  await ca.until(() => ca.blocks().length === 1);
  await cb.until(() => cb.blocks().length === 1);
  const f1 = Buffer.from('id: 1\nevent: record\ndata: {"a":1}\n\n');
  const f2 = Buffer.from('id: 2\nevent: record\ndata: {"a":2}\n\n');
  for (const s of [sa, sb]) {
    s.conn.write(f1);
    s.conn.write(f2);
  }
  await ticksUntil(() => sa.raw.length > 0 && sb.raw.length > 0);
  assert.equal(sa.raw.length, 1, 'one socket write for the two frames');
  assert.equal(sa.raw[0], sb.raw[0], 'both connections wrote the very same Buffer');
  assert.equal(sa.raw[0]!.toString('latin1'), `${(f1.length + f2.length).toString(16)}\r\n${f1}${f2}\r\n`);
  await ca.until(() => ca.blocks().length === 3);
  await cb.until(() => cb.blocks().length === 3);
  assert.deepEqual(ca.blocks().slice(1), ['id: 1\nevent: record\ndata: {"a":1}', 'id: 2\nevent: record\ndata: {"a":2}']);
  // A frame over the shared-chunk size goes out as a writev of its pieces, still one valid chunk.
  const big = Buffer.from(`id: 3\nevent: record\ndata: "${'x'.repeat(70 * 1024)}"\n\n`);
  sa.conn.write(big);
  await ca.until(() => ca.blocks().length === 4);
  assert.equal(ca.blocks()[3], big.toString('latin1').slice(0, -2));
  sa.conn.end();
  sb.conn.end();
  await ca.until(() => ca.ended());
});
