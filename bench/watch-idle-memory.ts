// Workload watch-idle-memory: server RSS per idle watch connection (docs/WATCH.md). Target:
// ≤ 16 KiB per idle connection.
//
// One fresh server, BENCH_WATCH_IDLE_TOPICS (4) topics with a few records each and no writes
// afterwards. A warm-up opens and closes 200 sessions+streams (JIT, first-use allocations), then
// the baseline RSS is taken. Then, in steps up to each K of BENCH_WATCH_IDLE_K (1000,5000;
// cumulative, so 1000 then 4000 more): POST the sessions (one topic each, round-robin, tail:true),
// settle, read RSS ("sessions"); open one SSE connection per session (bench/watch-client.ts raw
// sockets, each waits for its caught-up frame), settle BENCH_WATCH_IDLE_SETTLE_MS (5000; below
// the 15 s default heartbeat, so nothing is written), read RSS ("streams").
// RSS is the median of 5 VmRSS reads 200 ms apart (the server's threads included). A forced GC is
// not possible from outside, so garbage from the opening requests may still be counted; the
// marginal cost between two steps (RSS(5000) − RSS(1000)) / 4000 cancels one-off growth such as
// V8's young generation and JIT code, and is the figure compared with the target.
import {
  HttpClient,
  createTopic,
  envNumber,
  log,
  round,
  startSpool,
  MB,
  type Row,
  type WorkloadResult,
  runAsScript,
  settledRss,
} from './lib.js';
import { WatcherGroup } from './watch-client.js';

const TARGET_KIB = 16;

async function createSessions(client: HttpClient, topics: string[], from: number, n: number): Promise<string[]> {
  const urls: string[] = new Array(n);
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const t = topics[(from + i) % topics.length]!;
      const j = await client.json('POST', '/v0/watch', { topics: { [t]: { tail: true } } });
      urls[i] = j.stream_url as string;
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return urls;
}

function listFromEnv(): number[] {
  const v = process.env.BENCH_WATCH_IDLE_K;
  const ks = v === undefined || v.trim() === '' ? [1000, 5000] : v.split(',').map((s) => Number(s.trim()));
  if (ks.some((k) => !Number.isInteger(k) || k < 1)) throw new Error(`BENCH_WATCH_IDLE_K: bad list ${JSON.stringify(v)}`);
  return [...ks].sort((a, b) => a - b);
}

export async function watchIdleMemory(ks: number[] = listFromEnv()): Promise<WorkloadResult> {
  const nTopics = Math.max(1, Math.floor(envNumber('BENCH_WATCH_IDLE_TOPICS', 4)));
  const settleMs = envNumber('BENCH_WATCH_IDLE_SETTLE_MS', 5000);
  const maxK = ks[ks.length - 1]!;
  const srv = await startSpool({
    label: 'watch-idle-memory',
    env: { SERVICE_MAX_WATCH_SESSIONS: String(maxK + 1000), SERVICE_MAX_SSE_CONNECTIONS: String(maxK + 1000) },
  });
  const client = new HttpClient(srv.port, 16);
  const groups: WatcherGroup[] = [];
  try {
    const topics = Array.from({ length: nTopics }, (_, i) => `idle-${i}`);
    for (const t of topics) {
      await createTopic(client, t, {});
      await client.json('POST', `/v0/topics/${t}`, { records: [{ data: { hello: t } }, { data: { hello: t } }] });
    }
    // Warm-up: open and close a few streams so first-use costs are in the baseline.
    const warm = new WatcherGroup(srv.port, process.hrtime.bigint(), 16);
    const wo = await warm.open(await createSessions(client, topics, 0, 200));
    warm.close();
    if (wo.caughtUp !== 200) throw new Error(`warm-up: ${wo.caughtUp}/200 caught up: ${wo.errors.join('; ')}`);
    const base = await settledRss(srv, settleMs);
    log(`watch-idle-memory: baseline RSS ${(base / MB).toFixed(1)} MB (${nTopics} topics, after 200 warm-up streams)`);

    const rows: Row[] = [];
    const steps: Record<string, unknown>[] = [];
    let open = 0;
    let prev: { k: number; rss: number } = { k: 0, rss: base };
    let marginal: number | undefined;
    for (const k of ks) {
      const add = k - open;
      const urls = await createSessions(client, topics, open, add);
      const rssSessions = await settledRss(srv, Math.min(settleMs, 2000));
      const g = new WatcherGroup(srv.port, process.hrtime.bigint(), 16);
      groups.push(g);
      const t0 = Date.now();
      const o = await g.open(urls, 64, 120_000);
      if (o.caughtUp !== add) throw new Error(`${o.caughtUp}/${add} streams caught up: ${o.errors.join('; ')}`);
      const openMs = Date.now() - t0;
      open = k;
      const rss = await settledRss(srv, settleMs);
      srv.assertAlive();
      const peak = srv.rss.peakBytes();
      const perConn = (rss - base) / k / 1024;
      const perConnOnly = (rss - rssSessions) / add / 1024;
      const sessionsPer = (rssSessions - prev.rss) / add / 1024;
      const step = (rss - prev.rss) / add / 1024;
      if (prev.k > 0) marginal = step;
      log(
        `watch-idle-memory: ${k} idle streams: RSS ${(rss / MB).toFixed(1)} MB, ${perConn.toFixed(1)} KiB each over baseline (sessions ${sessionsPer.toFixed(1)} + streams ${perConnOnly.toFixed(1)} KiB for this step); step ${prev.k}→${k}: ${step.toFixed(1)} KiB each; opened in ${openMs} ms`,
      );
      steps.push({
        k,
        rss_mb: round(rss / MB, 1),
        rss_sessions_mb: round(rssSessions / MB, 1),
        kib_per_conn_total: round(perConn, 2),
        kib_per_step_conn: round(step, 2),
        kib_session_only: round(sessionsPer, 2),
        kib_stream_only: round(perConnOnly, 2),
        open_ms: openMs,
      });
      rows.push({
        name: `watch-idle-memory K=${k}`,
        recordsPerSec: null,
        p50Ms: null,
        p99Ms: null,
        peakRssMB: round(peak / MB, 1),
        notes: `RSS ${(base / MB).toFixed(0)} → ${(rss / MB).toFixed(0)} MB: **${perConn.toFixed(1)} KiB** per idle session+stream over baseline${prev.k > 0 ? `; marginal ${prev.k}→${k}: **${step.toFixed(1)} KiB** each` : ''} (this step: session ${sessionsPer.toFixed(1)} + stream ${perConnOnly.toFixed(1)} KiB); target ≤ ${TARGET_KIB} KiB`,
        extra: { k, topics: nTopics, baseline_rss_mb: round(base / MB, 1), ...steps[steps.length - 1] },
      });
      prev = { k, rss };
    }
    const headline = marginal ?? (prev.rss - base) / prev.k / 1024;
    const met = headline <= TARGET_KIB;
    log(`watch-idle-memory: ${headline.toFixed(1)} KiB per idle connection (target ≤ ${TARGET_KIB}): ${met ? 'met' : 'MISSED'}`);
    return {
      workload: 'watch-idle-memory',
      ok: true,
      rows,
      summary: {
        kib_per_idle_connection: round(headline, 2),
        method: marginal !== undefined ? 'marginal between the last two steps' : 'total over baseline',
        target_kib: TARGET_KIB,
        target_met: met,
        baseline_rss_mb: round(base / MB, 1),
        steps,
      },
    };
  } finally {
    for (const g of groups) g.close();
    client.close();
    await srv.close();
  }
}

// `node dist/bench/watch-idle-memory.js [K ...]`
runAsScript(import.meta.url, 'node dist/bench/watch-idle-memory.js [K ...]', (args) =>
  watchIdleMemory(args && [...args].sort((a, b) => a - b)),
);
