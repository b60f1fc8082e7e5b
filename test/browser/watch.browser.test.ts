// A real browser follows a topic (docs/API.md "POST /v0/watch", "GET /v0/watch/:wid"; docs/WATCH.md "Resume"): an EventSource in
// headless Chromium reads the backlog and live pushes, loses its connection with frames in flight,
// reconnects by itself (retry: 2000, Last-Event-ID) and ends with every record exactly once, in
// order. The page is served through a TCP proxy in front of spool (same origin as the API, since
// spool sends no CORS headers); the proxy is how the test breaks the network.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { startServer, client, killServersAfterFile, type Server } from '../helpers/server.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcpProxy.js';
import { launchChromium, type Browser } from '../helpers/browser.js';

killServersAfterFile();

let srv: Server | undefined;
let proxy: TcpProxy | undefined;
let browser: Browser | undefined;
after(async () => {
  await browser?.close();
  await proxy?.close();
  await srv?.stop();
});

/** What the page has seen, as kept by the script installed by `follow` below. */
interface PageState {
  opens: number;
  /** Connection errors (plain `error` events), with the readyState right after each. */
  connErrors: number[];
  /** Server `error` frames (MessageEvents named error). */
  errorFrames: string[];
  frames: { topic: string; from_seq: number; to_seq: number; head_seq: number; seqs: number[]; id: string }[];
  caughtUp: { topic: string; head_seq: number; id: string }[];
  seqs: number[];
  lastEventId: string;
}

async function state(page: Page): Promise<PageState> {
  return page.evaluate(() => (globalThis as any).__watch);
}

/** Polls the page state until `ok` holds; on timeout fails with the state it last saw. */
async function until(page: Page, what: string, ok: (s: PageState) => boolean, timeoutMs = 8000): Promise<PageState> {
  const deadline = Date.now() + timeoutMs;
  let s = await state(page);
  while (!ok(s)) {
    if (Date.now() > deadline) {
      const brief = {
        ...s,
        frames: s.frames.map((f) => `${f.from_seq}->${f.to_seq}`),
        seqs: `${s.seqs.length} seqs, last ${s.seqs.at(-1)}`,
      };
      assert.fail(
        `timed out after ${timeoutMs} ms waiting for ${what}; page state: ${JSON.stringify(brief)}\nserver stderr:\n${srv?.stderr().slice(-2000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 25));
    s = await state(page);
  }
  return s;
}

function decodeCursor(id: string): Record<string, number> {
  return JSON.parse(Buffer.from(id, 'base64url').toString('utf8'));
}

test(
  'EventSource in headless Chromium follows a topic, reconnects after a drop, resumes without loss or duplicates',
  { timeout: 30_000 },
  async () => {
    const started = Date.now();
    srv = await startServer({ env: { SERVICE_WORKERS: '1' } });
    const api = client(srv.url);
    proxy = await startTcpProxy(srv.port);
    browser = await launchChromium();
    const page = await browser.context.newPage();

    const t = 'browser-follow';
    const append = async (from: number, to: number) => {
      const records = [];
      for (let i = from; i <= to; i++) records.push({ data: { n: i } });
      const r = await api.post(`/v0/topics/${t}`, { records });
      assert.ok(r.status === 200 || r.status === 201, `append ${from}..${to}: ${r.status} ${r.text}`);
      assert.equal(r.body.last_seq, to, `append ${from}..${to}: ${r.text}`);
    };

    // 1..50 are the backlog.
    await append(1, 50);

    // The page's origin is the proxy, so fetch and EventSource are same-origin with the API.
    const nav = await page.goto(`${proxy.url}/v0/health`);
    assert.equal(nav?.status(), 200, 'health page through the proxy');

    // The page creates the session and follows it; every event lands in globalThis.__watch.
    const created = await page.evaluate(async (topic: string) => {
      const g = globalThis as any;
      const r = await fetch('/v0/watch', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ topics: { [topic]: { from_seq: 0 } } }),
      });
      const body: any = await r.json();
      if (r.status !== 200) return { status: r.status, body };
      const st: any = { opens: 0, connErrors: [], errorFrames: [], frames: [], caughtUp: [], seqs: [], lastEventId: '' };
      g.__watch = st;
      const es = new g.EventSource(body.stream_url);
      g.__es = es;
      es.addEventListener('open', () => st.opens++);
      es.addEventListener('error', (e: any) => {
        if (typeof e.data === 'string') st.errorFrames.push(e.data);
        else st.connErrors.push(es.readyState);
      });
      es.addEventListener('record', (e: any) => {
        const d = JSON.parse(e.data);
        const seqs = d.records.map((x: any) => x.$seq);
        st.frames.push({ topic: d.topic, from_seq: d.from_seq, to_seq: d.to_seq, head_seq: d.head_seq, seqs, id: e.lastEventId });
        st.seqs.push(...seqs);
        st.lastEventId = e.lastEventId;
      });
      es.addEventListener('caught-up', (e: any) => {
        const d = JSON.parse(e.data);
        st.caughtUp.push({ topic: d.topic, head_seq: d.head_seq, id: e.lastEventId });
        st.lastEventId = e.lastEventId;
      });
      return { status: r.status, body };
    }, t);
    assert.equal(created.status, 200, `POST /v0/watch from the page: ${JSON.stringify(created.body)}`);
    const wid: string = created.body.wid;

    // Backlog: 1..50 then caught-up at 50.
    let s = await until(page, 'the backlog and caught-up', (x) => x.seqs.length >= 50 && x.caughtUp.length >= 1);
    assert.equal(s.opens, 1);
    assert.deepEqual(s.caughtUp[0].topic, t);
    assert.equal(s.caughtUp[0].head_seq, 50);

    // Live pushes: 51..60 while connected.
    await append(51, 60);
    s = await until(page, 'live records 51..60', (x) => x.seqs.length >= 60);
    assert.deepEqual(decodeCursor(s.lastEventId), { [t]: 60 }, 'the last id names the cursor after 60');

    // Frames in flight are lost: the server writes 61..70 (and the kernel acknowledges them), but
    // the proxy discards them before the browser reads them. Then the connection drops.
    proxy.blackhole(true);
    await append(61, 70);
    const deadline = Date.now() + 5000;
    while (!/"\$seq":70\b/.test(proxy.discarded())) {
      assert.ok(Date.now() < deadline, `server never wrote record 70 on the stream; discarded: ${proxy.discarded().slice(-500)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const streamGets = () => proxy!.requests.filter((r) => r.method === 'GET' && r.path.startsWith(`/v0/watch/${wid}`));
    assert.equal(streamGets().length, 1, 'one stream request so far');
    proxy.hold(true); // the network stays down until 71..100 are in
    const dropped = proxy.dropAll();
    proxy.blackhole(false);
    assert.ok(dropped >= 1, 'the stream connection was open when dropped');
    const droppedAt = Date.now();

    // While the browser is disconnected (it waits out `retry: 2000`), 71..100 are appended.
    await append(71, 100);
    const appendedAt = Date.now();
    proxy.hold(false);

    // The browser reconnects by itself and resumes from its Last-Event-ID (cursor 60), so 61..70,
    // which the server had already written on the dead connection, arrive once more, then 71..100.
    s = await until(
      page,
      'the reconnect and records up to 100',
      (x) => x.opens >= 2 && x.seqs.at(-1) === 100 && x.caughtUp.length >= 2,
      10_000,
    );

    const gets = streamGets();
    assert.equal(gets.length, 2, `two stream requests (first connect and reconnect): ${JSON.stringify(gets)}`);
    assert.equal(gets[0].headers['last-event-id'], undefined, 'the first connect carries no Last-Event-ID');
    const lei = gets[1].headers['last-event-id'];
    assert.ok(lei, `the reconnect carries Last-Event-ID: ${JSON.stringify(gets[1].headers)}`);
    assert.deepEqual(decodeCursor(lei), { [t]: 60 }, 'Last-Event-ID is the cursor of the last frame the browser read');
    assert.ok(
      gets[1].at >= appendedAt,
      `the reconnect came after 71..100 were appended (dropped at ${droppedAt}, appended by ${appendedAt}, reconnect ${gets[1].at})`,
    );

    // Give stray duplicates a moment to show up before the exactness checks.
    await new Promise((r) => setTimeout(r, 300));
    s = await state(page);

    const expected = Array.from({ length: 100 }, (_, i) => i + 1);
    assert.deepEqual(s.seqs, expected, 'seqs 1..100 exactly once, in order');
    assert.equal(s.opens, 2, 'open fired twice (connect and reconnect)');
    assert.ok(s.connErrors.length >= 1, 'the drop surfaced as a connection error');
    assert.equal(s.connErrors[0], 0, 'after the drop the EventSource was CONNECTING (it reconnects), not CLOSED');
    assert.deepEqual(s.errorFrames, [], 'no server error frames');
    // Frames chain: each from_seq is the previous to_seq, from 0 to 100.
    assert.equal(s.frames[0].from_seq, 0);
    for (let i = 1; i < s.frames.length; i++)
      assert.equal(s.frames[i].from_seq, s.frames[i - 1].to_seq, `frame ${i} continues frame ${i - 1}`);
    assert.equal(s.frames.at(-1)!.to_seq, 100);
    assert.equal(s.caughtUp.at(-1)!.head_seq, 100, 'caught up again at 100 after the reconnect');
    assert.deepEqual(decodeCursor(s.lastEventId), { [t]: 100 });

    const es = await page.evaluate(() => (globalThis as any).__es.readyState);
    assert.equal(es, 1, 'the EventSource is OPEN at the end');
    await page.evaluate(() => (globalThis as any).__es.close());
    assert.ok(Date.now() - started < 30_000);
  },
);
