// The deployment files (Dockerfile, deploy/spool.service) keep the properties docs/OPERATIONS.md
// promises: a non-root user, a data volume, a readiness healthcheck, a stop timeout above the
// drain grace, no restart loop on a bad setting (exit 2) or on a start that keeps failing, and an
// image without an auth opt-out. That the image's command refuses to serve without keys unless
// told so runs it as a plain process: test/cli/deployImage.test.ts.
import test from 'node:test';
import assert from 'node:assert/strict';
import { imageCommand, imageEnv, read } from '../helpers/deployFiles.js';
import { DRAIN_AFTER_GRACE_MS } from '../../src/config.js';

/** `docker stop` waits this long before SIGKILL unless told otherwise. */
const DOCKER_STOP_TIMEOUT_S = 10;

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
  // Past the grace the drain closes what is open and may take DRAIN_AFTER_GRACE_MS more.
  assert.ok(stop * 1000 > grace + DRAIN_AFTER_GRACE_MS, `TimeoutStopSec ${stop} s above the ${grace} ms grace and what follows it`);
  assert.match(u, /^KillSignal=SIGTERM$/m);
  assert.match(u, /^RestartPreventExitStatus=2$/m);
  assert.match(u, /^ExecStart=.* serve$/m);
});

test('the image sets no auth opt-out and its drain grace is under docker stop timeouts', () => {
  const d = read('Dockerfile');
  const env = imageEnv(d);
  assert.equal(env.SERVICE_HOST, '0.0.0.0');
  assert.ok(!('SERVICE_ALLOW_INSECURE_NO_AUTH' in env), 'serving without auth is never the default');
  const graceMs = Number(env.SERVICE_SHUTDOWN_GRACE_MS);
  assert.ok(
    graceMs > 0 && graceMs + DRAIN_AFTER_GRACE_MS < DOCKER_STOP_TIMEOUT_S * 1000,
    `grace ${graceMs} ms and what follows it under docker stop's default ${DOCKER_STOP_TIMEOUT_S} s`,
  );
  const ops = read('docs/OPERATIONS.md');
  for (const [where, text] of [
    ['Dockerfile', d],
    ['docs/OPERATIONS.md', ops],
  ]) {
    assert.doesNotMatch(text!, /not supported yet|once keys are supported|until API keys land/, where);
    for (const m of text!.matchAll(/--(?:stop-timeout|time)[ =](\d+)/g))
      assert.ok(Number(m[1]) * 1000 > graceMs, `${where}: ${m[0]} above the grace`);
  }
  assert.deepEqual(imageCommand(d), ['node', 'dist/cli.js', 'serve']);
  const block = /```sh\n(docker build[^]*?)```/.exec(ops)?.[1] ?? '';
  const run = /^docker run .*$/m.exec(block)?.[0] ?? '';
  assert.match(block, /SERVICE_API_KEYS=\S/, 'the documented container gets keys');
  assert.match(run, /--env-file \S+|-e SERVICE_API_KEYS=/, 'docker run passes them');
  assert.match(run, /--stop-timeout \d+/);
});

test('the systemd unit gives up on a start that keeps failing instead of looping', () => {
  const u = read('deploy/spool.service');
  const unit = u.slice(u.indexOf('[Unit]'), u.indexOf('[Service]'));
  const intervalS = Number(/^StartLimitIntervalSec=(\d+)$/m.exec(unit)?.[1]);
  const burst = Number(/^StartLimitBurst=(\d+)$/m.exec(unit)?.[1]);
  const restartS = Number(/^RestartSec=(\d+)$/m.exec(u)?.[1]);
  // Each failed start takes at least RestartSec, so the burst must fit in the interval to trip.
  assert.ok(burst > 0 && burst * restartS < intervalS, `${burst} starts ${restartS} s apart within ${intervalS} s`);
  assert.match(u, /^Restart=on-failure$/m);
});
