// SERVICE_REQUEST_TIMEOUT_MS (docs/OPERATIONS.md "Settings in detail"): a request whose body stops
// arriving is answered 400 and its connection closed once the timeout passes, which gives its
// key's in-flight slot back (before, a stalled upload held it until the client closed the
// socket); a long-poll received whole waits out its wait_ms however long the timeout is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { killServersAfterFile, startServer } from '../helpers/server.js';

killServersAfterFile();

const KEY = 'k-timeout-1';
const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

test('a stalled upload is cut off at the request timeout and its in-flight slot comes back', async () => {
  const srv = await startServer({
    env: { SERVICE_REQUEST_TIMEOUT_MS: '1000', SERVICE_API_KEYS: KEY, SERVICE_MAX_INFLIGHT_PER_KEY: '1' },
  });
  try {
    const put = await fetch(`${srv.url}/v0/topics/rt`, { method: 'PUT', headers: auth, body: '{}' });
    assert.equal(put.status, 201);
    // Headers and half a body, then nothing.
    const stalled = net.connect(srv.port, '127.0.0.1');
    let answer = '';
    stalled.on('data', (d) => (answer += d));
    const closed = new Promise<void>((r) => stalled.on('close', () => r()));
    stalled.on('error', () => undefined);
    stalled.write(
      `POST /v0/topics/rt HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\ncontent-type: application/json\r\ncontent-length: 40\r\n\r\n{"records":`,
    );
    await new Promise((r) => setTimeout(r, 300));
    const held = await fetch(`${srv.url}/v0/topics/rt?touch=false`, { headers: auth });
    assert.equal(held.status, 429, "the stalled upload holds the key's one slot");
    const t0 = Date.now();
    await closed;
    assert.ok(Date.now() - t0 < 5000, 'cut off within the timeout and a check');
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(answer, /did not arrive whole within 1000 ms/);
    // The server gives the slot back as it handles the close, which the client may see first.
    let after = await fetch(`${srv.url}/v0/topics/rt?touch=false`, { headers: auth });
    for (let i = 0; i < 40 && after.status === 429; i++) {
      await new Promise((r) => setTimeout(r, 50));
      after = await fetch(`${srv.url}/v0/topics/rt?touch=false`, { headers: auth });
    }
    assert.equal(after.status, 200, 'the slot is back');
    assert.equal(((await after.json()) as { count: number }).count, 0, 'nothing of the stalled body appended');

    // A long-poll received whole is not timed: it waits out its 2.5 s and answers 200.
    const started = Date.now();
    const poll = await fetch(`${srv.url}/v0/topics/rt/diff`, { method: 'POST', headers: auth, body: '{"from_seq":0,"wait_ms":2500}' });
    assert.equal(poll.status, 200);
    assert.ok(Date.now() - started >= 2400, `waited ${Date.now() - started} ms`);
  } finally {
    await srv.stop();
  }
});
