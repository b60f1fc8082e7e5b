// The client when the server pushes back or goes away (docs/CLIENT.md): retries of 429 and 503
// after Retry-After, a lost append answer retried with the same idempotency key (no duplicate),
// and watch/follow iterations that survive a SIGTERM + restart and a collected session without
// losing or repeating a record.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, killServersAfterFile, type Server } from '../helpers/server.js';
import { startTcpProxy } from '../helpers/tcpProxy.js';
import { Spool, SpoolError, type WatchEvent } from '../../src/client/index.js';
import { until as untilWithin } from '../helpers/until.js';

const until = (what: string, ok: () => boolean, ms = 15_000) => untilWithin(what, ok, ms);

killServersAfterFile();
const servers: Server[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.kill()));
});
async function server(env: Record<string, string> = {}, more: Parameters<typeof startServer>[0] = {}): Promise<Server> {
  const s = await startServer({ ...more, env: { SERVICE_WORKERS: '1', ...env, ...more.env } });
  servers.push(s);
  return s;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

test('a 429 is retried after its Retry-After, and thrown with code, status, detail and retryAfterMs when retries run out', async () => {
  const srv = await server({ SERVICE_MAX_TOPICS: '1' });
  const retries: { code: string; retryAfterMs: number | undefined; delayMs: number }[] = [];
  const spool = new Spool({
    url: srv.url,
    retry: { retries: 3, onRetry: (e, _n, delayMs) => retries.push({ code: e.code, retryAfterMs: e.retryAfterMs, delayMs }) },
  });
  await spool.putTopic('cap.a');

  const noRetry = new Spool({ url: srv.url, retry: false });
  const e = await noRetry.putTopic('cap.b').catch((x: unknown) => x);
  assert.ok(e instanceof SpoolError);
  assert.deepEqual([e.code, e.status, e.retryAfterMs, e.detail], ['throttled', 429, 1000, { limit: 'max_topics', max: 1 }]);

  // The cap frees up 300 ms in; the client waits the whole Retry-After (1 s) before its retry.
  const t0 = Date.now();
  setTimeout(() => void spool.deleteTopic('cap.a'), 300);
  const r = await spool.putTopic('cap.b');
  const took = Date.now() - t0;
  assert.equal(r.created, true);
  assert.equal(retries.length, 1, JSON.stringify(retries));
  assert.deepEqual([retries[0]!.code, retries[0]!.retryAfterMs], ['throttled', 1000]);
  assert.ok(retries[0]!.delayMs >= 1000, `waited ${retries[0]!.delayMs} ms`);
  assert.ok(took >= 1000 && took < 5000, `took ${took} ms`);
});

test('a 503 not_ready during recovery is waited out', async () => {
  const srv = await server({ SERVICE_TEST_RECOVERY_DELAY_MS: '1200' }, { waitReady: false });
  const spool = new Spool({ url: srv.url, retry: { retries: 10, maxMs: 400 } });
  const statuses: number[] = [];
  const watcher = new Spool({ url: srv.url, retry: { retries: 10, maxMs: 400, onRetry: (e) => statuses.push(e.status) } });
  const t0 = Date.now();
  const r = await watcher.append('rec.t', [{ data: 1 }]);
  assert.equal(r.first_seq, 1);
  assert.ok(statuses.length >= 1 && statuses.every((s) => s === 503), `retried on ${statuses}`);
  assert.ok(Date.now() - t0 >= 800);
  assert.equal((await spool.ready()).status, 'ready');
});

test('an append whose answer is lost is sent again with the same idempotency key: deduped, appended once', async () => {
  const srv = await server();
  const keys: (string | null)[] = [];
  let lose = 1;
  // A fetch that delivers the request, then drops the answer once (as a reset connection would).
  const lossy: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (init?.method === 'POST' && String(input).endsWith('/v0/topics/idem.t')) {
      keys.push(new Headers(init.headers).get('idempotency-key'));
      if (lose-- > 0) {
        await res.text();
        throw new TypeError('fetch failed');
      }
    }
    return res;
  };
  const spool = new Spool({ url: srv.url, fetch: lossy, retry: { retries: 2, baseMs: 10 } });
  const r = await spool.append('idem.t', [{ data: 'a' }, { data: 'b' }]);
  assert.equal(keys.length, 2, 'sent twice');
  assert.ok(keys[0] && keys[0] === keys[1], `same key both times: ${keys}`);
  assert.equal(r.deduped, true, 'the retry was answered from the first write');
  assert.deepEqual(r.seqs, [1, 2]);
  const d = await new Spool({ url: srv.url }).diff('idem.t');
  assert.deepEqual(
    d.records.map((x) => x.data),
    ['a', 'b'],
    'one copy only',
  );

  // Without retries no key is invented, and the lost answer surfaces as network_error.
  lose = 1;
  const once = new Spool({ url: srv.url, fetch: lossy, retry: false });
  const e = await once.append('idem.t', [{ data: 'c' }]).catch((x: unknown) => x);
  assert.ok(e instanceof SpoolError && e.code === 'network_error');
  assert.equal(keys.at(-1), null);
});

/** Collects a watch's records per topic until `stop` says so. */
function collect(
  it: AsyncIterable<WatchEvent<number>>,
  stop: (n: number) => boolean,
): { seqs: Map<string, number[]>; count: () => number; done: Promise<void> } {
  const seqs = new Map<string, number[]>();
  let n = 0;
  const done = (async () => {
    for await (const ev of it) {
      if (ev.type !== 'record') continue;
      seqs.set(ev.topic, [...(seqs.get(ev.topic) ?? []), ev.record.$seq]);
      if (stop(++n)) return;
    }
  })();
  return { seqs, count: () => n, done };
}

test(
  'a watch survives SIGTERM and a restart: the session is re-created from its cursor, no record lost or repeated',
  { timeout: 60_000 },
  async () => {
    const first = await server({ SERVICE_WAL_SYNC_INTERVAL_MS: '10' });
    const port = first.port;
    const spool = new Spool({ url: first.url });
    const t = 'wr.restart';
    const u = 'wr.other';
    await spool.append(
      t,
      range(1, 30).map((n) => ({ data: n })),
    );
    await spool.append(u, [{ data: 'u1' }]);
    const reconnects: string[] = [];
    const w = spool.watch({ topics: { [t]: {}, [u]: {} }, onReconnect: (e) => reconnects.push(e.code) });
    const c = collect(w, () => false);
    await until('the backlog', () => c.count() >= 31);
    const wid1 = w.wid;

    await spool.append(
      t,
      range(31, 60).map((n) => ({ data: n })),
    );
    await until('live records', () => c.count() >= 61);
    assert.equal(await first.stop(), 0, 'SIGTERM exits 0');
    await server({}, { dataDir: first.dataDir, env: { SERVICE_PORT: String(port) } });
    await spool.append(
      t,
      range(61, 100).map((n) => ({ data: n })),
    );
    await until('the records appended after the restart', () => c.count() >= 101);
    await sleep(200); // room for a stray duplicate to show up
    w.close();
    await c.done;

    assert.deepEqual(c.seqs.get(t), range(1, 100), 'every record of t exactly once, in order');
    assert.deepEqual(c.seqs.get(u), [1]);
    assert.ok(reconnects.includes('shutting_down'), `reconnect reasons: ${reconnects}`);
    assert.notEqual(w.wid, wid1, 'a new session after the restart');
  },
);

test(
  'a watch whose session was collected while disconnected POSTs it again from its cursor: no loss, no duplicate',
  { timeout: 60_000 },
  async () => {
    const srv = await server({ SERVICE_WATCH_SESSION_TTL_MS: '300' });
    const proxy = await startTcpProxy(srv.port);
    try {
      const direct = new Spool({ url: srv.url });
      const viaProxy = new Spool({ url: proxy.url });
      const t = 'wc.gc';
      await direct.append(
        t,
        range(1, 20).map((n) => ({ data: n })),
      );
      const reasons: string[] = [];
      const w = viaProxy.watch({ topics: { [t]: {} }, onReconnect: (e) => reasons.push(`${e.status}:${e.code}`) });
      const seen: number[] = [];
      const done = (async () => {
        for await (const ev of w) if (ev.type === 'record') seen.push(ev.record.$seq);
      })();
      await until('the backlog', () => seen.length === 20);
      const wid1 = w.wid;

      // The network goes down; the session idles past its TTL and is collected by the next POST.
      proxy.hold(true);
      assert.ok(proxy.dropAll() >= 1);
      await direct.append(
        t,
        range(21, 40).map((n) => ({ data: n })),
      );
      await sleep(500);
      await direct.createWatch({ topics: { [t]: {} } }); // runs the lazy GC
      proxy.hold(false);

      await until('the records appended while away', () => seen.length >= 40);
      await direct.append(
        t,
        range(41, 50).map((n) => ({ data: n })),
      );
      await until('live records after the re-created session', () => seen.length >= 50);
      await sleep(200);
      w.close();
      await done;
      assert.deepEqual(seen, range(1, 50));
      assert.ok(reasons.includes('404:not_found'), `the stream open found the session gone: ${reasons}`);
      assert.notEqual(w.wid, wid1);
      const posts = proxy.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/v0/watch'));
      assert.equal(posts.length, 2, 'created, then re-created once');
      assert.match(posts[1]!.path, /lenient=true/);
    } finally {
      await proxy.close();
    }
  },
);

test(
  'frames lost in flight when a stream drops are delivered again: the reconnect rewinds with Last-Event-ID',
  { timeout: 60_000 },
  async () => {
    const srv = await server();
    const proxy = await startTcpProxy(srv.port);
    try {
      const direct = new Spool({ url: srv.url });
      const t = 'wl.lost';
      await direct.append(
        t,
        range(1, 10).map((n) => ({ data: n })),
      );
      const w = new Spool({ url: proxy.url }).watch({ topics: { [t]: {} } });
      const seen: number[] = [];
      const done = (async () => {
        for await (const ev of w) if (ev.type === 'record') seen.push(ev.record.$seq);
      })();
      await until('the backlog', () => seen.length === 10);
      // The server writes 11..20 on the stream (its session cursor moves to 20), the client never
      // sees them, then the connection breaks.
      proxy.blackhole(true);
      await direct.append(
        t,
        range(11, 20).map((n) => ({ data: n })),
      );
      await until('the server to write record 20', () => /"\$seq":20\b/.test(proxy.discarded()), 5000);
      proxy.dropAll();
      proxy.blackhole(false);
      await direct.append(
        t,
        range(21, 25).map((n) => ({ data: n })),
      );
      await until('records up to 25', () => seen.length >= 25);
      await sleep(200);
      w.close();
      await done;
      assert.deepEqual(seen, range(1, 25));
      const gets = proxy.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v0/watch/'));
      assert.equal(gets.length, 2);
      assert.equal(Buffer.from(gets[1]!.headers['last-event-id']!, 'base64url').toString(), `{"${t}":10}`);
    } finally {
      await proxy.close();
    }
  },
);

test('follow survives a restart too (long-poll diff from its cursor)', { timeout: 60_000 }, async () => {
  const first = await server();
  const spool = new Spool({ url: first.url });
  const t = 'fr.t';
  await spool.append(
    t,
    range(1, 10).map((n) => ({ data: n })),
  );
  const ctl = new AbortController();
  const seen: number[] = [];
  const done = (async () => {
    for await (const ev of spool.follow(t, { wait_ms: 1000, signal: ctl.signal, maxRetryDelayMs: 300 }))
      if (ev.type === 'record') seen.push(ev.record.$seq);
  })().catch((e: unknown) => {
    if (!(e instanceof SpoolError && e.code === 'aborted')) throw e;
  });
  await until('the backlog', () => seen.length === 10);
  assert.equal(await first.stop(), 0);
  const second = await server({}, { dataDir: first.dataDir, env: { SERVICE_PORT: String(first.port) } });
  await new Spool({ url: second.url }).append(
    t,
    range(11, 20).map((n) => ({ data: n })),
  );
  await until('records after the restart', () => seen.length >= 20);
  await sleep(200);
  ctl.abort();
  await done;
  assert.deepEqual(seen, range(1, 20));
});
