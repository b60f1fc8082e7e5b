// The image refuses to serve without keys unless told so on `docker run` (docs/OPERATIONS.md): no
// Docker engine is needed, the image's ENV and command (Dockerfile) are run as a plain process of
// the built binary; with keys, or the explicit opt-out, it serves. The deployment files' other
// properties: test/unit/deploy.test.ts.
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startServer, tempDir, req } from '../helpers/server.js';
import { imageCommand, imageEnv, read, root } from '../helpers/deployFiles.js';

/** The process environment less every SERVICE_* variable, plus the image's, on a temp data dir. */
function containerEnv(extra: Record<string, string> = {}): Record<string, string> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SERVICE_'))) as Record<string, string>;
  return { ...base, ...imageEnv(read('Dockerfile')), SERVICE_DATA_DIR: tempDir(), SERVICE_PORT: '0', ...extra };
}

test("the image's settings refuse to start without keys; keys or an explicit opt-out start it", async () => {
  const [, script, ...args] = imageCommand(read('Dockerfile'));
  const cli = path.join(root, script!);
  const refused = spawnSync(process.execPath, [cli, ...args], { env: containerEnv(), encoding: 'utf8', timeout: 60_000 });
  assert.equal(refused.status, 2, refused.stderr);
  assert.match(refused.stderr, /refused to start: refusing to bind 0\.0\.0\.0 without SERVICE_API_KEYS/);
  const keyed = await startServer({ env: containerEnv({ SERVICE_API_KEYS: 'img-key-1', SERVICE_WORKERS: '1' }) });
  try {
    assert.equal((await req(keyed.url, 'GET', '/v0/topics')).status, 401);
    assert.equal((await req(keyed.url, 'GET', '/v0/topics', undefined, { authorization: 'Bearer img-key-1' })).status, 200);
    assert.equal((await req(keyed.url, 'GET', '/v0/ready')).status, 200, 'the HEALTHCHECK probe needs no key');
  } finally {
    await keyed.stop();
  }
  const open = await startServer({ env: containerEnv({ SERVICE_ALLOW_INSECURE_NO_AUTH: '1', SERVICE_WORKERS: '1' }) });
  try {
    assert.equal((await req(open.url, 'GET', '/v0/topics')).status, 200);
  } finally {
    await open.stop();
  }
});
