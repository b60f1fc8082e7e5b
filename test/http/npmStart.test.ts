// `npm start` (README "Quick start"): npm runs the start script under `sh -c`, and a SIGTERM to
// npm must reach the server, which drains and exits, rather than stop npm and the shell and
// leave the server running without its supervisor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLI } from '../helpers/server.js';
import { spawnServer, waitForPort, waitForReady } from '../support/serverProcess.js';

const ROOT = path.resolve(path.dirname(CLI), '..');

test('a SIGTERM to `npm start` drains and stops the server', { timeout: 60_000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-npm-start-'));
  const spec = {
    // The build is `prestart`'s business; this test is about the start script itself.
    argv: ['npm', 'start', '--ignore-scripts', '--silent'],
    cwd: ROOT,
    dataDir: path.join(dir, 'data'),
    portFile: path.join(dir, 'port'),
    env: { SERVICE_ALLOW_INSECURE_NO_AUTH: '1' },
    label: 'npm start',
  };
  const npm = spawnServer(spec);
  try {
    const port = await waitForPort(npm, spec, Date.now() + 30_000, 50);
    await waitForReady(npm, spec.label, port, '/v0/ready', Date.now() + 30_000, 50);
    const exited = new Promise<number | null>((r) => npm.proc.once('exit', (code) => r(code)));
    npm.proc.kill('SIGTERM');
    assert.equal(await exited, 0, npm.stderr());
    assert.match(npm.stderr(), /"msg":"stopped"/, 'the server itself drained and stopped');
    // Nothing is left listening on the port.
    const refused = await fetch(`http://127.0.0.1:${port}/v0/health`).then(
      () => false,
      () => true,
    );
    assert.ok(refused, 'the server still answers after npm stopped');
  } finally {
    npm.proc.kill('SIGKILL');
    // A server left behind (the failure this test is for) must not outlive the test, nor keep
    // its stderr pipe, and with it this test's process, open.
    const serverPid = /"pid":(\d+)/.exec(npm.stderr())?.[1];
    if (serverPid !== undefined) {
      try {
        process.kill(Number(serverPid), 'SIGKILL');
      } catch {
        /* gone, as it should be */
      }
    }
    npm.proc.stderr?.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
