// The client library in a real browser: headless Chromium loads the built modules of src/client
// as ES modules (served from the API's own origin through a TCP proxy, since spool sends no CORS
// headers) and reads a watch with `for await`: the backlog, live records, a dropped connection it
// resumes from (Last-Event-ID), and records appended while it was away, each exactly once. This
// also proves the client loads without any Node built-in.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { startServer, killServersAfterFile, type Server } from '../helpers/server.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcpProxy.js';
import { CHROMIUM_PATH, launchChromium, type Browser } from '../helpers/browser.js';
import { Spool } from '../../src/client/index.js';

killServersAfterFile();

const here = path.dirname(fileURLToPath(import.meta.url));
/** dist/test/browser → dist/src/client */
const CLIENT_DIR = path.resolve(here, '../../src/client');

let srv: Server | undefined;
let proxy: TcpProxy | undefined;
let browser: Browser | undefined;
after(async () => {
  await browser?.close();
  await proxy?.close();
  await srv?.stop();
});

interface PageState {
  seqs: number[];
  events: string[];
  error?: string;
  done: boolean;
}

async function until(page: Page, what: string, ok: (s: PageState) => boolean, ms = 10_000): Promise<PageState> {
  const deadline = Date.now() + ms;
  for (;;) {
    const s: PageState = await page.evaluate(() => (globalThis as any).__state);
    if (s.error) assert.fail(`the page failed: ${s.error}`);
    if (ok(s)) return s;
    if (Date.now() > deadline)
      assert.fail(
        `timed out waiting for ${what}; page state: ${JSON.stringify({ ...s, seqs: `${s.seqs.length}, last ${s.seqs.at(-1)}` })}`,
      );
    await new Promise((r) => setTimeout(r, 25));
  }
}

const missing = fs.existsSync(CHROMIUM_PATH)
  ? false
  : `no Chromium at ${CHROMIUM_PATH} (apt-get install chromium, as .ci/run does, or set SPOOL_CHROMIUM)`;

test(
  'the client in headless Chromium reads a watch with for-await and resumes after a dropped connection',
  { timeout: 60_000, skip: missing },
  async () => {
    srv = await startServer({ env: { SERVICE_WORKERS: '1' } });
    proxy = await startTcpProxy(srv.port);
    browser = await launchChromium();
    const api = new Spool({ url: srv.url });
    const t = 'browser-client';
    const append = async (a: number, b: number) => {
      const r = await api.append(
        t,
        Array.from({ length: b - a + 1 }, (_, i) => ({ data: { n: a + i } })),
      );
      assert.equal(r.last_seq, b);
    };
    await append(1, 30);

    const page = await browser.context.newPage();
    // The built client, served at /client/ on the API's origin.
    await page.route(`${proxy.url}/client/**`, async (route) => {
      const file = path.join(CLIENT_DIR, new URL(route.request().url()).pathname.slice('/client/'.length));
      if (!file.startsWith(CLIENT_DIR) || !fs.existsSync(file)) return route.fulfill({ status: 404, body: 'not found' });
      return route.fulfill({ status: 200, contentType: 'text/javascript', body: fs.readFileSync(file, 'utf8') });
    });
    assert.equal((await page.goto(`${proxy.url}/v0/health`))?.status(), 200);

    await page.evaluate(async (topic: string) => {
      const g = globalThis as any;
      const st = { seqs: [] as number[], events: [] as string[], error: undefined as string | undefined, done: false };
      g.__state = st;
      const origin: string = g.location.origin;
      const { Spool, SpoolError } = await import(`${origin}/client/index.js`);
      const spool = new Spool({ url: origin });
      const w = spool.watch({ topics: { [topic]: {} }, heartbeat_ms: 1000 });
      g.__watch = w;
      (async () => {
        try {
          for await (const ev of w) {
            st.events.push(ev.type);
            if (ev.type === 'record') st.seqs.push(ev.record.$seq);
          }
        } catch (e: any) {
          st.error = `${e instanceof SpoolError ? `SpoolError ${e.code}` : 'Error'}: ${e.message}`;
        }
        st.done = true;
      })();
    }, t);

    let s = await until(page, 'the backlog and caught-up', (x) => x.seqs.length === 30 && x.events.includes('caught-up'));
    await append(31, 40);
    s = await until(page, 'live records', (x) => x.seqs.length === 40);

    // The network drops and stays down while 41..60 are appended; then it comes back.
    proxy.hold(true);
    assert.ok(proxy.dropAll() >= 1, 'the stream was open');
    await append(41, 60);
    await new Promise((r) => setTimeout(r, 300));
    proxy.hold(false);
    s = await until(page, 'the records appended while away', (x) => x.seqs.length >= 60);
    await append(61, 70);
    s = await until(page, 'live records after the reconnect', (x) => x.seqs.length >= 70);
    await new Promise((r) => setTimeout(r, 300));
    s = await page.evaluate(() => (globalThis as any).__state);

    assert.deepEqual(
      s.seqs,
      Array.from({ length: 70 }, (_, i) => i + 1),
      'seqs 1..70 exactly once, in order',
    );
    const gets = proxy.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v0/watch/'));
    assert.equal(gets.length, 2, 'one stream, one reconnect');
    assert.equal(
      Buffer.from(gets[1]!.headers['last-event-id']!, 'base64url').toString(),
      `{"${t}":40}`,
      'resumed from the last record handed out',
    );
    await page.evaluate(() => (globalThis as any).__watch.close());
    s = await until(page, 'the iteration to end on close()', (x) => x.done);
    assert.equal(s.error, undefined);
  },
);
