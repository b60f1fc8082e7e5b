// Auth at startup and from the shipped client and CLI (docs/API.md "Authentication"; docs/ARCHITECTURE.md "Startup and shutdown"):
// a malformed key entry and a non-loopback bind without keys refuse to start (the message names
// the bad token, never the secret); SERVICE_ALLOW_INSECURE_NO_AUTH overrides; SERVICE_PROBE_AUTH
// puts the probes behind a key; the client's `key` and the CLI's `--key` authenticate.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startServer, killServersAfterFile, CLI, req, type Server } from '../helpers/server.js';
import { Spool } from '../../src/client/index.js';

killServersAfterFile();
const servers: Server[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

async function refused(env: Record<string, string>): Promise<string> {
  try {
    servers.push(await startServer({ env, waitReady: false }));
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the server started');
}

test('an unknown scope refuses to start, naming the token and not the secret', async () => {
  const msg = await refused({ SERVICE_API_KEYS: 'ok-key, sec-ret-77:reed' });
  assert.match(msg, /exited early \(code 2,/); // a bad setting: exit 2
  assert.match(msg, /unknown scope \\"reed\\"/); // inside the JSON log line
  assert.ok(!msg.includes('sec-ret-77') && !msg.includes('ok-key'));
});

test('a non-loopback bind without keys refuses; the override or keys let it start', async () => {
  const msg = await refused({ SERVICE_HOST: '0.0.0.0' });
  assert.match(msg, /refusing to bind 0\.0\.0\.0 without SERVICE_API_KEYS/);
  const a = await startServer({ env: { SERVICE_HOST: '0.0.0.0', SERVICE_ALLOW_INSECURE_NO_AUTH: '1', SERVICE_WORKERS: '1' } });
  servers.push(a);
  assert.equal((await req(a.url, 'GET', '/v0/topics')).status, 200, 'dev mode: no key needed');
  const b = await startServer({ env: { SERVICE_HOST: '0.0.0.0', SERVICE_API_KEYS: 'zz-secret-1', SERVICE_WORKERS: '1' } });
  servers.push(b);
  assert.equal((await req(b.url, 'GET', '/v0/topics')).status, 401);
  assert.ok(!b.stderr().includes('zz-secret-1'));
});

test('a key in ?token= never reaches the log: not in the 503 line while recovering, nor at debug', async () => {
  const srv = await startServer({
    env: { SERVICE_API_KEYS: 'tok-secret-42', SERVICE_TEST_RECOVERY_DELAY_MS: '2000', SERVICE_LOG_LEVEL: 'debug', SERVICE_WORKERS: '1' },
    waitReady: false,
  });
  servers.push(srv);
  const early = await req(srv.url, 'GET', '/v0/topics/q/work?node=n&token=tok-secret-42', undefined, { accept: 'text/event-stream' });
  assert.equal(early.status, 503, 'still recovering');
  const deadline = Date.now() + 30_000;
  while ((await req(srv.url, 'GET', '/v0/ready')).status !== 200) {
    assert.ok(Date.now() < deadline, 'ready');
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal((await req(srv.url, 'GET', '/v0/topics/x?token=tok-secret-42')).status, 401, 'a token on a route that takes none');
  await new Promise((r) => setTimeout(r, 200));
  const out = srv.stderr();
  assert.match(out, /answered 503/, 'the recovery refusal was logged');
  assert.match(out, /token=<redacted>/);
  assert.ok(!out.includes('tok-secret-42'), 'the key is not in the log');
});

test('SERVICE_API_KEYS whose every entry lacks a secret: auth stays off, and the start warns', async () => {
  const srv = await startServer({ env: { SERVICE_API_KEYS: ':r, :w:tenant.', SERVICE_WORKERS: '1' } });
  servers.push(srv);
  assert.equal((await req(srv.url, 'GET', '/v0/topics')).status, 200, 'no key needed: every entry was skipped');
  assert.match(srv.stderr(), /SERVICE_API_KEYS is set, but none of its entries has a secret.*auth is OFF/);
});

test('dev mode ignores the Authorization header', async () => {
  const a = servers.find((s) => s.stderr().includes('listening'))!;
  assert.equal((await req(a.url, 'GET', '/v0/topics', undefined, { authorization: 'Bearer whatever' })).status, 200);
});

test('probes are open unless SERVICE_PROBE_AUTH; /v0/metrics always needs read', async () => {
  const open = await startServer({ env: { SERVICE_API_KEYS: 'p-1:r, p-2:w', SERVICE_WORKERS: '1' } });
  servers.push(open);
  for (const p of ['/v0/health', '/healthz', '/v0/ready', '/readyz']) assert.equal((await req(open.url, 'GET', p)).status, 200, p);
  assert.equal((await req(open.url, 'GET', '/v0/metrics')).status, 401);
  assert.equal((await req(open.url, 'GET', '/v0/metrics', undefined, { authorization: 'Bearer p-2' })).status, 403);
  assert.equal((await req(open.url, 'GET', '/v0/metrics', undefined, { authorization: 'Bearer p-1' })).status, 200);

  const closed = await startServer({
    env: { SERVICE_API_KEYS: 'p-1:r, p-2:w', SERVICE_PROBE_AUTH: '1', SERVICE_WORKERS: '1' },
    waitReady: false,
  });
  servers.push(closed);
  const deadline = Date.now() + 30_000;
  while ((await req(closed.url, 'GET', '/v0/ready', undefined, { authorization: 'Bearer p-2' })).status !== 200) {
    assert.ok(Date.now() < deadline, 'ready');
    await new Promise((r) => setTimeout(r, 20));
  }
  for (const p of ['/v0/health', '/healthz', '/v0/ready', '/readyz']) {
    const r = await req(closed.url, 'GET', p);
    assert.equal(r.status, 401, p);
    assert.equal(r.body.error.code, 'unauthorized');
    assert.equal((await req(closed.url, 'GET', p, undefined, { authorization: 'Bearer p-2' })).status, 200, `${p}: any scope`);
  }
  // The status page and the API description hold no data: open either way (the page asks for a key).
  for (const p of ['/', '/v0/openapi.json']) assert.equal((await req(closed.url, 'GET', p)).status, 200, p);
});

test('the client (key option) and the CLI (--key, SPOOL_API_KEY) authenticate', async () => {
  const srv = await startServer({ env: { SERVICE_API_KEYS: 'cli-key-9:rw+a, ro-key-8:r', SERVICE_WORKERS: '1' } });
  servers.push(srv);
  const spool = new Spool({ url: srv.url, key: 'cli-key-9' });
  await spool.append('cl.a', [{ data: { n: 1 } }]);
  const d = await spool.diff('cl.a', {});
  assert.equal(d.records.length, 1);
  // A watch stream through the client: POST and GET both carry the key.
  const ac = new AbortController();
  for await (const ev of spool.watch({ topics: { 'cl.a': {} }, signal: ac.signal })) {
    if (ev.type === 'record') {
      assert.equal(ev.topic, 'cl.a');
      ac.abort();
      break;
    }
  }
  await assert.rejects(
    new Spool({ url: srv.url, key: 'ro-key-8' }).append('cl.a', [{ data: 2 }]),
    (e: { status?: number; code?: string }) => e.status === 403 && e.code === 'forbidden',
  );
  await assert.rejects(new Spool({ url: srv.url }).diff('cl.a', {}), (e: { status?: number }) => e.status === 401);

  const run = (args: string[], env: Record<string, string> = {}) =>
    spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, SPOOL_URL: srv.url, ...env }, timeout: 30_000 });
  let r = spawnSync(process.execPath, [CLI, 'append', 'cl.b', '--key', 'cli-key-9'], {
    input: '{"x":1}\n',
    encoding: 'utf8',
    env: { ...process.env, SPOOL_URL: srv.url },
    timeout: 30_000,
  });
  assert.equal(r.status, 0, r.stderr);
  r = run(['topics', 'get', 'cl.b', '--json'], { SPOOL_API_KEY: 'ro-key-8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).count, 1);
  r = run(['topics', 'get', 'cl.b']);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /401|unauthorized/);
  assert.ok(!r.stderr.includes('cli-key-9'));
});
