// PressureMonitor (docs/ARCHITECTURE.md "Admission"): pressure follows any worker's loop utilisation or delay, the
// WAL queue depth, or the force hook; relief is announced once; the report carries thresholds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PressureMonitor } from '../../src/pressure/monitor.js';
import { GAUGE, newGauges, setGauge } from '../../src/core/gauges.js';

const T = { elu: 0.9, lagMs: 50, walQueueBytes: 1000, force: false };
/** The HTTP thread's own readings, fixed (the test's loop is busy by nature). */
const idle = () => ({ elu: 0.1, lagP99Ms: 1, sample() {}, stop() {} });

test('a worker at its threshold, or the WAL queue, puts the process under pressure', () => {
  const g = newGauges(2);
  const m = new PressureMonitor(T, g, 2, idle());
  let reliefs = 0;
  m.onRelief = () => reliefs++;
  try {
    m.sample();
    assert.equal(m.pressured, false);
    setGauge(g, 1, GAUGE.elu, 0.95);
    m.sample();
    assert.equal(m.pressured, true);
    setGauge(g, 1, GAUGE.elu, 0.2);
    setGauge(g, 0, GAUGE.lagP99Ms, 50);
    m.sample();
    assert.equal(m.pressured, true, 'p99 delay at the threshold');
    setGauge(g, 0, GAUGE.lagP99Ms, 1);
    setGauge(g, 0, GAUGE.walQueuedBytes, 600);
    setGauge(g, 1, GAUGE.walQueuedBytes, 400);
    m.sample();
    assert.equal(m.pressured, true, 'WAL queue summed over workers');
    assert.equal(reliefs, 0);
    setGauge(g, 1, GAUGE.walQueuedBytes, 0);
    m.sample();
    assert.equal(m.pressured, false);
    assert.equal(reliefs, 1, 'relief announced once');
    const r = m.report();
    assert.deepEqual(r.thresholds, { elu: 0.9, lag_ms: 50, wal_queue_bytes: 1000 });
    assert.equal(r.workers.length, 2);
    assert.equal(r.workers[0]!.wal_queued_bytes, 600);
  } finally {
    m.stop();
  }
});

test('the HTTP thread at its threshold is pressure too', () => {
  const self = { ...idle(), elu: 0.92 };
  const m = new PressureMonitor(T, newGauges(1), 1, self);
  m.sample();
  assert.equal(m.pressured, true);
  assert.equal(m.report().http.elu, 0.92);
});

test('the force hook keeps pressure on', () => {
  const m = new PressureMonitor({ ...T, force: true }, newGauges(1), 1, idle());
  try {
    assert.equal(m.pressured, true);
    m.sample();
    assert.equal(m.pressured, true);
    assert.equal(m.report().forced, true);
  } finally {
    m.stop();
  }
});
