// Per-request metrics of the HTTP thread: LabeledHistogram (src/http/fixedHistogram.ts), counted
// without prom-client's label hashing, renders its series as Prometheus histograms. (The lazy
// request logger has its own test, lazyLogger.test.ts.)
import test from 'node:test';
import assert from 'node:assert/strict';
import client from 'prom-client';
import { LabeledHistogram } from '../../src/http/fixedHistogram.js';

test('LabeledHistogram: cumulative buckets, sum and count per label value', async () => {
  const registry = new client.Registry();
  const h = new LabeledHistogram('t_ms', 'test', 'route', [1, 10], registry);
  for (const v of [0.5, 1, 5, 50]) h.observe('/a', v);
  h.observe('/b', 2);
  const text = await registry.metrics();
  for (const line of [
    't_ms_bucket{route="/a",le="1"} 2',
    't_ms_bucket{route="/a",le="10"} 3',
    't_ms_bucket{route="/a",le="+Inf"} 4',
    't_ms_sum{route="/a"} 56.5',
    't_ms_count{route="/a"} 4',
    't_ms_bucket{route="/b",le="1"} 0',
    't_ms_count{route="/b"} 1',
  ]) {
    assert.ok(text.includes(line), `${line} in\n${text}`);
  }
  assert.match(text, /# TYPE t_ms histogram/);
});
