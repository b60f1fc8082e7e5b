// Recovery progress lines (src/supervisor/recoveryProgress.ts): at most one per interval, with
// bytes, frames, topics and an ETA extrapolated from the rate so far.
import test from 'node:test';
import assert from 'node:assert/strict';
import { RecoveryProgressLog } from '../../src/supervisor/recoveryProgress.js';

test('one line per interval, with an ETA from the rate so far', () => {
  const log = new RecoveryProgressLog(1000, 3000);
  const status = (fraction: number) => ({ fraction, bytes: Math.round(fraction * 1e9), frames: Math.round(fraction * 1e6), topics: 12 });
  assert.equal(log.observe(status(0.1), 2000), undefined, 'not before the first interval');
  const first = log.observe(status(0.25), 4000)!;
  assert.equal(first.msg, 'recovering: 25.0 % of the WAL');
  assert.deepEqual(first.fields, { progress: 0.25, bytes: 250_000_000, frames: 250_000, topics: 12, elapsed_ms: 3000, eta_ms: 9000 });
  assert.equal(log.observe(status(0.3), 6999), undefined, 'the next only after another interval');
  assert.equal(log.observe(status(0.5), 7000)!.fields.eta_ms, 6000);
  assert.equal(log.observe(status(0), 10_000)!.fields.eta_ms, null, 'no ETA before any progress');
});
