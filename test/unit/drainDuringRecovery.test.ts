// A drain that begins while the server recovers (docs/ARCHITECTURE.md "Startup and shutdown"
// step 1): recovery ending meanwhile must not turn the lifecycle back to `ready`, which gave
// /v0/ready 200s, appends and no Connection: close during the drain. The whole server in-process
// on a SimDisk (test/support/crashWorld.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimDisk } from '../support/simDisk.js';
import { CrashWorld, sweepSettings } from '../support/crashWorld.js';

test('recovery that ends after the drain began leaves the lifecycle draining', async () => {
  const disk = new SimDisk({ seed: 'drain-during-recovery', durableMkdir: true });
  const w = new CrashWorld(disk, sweepSettings());
  try {
    await w.sup.start();
    const recovering = w.sup.recover();
    assert.equal(w.sup.lifecycle, 'recovering');
    w.sup.lifecycle = 'draining'; // SIGTERM: what the drain does first (src/cli/serve.ts)
    await recovering;
    assert.equal(w.sup.lifecycle, 'draining');
  } finally {
    w.halt();
  }
});
