// Logs (src/log.ts, src/cli/serve.ts): JSON lines on stderr, one per request at debug with the
// request id echoed, refused starts (a bad setting, a busy port) at error with exit 2, unknown
// settings warned about, the shutdown summary, a drain out of grace closing what is open, a stop asked for
// before the port opens drained all the same, and no key or record data ever logged.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, tempDir, CLI } from '../helpers/server.js';

interface Line {
  level: string;
  msg: string;
  [k: string]: unknown;
}

function parseLines(stderr: string): Line[] {
  return stderr
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('(node:') && !l.startsWith('(Use `node'))
    .map((l) => {
      try {
        return JSON.parse(l) as Line;
      } catch {
        assert.fail(`not a JSON log line: ${l}`);
      }
    });
}

const SECRET_DATA = 'record-secret-7f3a9c';

test('requests at debug carry the request id; record data is never logged; the shutdown summary', async () => {
  const s = await startServer({ env: { SERVICE_LOG_LEVEL: 'debug', SERVICE_DATA_DIRR: 'typo' } });
  const put = await fetch(`${s.url}/v0/topics/logs.t`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', 'x-request-id': 'req-abc.1' },
    body: '{}',
  });
  assert.equal(put.headers.get('x-request-id'), 'req-abc.1', 'echoed');
  const app = await fetch(`${s.url}/v0/topics/logs.t`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer tok-secret-1' },
    body: JSON.stringify({ records: [{ data: { s: SECRET_DATA }, meta: { m: SECRET_DATA } }] }),
  });
  assert.equal(app.status, 200);
  assert.match(
    app.headers.get('x-request-id') ?? '',
    /^[0-9a-f]{8}-[0-9a-z]+$/,
    'one is made up when none was sent (process prefix, counter)',
  );
  const bad = await fetch(`${s.url}/v0/topics/a%2`, { headers: { 'x-request-id': 'bad-url' } });
  assert.equal(bad.status, 400);
  assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'invalid_request');
  assert.equal(await s.stop(), 0);
  const lines = parseLines(s.stderr());
  const req = lines.find((l) => l.req_id === 'req-abc.1');
  assert.ok(req, 'the request line carries the client id');
  assert.equal(req.level, 'debug');
  assert.equal(req.status, 201);
  assert.equal(req.route, '/v0/topics/:topic');
  const warn = lines.find((l) => l.level === 'warn' && l.setting === 'SERVICE_DATA_DIRR');
  assert.equal(warn?.closest, 'SERVICE_DATA_DIR');
  assert.ok(
    lines.find((l) => l.msg === 'effective config'),
    'effective config at start',
  );
  const stopped = lines.find((l) => l.msg === 'stopped');
  assert.ok(stopped, 'shutdown summary');
  assert.ok((stopped.requests as number) >= 2);
  // The readiness probes that found it recovering (startServer waits on them) are no errors.
  assert.equal(stopped.server_errors, 0);
  assert.doesNotMatch(s.stderr(), new RegExp(SECRET_DATA), 'record data never logged');
  assert.doesNotMatch(s.stderr(), /tok-secret-1/, 'tokens never logged');
});

test('SIGTERM before the port opens (recovery already running) drains and exits 0', async () => {
  const dir = tempDir();
  const proc = spawn(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, SERVICE_DATA_DIR: dir, SERVICE_PORT: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  let signalled = false;
  let listeningFirst = false;
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    // The effective config is logged as serve() starts, after its early signal handlers are in.
    if (!signalled && err.includes('"effective config"')) {
      signalled = true;
      listeningFirst = err.includes('"listening on');
      proc.kill('SIGTERM');
    }
  });
  const code = await exited;
  assert.ok(signalled, err);
  assert.equal(listeningFirst, false, 'the signal came before the port opened');
  assert.equal(code, 0, err);
  const lines = parseLines(err);
  assert.ok(
    lines.find((l) => l.msg === 'draining' && l.signal === 'SIGTERM'),
    'drained',
  );
  assert.ok(
    lines.find((l) => l.msg === 'stopped'),
    'shutdown summary',
  );
});

test("SIGTERM while the server's modules still load is kept, then drained: exit 0", async () => {
  const dir = tempDir();
  const marker = path.join(dir, 'serve-loading');
  // A module hook holds the load of the server's module (src/cli/serve.ts) for 3 s and says so
  // in a file: the signal lands while only src/cli.ts and the command parser have run.
  const hooks = `export async function load(url, ctx, next) {
    if (url.endsWith('/cli/serve.js')) {
      (await import('node:fs')).writeFileSync(${JSON.stringify(marker)}, '');
      await new Promise((r) => setTimeout(r, 3000));
    }
    return next(url, ctx);
  }`;
  const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`;
  const proc = spawn(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(register)}`, CLI, 'serve'], {
    env: { ...process.env, SERVICE_DATA_DIR: path.join(dir, 'data'), SERVICE_PORT: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<[number | null, string | null]>((resolve) => proc.once('exit', (code, sig) => resolve([code, sig])));
  for (let i = 0; i < 600 && !fs.existsSync(marker); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(fs.existsSync(marker), `the server's module was asked for: ${err}`);
  proc.kill('SIGTERM');
  const [code, sig] = await exited;
  assert.equal(sig, null, `not killed by the signal: ${err}`);
  assert.equal(code, 0, err);
  const lines = parseLines(err);
  assert.ok(
    lines.find((l) => l.msg === 'draining' && l.signal === 'SIGTERM'),
    err,
  );
  assert.ok(
    lines.find((l) => l.msg === 'stopped'),
    'shutdown summary',
  );
});

test(
  'a data dir whose subdirectories another user made is refused at the start (exit 2), naming the one',
  { skip: process.getuid?.() !== 0 && 'needs root to start a server as another user' },
  async () => {
    const dir = tempDir();
    fs.chmodSync(dir, 0o755);
    const data = path.join(dir, 'data');
    const s = await startServer({ dataDir: data }); // run once as root: wal/, meta/, ... are root's
    assert.equal(await s.stop(), 0);
    const NOBODY = 65534;
    fs.chownSync(data, NOBODY, NOBODY); // the top level is the service user's, what is inside is not
    const r = spawnSync(process.execPath, [CLI, 'serve'], {
      env: { ...process.env, SERVICE_DATA_DIR: data, SERVICE_PORT: '0' },
      uid: NOBODY,
      gid: NOBODY,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 2, r.stderr);
    const errors = parseLines(r.stderr).filter((l) => l.level === 'error' || l.level === 'fatal');
    assert.equal(errors.length, 1, r.stderr);
    assert.match(
      errors[0]!.msg,
      new RegExp(`cannot use ${data} \\(SERVICE_DATA_DIR\\): ${data}/\\w+: this process may not write there \\(EACCES\\)`),
    );
    assert.doesNotMatch(r.stderr, /"stack"/);
  },
);

test('a bad setting refuses the start at error with exit 2, and the key value is never printed', () => {
  const dir = tempDir();
  const r = spawnSync(process.execPath, [CLI, 'serve'], {
    env: {
      ...process.env,
      SERVICE_DATA_DIR: dir,
      SERVICE_PORT: '70000',
      SERVICE_ALLOW_INSECURE_NO_AUTH: 'yes',
      SERVICE_API_KEYS: 'sk-very-secret',
    },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 2, r.stderr);
  const lines = parseLines(r.stderr);
  const err = lines.find((l) => l.level === 'error');
  assert.ok(err, r.stderr);
  assert.match(err.msg, /SERVICE_PORT must be between 0 and 65535, got "70000"/);
  assert.match(err.msg, /SERVICE_ALLOW_INSECURE_NO_AUTH must be one of 1, 0, true, false, got "yes"/);
  assert.doesNotMatch(r.stderr, /sk-very-secret/);
  // A key entry with an unknown scope refuses the start; the message names the scope, never the key.
  const keys = spawnSync(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, SERVICE_DATA_DIR: dir, SERVICE_PORT: '0', SERVICE_API_KEYS: 'sk-very-secret:reed' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(keys.status, 2, keys.stderr);
  assert.ok(parseLines(keys.stderr).some((l) => l.level === 'error' && /refused to start/.test(l.msg)));
  assert.doesNotMatch(keys.stderr, /sk-very-secret/, 'the effective config masks the keys');
});

test('a busy port refuses the start in one line with exit 2, not a stack trace', async () => {
  const holder = net.createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  const port = (holder.address() as net.AddressInfo).port;
  try {
    const r = spawnSync(process.execPath, [CLI, 'serve'], {
      env: { ...process.env, SERVICE_DATA_DIR: tempDir(), SERVICE_HOST: '127.0.0.1', SERVICE_PORT: String(port), SERVICE_WORKERS: '1' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    // 2, not 1: the systemd unit's RestartPreventExitStatus=2 keeps it from restarting every 2 s.
    assert.equal(r.status, 2, r.stderr);
    const errors = parseLines(r.stderr).filter((l) => l.level === 'error');
    assert.equal(errors.length, 1, r.stderr);
    assert.equal(
      errors[0]!.msg,
      `refused to start: port ${port} on 127.0.0.1 is already in use by another process (SERVICE_HOST, SERVICE_PORT)`,
    );
    assert.equal(errors[0]!.err, undefined, 'no error object, so no stack');
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack frames');
  } finally {
    holder.close();
  }
});

/** `spool serve` that must not start: exits `status` without a stack frame; its error lines' messages. */
function refusedStart(env: Record<string, string | undefined>, status: number): string[] {
  const r = spawnSync(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, SERVICE_PORT: '0', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(r.status, status, r.stderr);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack frames');
  return parseLines(r.stderr)
    .filter((l) => l.level === 'error')
    .map((l) => l.msg);
}

test('a data dir or port file the server cannot use refuses the start in one line with exit 2', () => {
  const dir = tempDir();
  const file = path.join(dir, 'a-file');
  fs.writeFileSync(file, '');
  const cases = [
    {
      env: { SERVICE_DATA_DIR: file },
      msg: `refused to start: cannot use ${file} (SERVICE_DATA_DIR): a file is in the way of a directory (EEXIST)`,
    },
    {
      env: { SERVICE_DATA_DIR: path.join(dir, 'data'), SERVICE_PORT_FILE: path.join(dir, 'missing', 'port') },
      msg: `refused to start: cannot use ${path.join(dir, 'missing', 'port')} (SERVICE_PORT_FILE): a directory on its path is missing or cannot be made (ENOENT)`,
    },
    {
      env: { SERVICE_DATA_DIR: path.join(dir, 'data'), SERVICE_PORT_FILE: dir },
      msg: `refused to start: cannot use ${dir} (SERVICE_PORT_FILE): a directory is where the file should be (EISDIR)`,
    },
    {
      // Node's recursive mkdir retries for ever on /proc/x: refused before any thread starts.
      env: { SERVICE_DATA_DIR: path.join(dir, 'data'), SERVICE_TRACE_DIR: '/proc/spool-nope' },
      msg: 'refused to start: cannot use /proc/spool-nope (SERVICE_TRACE_DIR): a directory on its path is missing or cannot be made (ENOENT)',
    },
  ];
  for (const c of cases) assert.deepEqual(refusedStart(c.env, 2), [c.msg]);
  assert.deepEqual(
    fs.readdirSync(path.dirname(dir)).filter((n) => n.startsWith(`.${path.basename(dir)}.`)),
    [],
    "no port file's temp file left",
  );
});

test('damage found by recovery refuses the start in one line, without a stack', async () => {
  // A data dir whose router definitions fail their checksum (a bad disk, a hand edit).
  const srv = await startServer();
  for (const t of ['lg.a', 'lg.b']) assert.equal((await fetch(`${srv.url}/v0/topics/${t}`, { method: 'PUT' })).status, 201);
  const router = await fetch(`${srv.url}/v0/routers/lg.r`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ source: 'lg.a', dest: 'lg.b' }),
  });
  assert.equal(router.status, 201);
  assert.equal(await srv.stop(), 0);
  const file = path.join(srv.dataDir, 'meta', 'routers.json');
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace(/"crc":\d+/, '"crc":1'));
  assert.deepEqual(refusedStart({ SERVICE_DATA_DIR: srv.dataDir }, 1), [`refused to start: recovery failed: ${file}: checksum mismatch`]);
});

test('an entry of the wrong kind in the data dir refuses the start in one line naming it', async () => {
  const srv = await startServer();
  assert.equal((await fetch(`${srv.url}/v0/topics/lay.a`, { method: 'PUT' })).status, 201);
  assert.equal(await srv.stop(), 0);
  const wal = path.join(srv.dataDir, 'wal');
  fs.renameSync(wal, `${wal}.aside`);
  fs.writeFileSync(wal, 'x');
  assert.deepEqual(refusedStart({ SERVICE_DATA_DIR: srv.dataDir }, 1), [
    `refused to start: ${wal}: a file is where a directory should be (ENOTDIR)`,
  ]);
  fs.rmSync(wal);
  fs.renameSync(`${wal}.aside`, wal);
  const lock = path.join(srv.dataDir, 'LOCK');
  fs.rmSync(lock);
  fs.mkdirSync(lock);
  assert.deepEqual(refusedStart({ SERVICE_DATA_DIR: srv.dataDir }, 1), [
    'refused to start: LOCK: a directory is where a file should be (EISDIR)',
  ]);
});

test('a drain that runs out of grace closes what is still open, finishes (final checkpoint) and exits 0', async () => {
  const s = await startServer({ env: { SERVICE_SHUTDOWN_GRACE_MS: '300' } });
  try {
    const post = await fetch(`${s.url}/v0/topics/grace`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ records: [{ data: 1 }, { data: 2 }] }),
    });
    assert.equal(post.status, 201, 'created by the append');
    // A slow upload: the head and part of the body, the rest never sent, so the request never ends.
    const slow = net.connect(s.port, '127.0.0.1');
    await new Promise((r) => slow.once('connect', r));
    slow.write('POST /v0/topics/grace HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"records":[');
    const cut = new Promise((r) => slow.once('close', r));
    slow.on('error', () => {});
    await new Promise((r) => setTimeout(r, 100));
    const code = await s.stop();
    assert.equal(code, 0, s.stderr());
    await cut; // closed by the server, unanswered
    const lines = parseLines(s.stderr());
    const line = lines.find((l) => /ran out of its 300 ms grace/.test(l.msg));
    assert.ok(line, s.stderr());
    assert.equal(line.level, 'warn');
    assert.equal(line.phase, 'finishing HTTP requests');
    assert.ok((line.connections as number) >= 1, `connections ${line.connections}`);
    assert.ok(
      lines.some((l) => l.msg === 'stopped'),
      'the drain finished',
    );
  } finally {
    await s.kill(); // a failed check above leaves no server behind
  }
  // The final checkpoint was written: the next start replays no WAL frame, and has both records.
  const again = await startServer({ dataDir: s.dataDir });
  try {
    const recovered = parseLines(again.stderr()).find((l) => /^recovered /.test(l.msg));
    assert.equal(recovered?.frames, 0, again.stderr());
    const state = (await (await fetch(`${again.url}/v0/topics/grace`)).json()) as { count: number };
    assert.equal(state.count, 2);
  } finally {
    await again.stop();
  }
});
