// The status page (GET /, static/status.html) in headless Chromium: it shows health, readiness,
// a topic and a queue the test created, and tails a topic live over the watch API; a screenshot
// is taken (its path is printed as a diagnostic; SPOOL_SCREENSHOT_DIR keeps it).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, killServersAfterFile, tempDir, type Server } from '../helpers/server.js';
import { launchChromium, type Browser } from '../helpers/browser.js';

killServersAfterFile();

let srv: Server | undefined;
let browser: Browser | undefined;
after(async () => {
  await browser?.close();
  await srv?.stop();
});

const JSON_CT = { 'content-type': 'application/json' };

test('the status page shows health, topics and queues, and tails a topic live', async (t) => {
  srv = await startServer();
  const url = srv.url;
  await fetch(`${url}/v0/topics/ui.orders`, { method: 'PUT', headers: JSON_CT, body: '{"durability":"fsync","cap_records":1000}' });
  await fetch(`${url}/v0/topics/ui.orders`, {
    method: 'POST',
    headers: JSON_CT,
    body: '{"records":[{"data":{"id":1}},{"data":{"id":2}}]}',
  });
  await fetch(`${url}/v0/topics/ui.jobs`, { method: 'PUT', headers: JSON_CT, body: '{"type":"queue"}' });
  await fetch(`${url}/v0/topics/ui.jobs`, { method: 'POST', headers: JSON_CT, body: '{"records":[{"data":"job"}]}' });

  browser = await launchChromium();
  const page = await browser.context.newPage();
  await page.goto(`${url}/`);
  await page.waitForSelector('#topics tr[data-topic="ui.orders"]', { timeout: 15_000 });
  assert.equal(await page.textContent('#health'), 'ok');
  assert.equal(await page.textContent('#ready'), 'ready');
  const row = (await page.textContent('#topics tr[data-topic="ui.orders"]'))!;
  assert.match(row, /ui\.orders\s*log\s*fsync\s*2\s*2/);
  assert.match(row, /1000 records \(old\)/);
  const q = (await page.textContent('#queues tr[data-topic="ui.jobs"]'))!;
  assert.match(q, /^ui\.jobs1/, 'one ready job');
  // Read from spool_topic_queue_oldest_ready_age_seconds and spool_topic_queue_dead_lettered_total.
  assert.match(q, /^ui\.jobs10\d+\.\d s0$/, `ready, in flight, oldest ready age in seconds, dead-lettered: ${q}`);
  // Who holds what: a claimed job shows in the lease table with its holder.
  await fetch(`${url}/v0/topics/ui.jobs/claim`, { method: 'POST', headers: JSON_CT, body: '{"node":"ui-worker","lease_ms":600000}' });
  await page.waitForSelector('#leases tr[data-topic="ui.jobs"]', { timeout: 15_000 });
  assert.match((await page.textContent('#leases tr[data-topic="ui.jobs"]'))!, /^ui\.jobs1ui-worker1in \d+\.\d sclaim$/);

  await page.click('#topics tr[data-topic="ui.orders"] button');
  await page.waitForFunction(() => (globalThis as any).document.body.dataset.tailing === 'ui.orders');
  // Appends keep coming until the page shows one (the stream may open after the first).
  let shown = false;
  for (let i = 3; i < 50 && !shown; i++) {
    await fetch(`${url}/v0/topics/ui.orders`, {
      method: 'POST',
      headers: JSON_CT,
      body: JSON.stringify({ records: [{ data: { live: i } }] }),
    });
    shown = await page
      .waitForFunction(() => /"live":\d+/.test((globalThis as any).document.getElementById('tail').textContent ?? ''), undefined, {
        timeout: 300,
      })
      .then(
        () => true,
        () => false,
      );
  }
  assert.ok(shown, `the live tail shows a new record: ${await page.textContent('#tail')}`);
  // SPOOL_SCREENSHOT_DIR keeps it (CI artifacts); otherwise it goes with the test's temp dirs.
  const shot = path.join(process.env.SPOOL_SCREENSHOT_DIR ?? tempDir('spool-status-'), 'status.png');
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(fs.statSync(shot).size > 1000, 'a screenshot was taken');
  t.diagnostic(`screenshot: ${shot}`);
});

test('on a server with API keys the page asks for one, then shows topics and tails over ?token=', async () => {
  const KEY = 'sk-status-page-1';
  const keyed = await startServer({ env: { SERVICE_API_KEYS: `${KEY}:rw` } });
  try {
    const headers = { ...JSON_CT, authorization: `Bearer ${KEY}` };
    assert.equal(
      (await fetch(`${keyed.url}/v0/topics/ui.keyed`, { method: 'POST', headers, body: '{"records":[{"data":1}]}' })).status,
      201,
    );
    browser ??= await launchChromium();
    const page = await browser.context.newPage();
    await page.goto(`${keyed.url}/`);
    await page.waitForSelector('#keyForm:not([hidden])', { timeout: 15_000 });
    assert.equal(await page.$('#topics tr[data-topic="ui.keyed"]'), null, 'nothing listed without a key');
    await page.fill('#key', KEY);
    await page.click('#keyForm button');
    await page.waitForSelector('#topics tr[data-topic="ui.keyed"]', { timeout: 15_000 });
    await page.click('#topics tr[data-topic="ui.keyed"] button');
    let shown = false;
    for (let i = 0; i < 50 && !shown; i++) {
      await fetch(`${keyed.url}/v0/topics/ui.keyed`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ records: [{ data: { keyed: i } }] }),
      });
      shown = await page
        .waitForFunction(() => /"keyed":\d+/.test((globalThis as any).document.getElementById('tail').textContent ?? ''), undefined, {
          timeout: 300,
        })
        .then(
          () => true,
          () => false,
        );
    }
    assert.ok(shown, 'the live tail works with the key as ?token=');
    await page.close();
  } finally {
    await keyed.stop();
  }
});
