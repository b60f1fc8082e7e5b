// Per-router metrics (docs/ARCHITECTURE.md "Routers"): forwarded total, lag in source records and the last refusal of
// each router, from the workers' stats (each reports the routers whose source it owns). All router
// metric code is here: register on a prom-client registry, set from a scrape's router stats.
import client from 'prom-client';
import type { RouterStats } from '../protocol/messages/router.js';

/** Series per family at most, like the per-topic ones (first by router name). */
const ROUTER_SERIES_MAX = 1000;

/** Router stats in router-name order (the series are the first ROUTER_SERIES_MAX of them). */
export function sortRouterStats(stats: RouterStats[]): RouterStats[] {
  return stats.sort((a, b) => (a.router < b.router ? -1 : a.router > b.router ? 1 : 0));
}

export class RouterMetrics {
  private readonly total: client.Counter<string>;
  private readonly lag: client.Gauge<string>;
  private readonly blocked: client.Gauge<string>;

  constructor(registry: client.Registry) {
    const gauge = (name: string, help: string, labelNames: string[]) => new client.Gauge({ name, help, labelNames, registers: [registry] });
    // A counter: it only grows (kept across restarts), so rate() works on it.
    this.total = new client.Counter({
      name: 'spool_router_forwarded_total',
      help: 'Records forwarded by each router since its creation (as its dest acknowledged).',
      labelNames: ['router'],
      registers: [registry],
    });
    this.lag = gauge(
      'spool_router_lag_records',
      'Source seqs each router has not passed yet: an upper bound on the records it has still to forward (seqs a crash skipped count until passed).',
      ['router'],
    );
    this.blocked = gauge('spool_router_blocked', '1 while a router backs off after a refused forward (label code: the refusal), else 0.', [
      'router',
      'code',
    ]);
  }

  set(stats: readonly RouterStats[]): void {
    this.total.reset();
    this.lag.reset();
    this.blocked.reset();
    for (const s of stats.slice(0, ROUTER_SERIES_MAX)) {
      this.total.inc({ router: s.router }, s.forwarded_total);
      this.lag.set({ router: s.router }, s.lag);
      this.blocked.set({ router: s.router, code: s.last_error ?? '' }, s.last_error === null ? 0 : 1);
    }
  }
}
