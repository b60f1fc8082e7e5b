// Workload router: what a router costs and how fast it forwards. One spool server
// with SERVICE_WORKERS=2 (so source and dest can sit on different workers). Run alone with
// `node dist/bench/router.js`.
//   1. baseline: 16 writers × batches of 100 records of 256 B into a `disk` topic without a
//      router, BENCH_SECONDS (5) after a warm-up: source records/s.
//   2. with a router: the same load into a `disk` source whose router copies every record to a
//      `disk` dest on the other worker. Source records/s next to the baseline (target: at least
//      85% of it, and the lag back to 0 within 100 ms after the load), the router's lag sampled from /v0/metrics every 250 ms during the load (a
//      metrics read never drains), and after the load the time until the lag is 0. Forwarding
//      rate = records copied / (load time + that drain time); "keeps up" = the lag at the end of
//      the load is no larger than at its middle plus one second's worth of records.
//   3./4. append-to-visible latency, source and dest on the same worker and on different
//      workers: one writer appends single records at BENCH_ROUTER_RATE (500)/s (paced, not
//      closed-loop) for BENCH_ROUTER_LATENCY_S (5) s; a watch stream tails the dest; each record's
//      data carries its send time (process.hrtime), latency = its `record` frame's arrival - send.
//      Target: p50 ≤ 2 ms.
// BENCH_ROUTER_CPU_PROF=<dir>: the server runs with --cpu-prof into <dir> (one profile per thread,
// written when it is stopped at the end).
import http from 'node:http';
import { workerOf } from '../src/core/names.js';
import {
  CpuSplitMeter,
  cpuNote,
  HttpClient,
  appendBody,
  benchMs,
  createTopic,
  envNumber,
  loadRow,
  log,
  percentile,
  round,
  runAsScript,
  runLoad,
  sleep,
  startSpool,
  warmupMs,
  type ChildServer,
  type Row,
  type WorkloadResult,
} from './lib.js';

const WRITERS = 16;
const BATCH = 100;
const WORKERS = 2;
const TARGET_RATIO = 0.85;
/** After the load, the router's lag is back to 0 within this long (docs/PERFORMANCE.md "Queues"). */
const TARGET_DRAIN_MS = 100;
const TARGET_P50_MS = 2;

/** A source and a dest on the same or on different workers (only the dest name varies). */
function pair(prefix: string, sameWorker: boolean): [string, string] {
  const s = `${prefix}.src`;
  for (let i = 0; i < 1000; i++) {
    const d = `${prefix}.dest${i}`;
    if ((workerOf(s, WORKERS) === workerOf(d, WORKERS)) === sameWorker) return [s, d];
  }
  throw new Error(`no ${sameWorker ? 'same' : 'other'}-worker dest for ${s}`);
}

/** /v0/metrics in its JSON form (Accept: application/json): the router's figures. */
function metricsJson(port: number): Promise<any> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/v0/metrics', headers: { accept: 'application/json' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

async function lagOf(port: number, router: string): Promise<{ lag: number; total: number }> {
  const m = await metricsJson(port);
  const s = (m.router_stats as { router: string; lag: number; forwarded_total: number }[]).find((x) => x.router === router);
  return { lag: s?.lag ?? 0, total: s?.forwarded_total ?? 0 };
}

async function throughput(
  srv: ChildServer,
  client: HttpClient,
  withRouter: boolean,
): Promise<{ row: Row; rate: number; cpuUs: number; ok: boolean; extra: { copied: number; drainMs: number; lags: number[] } }> {
  const [src, dst] = pair(withRouter ? 'rb.fw' : 'rb.plain', false);
  await createTopic(client, src, { durability: 'disk' });
  const router = `${src}->${dst}`;
  if (withRouter) await client.json('PUT', `/v0/routers/${encodeURIComponent(router)}`, { source: src, dest: dst });
  const bodies = Array.from({ length: WRITERS }, (_, w) => appendBody(BATCH, w * BATCH));
  const common = { client, concurrency: WRITERS, path: `/v0/topics/${src}`, bodies, recordsPerRequest: BATCH, server: srv };
  await runLoad({ ...common, durationMs: warmupMs() });
  if (withRouter) while ((await lagOf(srv.port, router)).lag > 0) await sleep(50);
  srv.rss.reset();
  const before = withRouter ? (await lagOf(srv.port, router)).total : 0;
  const cpu = new CpuSplitMeter(srv.pid).start();
  const durationMs = benchMs(5);
  const lags: number[] = [];
  let sampling = withRouter;
  const sampler = (async () => {
    while (sampling) {
      lags.push((await lagOf(srv.port, router)).lag);
      await sleep(250);
    }
  })();
  const r = await runLoad({ ...common, durationMs });
  sampling = false;
  await sampler;
  const split = cpu.stop();
  const t0 = Date.now();
  let copied = 0;
  if (withRouter) {
    for (;;) {
      const s = await lagOf(srv.port, router);
      copied = s.total - before;
      if (s.lag === 0 || Date.now() - t0 > 60_000) break;
      await sleep(20);
    }
  }
  const drainMs = Date.now() - t0;
  // Server CPU per source record over the load (with a router: its copy too): robust to other
  // work on the machine, where the rates are not (docs/PERFORMANCE.md "Routers: forwarding between workers").
  const cpuUs = r.records > 0 ? ((split.server / 100) * r.elapsedS * 1e6) / r.records : 0;
  const fwdRate = copied / (r.elapsedS + drainMs / 1000);
  const mid = lags[Math.floor(lags.length / 2)] ?? 0;
  const end = lags[lags.length - 1] ?? 0;
  const keepsUp = !withRouter || end <= mid + r.recordsPerSec;
  const notes = withRouter
    ? `dest on the other worker; forwarded ${round(fwdRate, 0)} rec/s (${copied} copies, drained ${drainMs} ms after the load); lag max ${Math.max(0, ...lags)}, mid ${mid}, end ${end}${keepsUp ? '' : ' (GROWING)'}; server ${round(cpuUs, 2)} µs CPU per record; ${cpuNote(split)}`
    : `no router; server ${round(cpuUs, 2)} µs CPU per record; ${cpuNote(split)}`;
  const row = loadRow(
    withRouter ? 'router: source append-batch with a router (disk, 16×100)' : 'router: baseline append-batch, no router (disk, 16×100)',
    r,
    srv.rss.peakBytes(),
    notes,
    withRouter
      ? { forwarded_per_s: round(fwdRate, 0), drain_ms: drainMs, lag_samples: lags, cpu_us_per_record: round(cpuUs, 2) }
      : { cpu_us_per_record: round(cpuUs, 2) },
  );
  return {
    row,
    rate: r.recordsPerSec,
    cpuUs,
    ok: r.errors === 0 && keepsUp && (!withRouter || copied >= r.records),
    extra: { copied, drainMs, lags },
  };
}

/** Append-to-visible-in-dest latency at a paced rate, via a watch stream tailing the dest. */
async function latency(srv: ChildServer, client: HttpClient, sameWorker: boolean): Promise<Row> {
  const [src, dst] = pair(sameWorker ? 'rl.same' : 'rl.diff', sameWorker);
  await createTopic(client, src, { durability: 'disk' });
  await client.json('PUT', `/v0/routers/${encodeURIComponent(`${src}->${dst}`)}`, { source: src, dest: dst });
  const w = await client.json('POST', '/v0/watch', { topics: { [dst]: { tail: true } } });
  const base = process.hrtime.bigint();
  const lat: number[] = [];
  const rate = envNumber('BENCH_ROUTER_RATE', 500);
  const total = Math.round(rate * envNumber('BENCH_ROUTER_LATENCY_S', 5));
  const warm = Math.round(rate / 2);
  const stream = await new Promise<http.IncomingMessage>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: srv.port, path: `/v0/watch/${w.wid}`, headers: { accept: 'text/event-stream' } }, resolve)
      .on('error', reject);
  });
  stream.on('data', (c: Buffer) => {
    const now = Number(process.hrtime.bigint() - base);
    for (const m of c.toString('latin1').matchAll(/"wt":(\d+),"i":(\d+)/g)) if (Number(m[2]) >= warm) lat.push((now - Number(m[1])) / 1e6);
  });
  const start = Date.now();
  for (let i = 0; i < total + warm; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - Date.now();
    if (wait > 0) await sleep(wait);
    const wt = Number(process.hrtime.bigint() - base);
    void client.post(`/v0/topics/${src}`, `{"records":[{"data":{"wt":${wt},"i":${i}}}]}`);
  }
  await sleep(500);
  stream.destroy();
  const sorted = lat.slice().sort((a, b) => a - b);
  return {
    name: `router: append→visible in dest, ${sameWorker ? 'same worker' : 'different workers'} (${rate} rec/s)`,
    recordsPerSec: rate,
    p50Ms: round(percentile(sorted, 50), 3),
    p99Ms: round(percentile(sorted, 99), 3),
    peakRssMB: null,
    notes: `${sorted.length} of ${total} measured records seen on a watch stream of the dest; target p50 ≤ ${TARGET_P50_MS} ms`,
  };
}

export async function router(): Promise<WorkloadResult> {
  const profDir = process.env.BENCH_ROUTER_CPU_PROF;
  const srv = await startSpool({
    label: 'router',
    env: { SERVICE_WORKERS: String(WORKERS) },
    ...(profDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] } : {}),
  });
  const client = new HttpClient(srv.port, WRITERS + 4);
  try {
    log(`router: ${WRITERS} writers x ${BATCH} records, without then with a router`);
    const base = await throughput(srv, client, false);
    const fw = await throughput(srv, client, true);
    const ratio = fw.rate / base.rate;
    const drainMet = fw.extra.drainMs <= TARGET_DRAIN_MS;
    fw.row.notes = `${round(ratio * 100, 0)}% of the baseline (target ≥ ${TARGET_RATIO * 100}%: ${ratio >= TARGET_RATIO ? 'met' : '**MISSED**'}); lag 0 ${fw.extra.drainMs} ms after the load (target ≤ ${TARGET_DRAIN_MS} ms: ${drainMet ? 'met' : '**MISSED**'}); ${fw.row.notes}`;
    const same = await latency(srv, client, true);
    const diff = await latency(srv, client, false);
    srv.assertAlive();
    const ok =
      base.ok &&
      fw.ok &&
      ratio >= TARGET_RATIO &&
      drainMet &&
      (same.p50Ms ?? Infinity) <= TARGET_P50_MS &&
      (diff.p50Ms ?? Infinity) <= TARGET_P50_MS;
    return {
      workload: 'router',
      ok,
      rows: [base.row, fw.row, same, diff],
      summary: {
        ratio: round(ratio, 3),
        drain_ms: fw.extra.drainMs,
        cpu_us_per_record: { baseline: round(base.cpuUs, 2), routed: round(fw.cpuUs, 2) },
        targets: { ratio: `>= ${TARGET_RATIO}`, drain_ms: `<= ${TARGET_DRAIN_MS}` },
      },
      ...(ok ? {} : { error: 'a router target was missed (see notes)' }),
    };
  } finally {
    client.close();
    if (profDir) {
      const t = await srv.terminate(30_000);
      log(`router: server stopped for --cpu-prof (${t.ms.toFixed(0)} ms, code ${t.code}); profiles in ${profDir}`);
    }
    await srv.close();
  }
}

runAsScript(import.meta.url, 'node dist/bench/router.js', () => router());
