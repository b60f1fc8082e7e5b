// Recovery progress lines (src/supervisor/recoveryProgress.ts): at most one per interval, with
// bytes, frames, topics and an ETA extrapolated from the rate so far.
import test from 'node:test';
import assert from 'node:assert/strict';
import { RecoveryProgressLog, recoveryFraction } from '../../src/supervisor/recoveryProgress.js';

test('one line per interval, with an ETA from the rate so far', () => {
  const log = new RecoveryProgressLog(1000, 3000);
  const status = (fraction: number) => ({ fraction, bytes: Math.round(fraction * 1e9), frames: Math.round(fraction * 1e6), topics: 12 });
  const none = { loaded: 0, total: 0 };
  assert.equal(log.observe(status(0.1), none, 2000), undefined, 'not before the first interval');
  const first = log.observe(status(0.25), none, 4000)!;
  assert.equal(first.msg, 'recovering: 25.0 %, 25.0 % of the WAL');
  assert.deepEqual(first.fields, {
    progress: 0.25,
    bytes: 250_000_000,
    frames: 250_000,
    topics: 12,
    snapshot_topics_loaded: 0,
    snapshot_topics: 0,
    elapsed_ms: 3000,
    eta_ms: 9000,
  });
  assert.equal(log.observe(status(0.3), none, 6999), undefined, 'the next only after another interval');
  assert.equal(log.observe(status(0.5), none, 7000)!.fields.eta_ms, 6000);
  assert.equal(log.observe(status(0), none, 10_000)!.fields.eta_ms, null, 'no ETA before any progress');
  const loading = log.observe(status(0), { loaded: 250, total: 1000 }, 13_000)!;
  assert.equal(loading.msg, 'recovering: 12.5 %, 250 of 1000 snapshot topics loaded, 0.0 % of the WAL');
  assert.equal(loading.fields.eta_ms, 84_000, 'the ETA counts the topics still to load');
});

test('loading the snapshot topics and replaying the WAL count half each', () => {
  assert.equal(recoveryFraction({ loaded: 0, total: 0 }, 0.4), 0.4, 'no snapshot topics: the WAL is all of it');
  assert.equal(recoveryFraction({ loaded: 500, total: 1000 }, 0), 0.25);
  assert.equal(recoveryFraction({ loaded: 1000, total: 1000 }, 0.5), 0.75);
  assert.equal(recoveryFraction({ loaded: 1000, total: 1000 }, 1), 1);
});
