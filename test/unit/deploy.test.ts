// The deployment files (Dockerfile, deploy/spool.service) keep the properties docs/OPERATIONS.md
// promises: a non-root user, a data volume, a readiness healthcheck, a stop timeout above the
// drain grace, and no restart loop on a bad setting (exit 2).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const read = (p: string) => fs.readFileSync(path.join(root, p), 'utf8');

test('the Dockerfile is multi-stage, runs as non-root with a data volume and checks readiness', () => {
  const d = read('Dockerfile');
  assert.equal((d.match(/^FROM /gm) ?? []).length, 2, 'two stages');
  assert.match(d, /^USER node$/m);
  assert.match(d, /^VOLUME \["\/data"\]$/m);
  assert.match(d, /^HEALTHCHECK .*\n.*\/v0\/ready/m);
  assert.match(d, /SERVICE_DATA_DIR=\/data/);
  assert.match(d, /COPY static/, 'the status page ships');
});

test('the systemd unit stops after the drain grace and does not restart on a bad setting', () => {
  const u = read('deploy/spool.service');
  const stop = Number(/^TimeoutStopSec=(\d+)$/m.exec(u)?.[1]);
  const grace = Number(/SERVICE_SHUTDOWN_GRACE_MS=(\d+)/.exec(u)?.[1]);
  assert.ok(stop * 1000 > grace, `TimeoutStopSec ${stop} s above the ${grace} ms grace`);
  assert.match(u, /^KillSignal=SIGTERM$/m);
  assert.match(u, /^RestartPreventExitStatus=2$/m);
  assert.match(u, /^ExecStart=.* serve$/m);
});
