// The data-dir lock across PID namespaces (docs/ARCHITECTURE.md "Other decisions"): two
// containers on one volume both run spool as pid 1, so a pid in LOCK proves nothing there. A
// second server in another namespace is refused while the first one's lock is touched; once the
// first is SIGKILLed its lock goes stale, and a server started then waits that out and takes the
// directory over with every acknowledged record. Needs root (unshare).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { CLI, client, killServersAfterFile, startServer, tempDir } from '../helpers/server.js';

killServersAfterFile();

const UNSHARE = ['unshare', '-p', '-f', '--mount-proc', '--kill-child'];
const canUnshare =
  process.getuid?.() !== 0
    ? 'needs root (unshare)'
    : spawnSync('unshare', ['-p', '-f', '--mount-proc', 'true']).status === 0
      ? undefined
      : 'cannot make a PID namespace here';

test(
  'a second server in another PID namespace is refused; a dead one is taken over once stale',
  { skip: canUnshare, timeout: 90_000 },
  async () => {
    const dataDir = tempDir();
    const env = { SERVICE_WORKERS: '1' };
    const first = await startServer({ dataDir, env, prefix: UNSHARE });
    const c = client(first.url);
    assert.equal((await c.put('/v0/topics/x', { durability: 'fsync' })).status, 201);
    assert.equal((await c.post('/v0/topics/x', { records: [{ data: 'first' }] })).status, 200);

    // The second one, pid 1 too in its own namespace: refused once it waited out the stale time.
    const second = spawn(UNSHARE[0]!, [...UNSHARE.slice(1), process.execPath, CLI, 'serve'], {
      env: { ...process.env, ...env, SERVICE_PORT: '0', SERVICE_DATA_DIR: dataDir, SERVICE_PORT_FILE: `${dataDir}-port2` },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    second.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((r) => second.once('exit', r));
    assert.notEqual(code, 0, stderr);
    assert.match(stderr, /in use by process 1 in another PID namespace/);
    // The first one went on serving and writing.
    assert.equal((await c.post('/v0/topics/x', { records: [{ data: 'still' }] })).status, 200);

    await first.kill();
    const t0 = Date.now();
    const third = await startServer({ dataDir, env, prefix: UNSHARE });
    process.stdout.write(`# the dead holder's lock was taken over after ${Date.now() - t0} ms\n`);
    const r = await client(third.url).post('/v0/topics/x/diff', { from_seq: 0 });
    assert.deepEqual(
      r.body.records.map((x: { data: string }) => x.data),
      ['first', 'still'],
    );
    await third.kill();
  },
);
