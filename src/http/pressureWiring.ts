// Ties the pressure parts to the rest of main (docs/ARCHITECTURE.md "Admission"): seeds the priority book from the
// topic list once recovery completes, and reports pressure in /v0/metrics (Prometheus gauges
// computed at scrape time, and a `pressure` object in the JSON form).
import client from 'prom-client';
import type { Supervisor } from '../supervisor/supervisor.js';
import type { Metrics } from './metrics.js';
import type { PressureMonitor } from '../pressure/monitor.js';
import type { PressureGate } from '../pressure/gate.js';
import type { PriorityBook } from '../pressure/priorityBook.js';

/**
 * After a restart no topic has been consumed (docs/API.md "GET /v0/topics/:topic" recency is not persisted), so a topic's
 * effective priority is its manual priority or 0: exactly what the list reports.
 */
export function seedPriorities(sup: Supervisor, book: PriorityBook): void {
  // Only the topics with a priority cross the thread (a full list of a million topics would be
  // a few hundred MB of clones on both threads at once).
  void Promise.all(sup.workers.map((w) => w.priorities()))
    .then((lists) => {
      for (const [topic, p] of lists.flat()) book.configured(topic, p, true);
    })
    .catch(() => {});
}

export function registerPressureMetrics(metrics: Metrics, monitor: PressureMonitor, gate: PressureGate): void {
  const reg = [metrics.registry];
  const g = (name: string, help: string, collect: (this: client.Gauge<string>) => void, labelNames: string[] = []) =>
    new client.Gauge({ name, help, labelNames, registers: reg, collect });
  g('spool_pressure', '1 while under pressure, else 0.', function () {
    this.set(monitor.pressured ? 1 : 0);
  });
  g('spool_pressure_http_elu', 'HTTP thread event-loop utilisation over the last second.', function () {
    this.set(monitor.report().http.elu);
  });
  g('spool_pressure_http_lag_p99_seconds', 'HTTP thread p99 event-loop delay over the last second, in seconds.', function () {
    this.set(monitor.report().http.lag_p99_ms / 1000);
  });
  g(
    'spool_pressure_worker_elu',
    'Topic worker event-loop utilisation over the last second.',
    function () {
      monitor.report().workers.forEach((w, i) => this.set({ worker: String(i) }, w.elu));
    },
    ['worker'],
  );
  g(
    'spool_pressure_worker_lag_p99_seconds',
    'Topic worker p99 event-loop delay over the last second, in seconds.',
    function () {
      monitor.report().workers.forEach((w, i) => this.set({ worker: String(i) }, w.lag_p99_ms / 1000));
    },
    ['worker'],
  );
  g('spool_pressure_wal_queued_bytes', 'Bytes queued in front of the WAL writer, all workers.', function () {
    this.set(monitor.report().workers.reduce((n, w) => n + w.wal_queued_bytes, 0));
  });
  g(
    'spool_pressure_threshold',
    'Pressure thresholds (SERVICE_PRESSURE_ELU, _LAG_MS in seconds, _WAL_QUEUE_BYTES).',
    function () {
      const t = monitor.report().thresholds;
      this.set({ kind: 'elu' }, t.elu);
      this.set({ kind: 'lag_seconds' }, t.lag_ms / 1000);
      this.set({ kind: 'wal_queue_bytes' }, t.wal_queue_bytes);
    },
    ['kind'],
  );
  g('spool_throttle_parked', 'Requests parked behind the pressure gate now.', function () {
    this.set(gate.parked);
  });
  g('spool_throttle_running', 'Requests past the pressure gate holding a slot now (0 when idle).', function () {
    this.set(gate.running);
  });
  new client.Counter({
    name: 'spool_throttle_shed_total',
    help: 'Requests refused by the pressure gate since start (429 with retry_after_ms).',
    registers: reg,
    collect() {
      this.reset();
      this.inc(gate.shedTotal);
    },
  });
  metrics.jsonExtras.pressure = () => ({
    ...monitor.report(),
    parked: gate.parked,
    parked_total: gate.parkedTotal,
    shed_total: gate.shedTotal,
  });
}
