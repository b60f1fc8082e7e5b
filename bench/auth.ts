// Workload auth: what admission costs, and how priority holds under overload.
//
// 1. Auth on vs off: single-record `disk` appends at 64 clients and 100-record batches at 16
//    clients, against a server without keys and one with 20 keys (the key presented is the
//    last configured, with a prefix allowlist: every request hashes the token, compares it with
//    all 20 digests and checks the allowlist). Runs alternate off/on twice; the best of each is
//    kept. Target: auth on costs <= 3% of single-record throughput at 64 clients.
// 2. Overload: one priority-1000 topic at 4 clients, first alone (its unloaded p99), then next to
//    192 clients appending to four priority -1000 topics (they back off 20 ms after a 429), with
//    pressure thresholds tuned to this machine (see overload()); /v0/metrics is sampled meanwhile. Reports each side's p99 and the share
//    of 429s by priority. Target: the high topic's p99 within 2x of unloaded; the 429s land on the
//    low topics; no 5xx, no timeouts.
import { KeyRing, bearerToken } from '../src/auth/keys.js';
import { allowsName } from '../src/auth/allowlist.js';
import {
  HttpClient,
  appendBody,
  benchMs,
  createTopic,
  loadRow,
  log,
  percentile,
  round,
  runLoad,
  startSpool,
  warmupMs,
  type ChildServer,
  type Row,
  type WorkloadResult,
} from './lib.js';

const KEYS = Array.from({ length: 20 }, (_, i) => `bench-key-${i}-${'x'.repeat(24)}:rw+a:auth.|other${i}.`).join(',');
const LAST_KEY = `bench-key-19-${'x'.repeat(24)}`;

async function appendRate(srv: ChildServer, headers: Record<string, string>, clients: number, records: number, ms: number) {
  const client = new HttpClient(srv.port, clients, 60_000, headers);
  try {
    const bodies = Array.from({ length: 16 }, (_, k) => appendBody(records, k * records));
    const o = { client, concurrency: clients, path: `/v0/topics/auth.t${records}`, bodies, recordsPerRequest: records, server: srv };
    await runLoad({ ...o, durationMs: warmupMs() });
    return await runLoad({ ...o, durationMs: ms });
  } finally {
    client.close();
  }
}

async function costOfAuth(rows: Row[], summary: Record<string, unknown>): Promise<number> {
  const ms = benchMs(4);
  const best: Record<string, Awaited<ReturnType<typeof appendRate>>> = {};
  for (let rep = 0; rep < 2; rep++) {
    for (const on of [false, true]) {
      const srv = await startSpool({ label: `auth-${on ? 'on' : 'off'}`, env: on ? { SERVICE_API_KEYS: KEYS } : {} });
      const headers: Record<string, string> = on ? { authorization: `Bearer ${LAST_KEY}` } : {};
      try {
        const admin = new HttpClient(srv.port, 1, 60_000, headers);
        for (const n of [1, 100]) await createTopic(admin, `auth.t${n}`, { durability: 'disk' });
        admin.close();
        for (const [clients, records] of [
          [64, 1],
          [16, 100],
        ] as const) {
          log(`auth: ${on ? 'on' : 'off'} rep ${rep + 1}, ${records}-record appends at ${clients}c`);
          const r = await appendRate(srv, headers, clients, records, ms);
          const k = `${on ? 'on' : 'off'}_${records}`;
          if (!best[k] || r.recordsPerSec > best[k]!.recordsPerSec) best[k] = r;
        }
      } finally {
        await srv.close();
      }
    }
  }
  for (const [records, clients] of [
    [1, 64],
    [100, 16],
  ] as const) {
    for (const on of ['off', 'on'])
      rows.push(
        loadRow(`append ${records === 1 ? 'single' : 'batch-100'} auth ${on} ${clients}c`, best[`${on}_${records}`]!, null, 'best of 2'),
      );
  }
  const single = best.on_1!.recordsPerSec / best.off_1!.recordsPerSec;
  const batch = best.on_100!.recordsPerSec / best.off_100!.recordsPerSec;
  summary.auth_on_vs_off_single_64c = round(single, 3);
  summary.auth_on_vs_off_batch_16c = round(batch, 3);
  rows.push({
    name: 'ratio auth on / off, single @64c',
    recordsPerSec: null,
    p50Ms: null,
    p99Ms: null,
    peakRssMB: null,
    notes: `${(single * 100).toFixed(1)}% (target ≥ 97%)`,
  });
  rows.push({
    name: 'ratio auth on / off, batch-100 @16c',
    recordsPerSec: null,
    p50Ms: null,
    p99Ms: null,
    peakRssMB: null,
    notes: `${(batch * 100).toFixed(1)}%`,
  });
  return single;
}

interface Side {
  lat: number[];
  status: Record<string, number>;
}

/** Closed loop that keeps going through 429s (runLoad stops after 1000 non-2xx). */
async function loop(port: number, clients: number, paths: string[], until: number, side: Side): Promise<void> {
  const client = new HttpClient(port, clients, 30_000);
  const body = appendBody(1);
  try {
    await Promise.all(
      Array.from({ length: clients }, async (_, w) => {
        for (let i = w; Date.now() < until; i++) {
          const r = await client.post(paths[i % paths.length]!, body).catch(() => ({ status: 0, ns: 0n }));
          side.status[r.status] = (side.status[r.status] ?? 0) + 1;
          if (r.status >= 200 && r.status < 300) side.lat.push(Number(r.ns) / 1e6);
          else if (r.status === 429) await new Promise((res) => setTimeout(res, 20));
        }
      }),
    );
  } finally {
    client.close();
  }
}

async function overload(rows: Row[], summary: Record<string, unknown>): Promise<boolean> {
  const ms = benchMs(6);
  // The default thresholds (ELU 0.9, p99 delay 50 ms) are not reached when the load generator
  // shares the 2 cores with the server: the HTTP thread peaks near ELU 0.7 and 35 ms. Lowered to
  // what this machine reaches, so the run shows what the gate does once pressure is detected;
  // a short park bound and 8 requests at a time to the workers make it shed the low topics
  // (with the defaults, 1000 ms and 64, a closed loop never parks long enough to be shed).
  // BENCH_SERVICE_* variables pass further server settings (e.g. BENCH_SERVICE_PRESSURE_PARK_MS).
  const env: Record<string, string> = {
    SERVICE_PRESSURE_ELU: '0.5',
    SERVICE_PRESSURE_LAG_MS: '20',
    SERVICE_PRESSURE_PARK_MS: '25',
    SERVICE_PRESSURE_INFLIGHT: '8',
  };
  for (const [k, v] of Object.entries(process.env)) if (k.startsWith('BENCH_SERVICE_') && v) env[k.slice('BENCH_'.length)] = v;
  summary.overload_settings = env;
  const srv = await startSpool({ label: 'auth-overload', env });
  try {
    const admin = new HttpClient(srv.port, 1);
    await createTopic(admin, 'ov.hi', { durability: 'disk', priority: 1000 });
    const lows = [0, 1, 2, 3].map((i) => `/v0/topics/ov.lo${i}`);
    for (let i = 0; i < 4; i++) await createTopic(admin, `ov.lo${i}`, { durability: 'disk', priority: -1000 });
    admin.close();
    const alone: Side = { lat: [], status: {} };
    log('auth overload: high priority alone');
    await loop(srv.port, 4, ['/v0/topics/ov.hi'], Date.now() + ms, alone);
    const hi: Side = { lat: [], status: {} };
    const lo: Side = { lat: [], status: {} };
    log('auth overload: high next to 192 low-priority clients');
    const until = Date.now() + ms;
    const seen = { samples: 0, pressured: 0, httpElu: 0, httpLag: 0, workerElu: 0, parkedMax: 0 };
    const watcher = (async () => {
      const m = new HttpClient(srv.port, 1);
      while (Date.now() < until) {
        await new Promise((r) => setTimeout(r, 500));
        const r = await m.request('GET', '/v0/metrics', undefined).catch(() => undefined);
        if (!r || r.status !== 200) continue;
        const text = r.body.toString('utf8');
        const num = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
        seen.samples++;
        seen.pressured += num(/^spool_pressure (\S+)$/m);
        seen.httpElu = Math.max(seen.httpElu, num(/^spool_pressure_http_elu (\S+)$/m));
        seen.httpLag = Math.max(seen.httpLag, num(/^spool_pressure_http_lag_p99_seconds (\S+)$/m) * 1000);
        seen.workerElu = Math.max(seen.workerElu, num(/^spool_pressure_worker_elu\{worker="0"\} (\S+)$/m));
        seen.parkedMax = Math.max(seen.parkedMax, num(/^spool_throttle_parked (\S+)$/m));
      }
      m.close();
    })();
    await Promise.all([loop(srv.port, 4, ['/v0/topics/ov.hi'], until, hi), loop(srv.port, 192, lows, until, lo), watcher]);
    summary.overload_pressure_seen = seen;
    log(`auth overload: pressure seen ${JSON.stringify(seen)}`);
    srv.assertAlive();
    const p99 = (s: Side) => percentile(Float64Array.from(s.lat).sort(), 99);
    const count = (s: Side, pred: (code: number) => boolean) =>
      Object.entries(s.status).reduce((n, [k, v]) => n + (pred(Number(k)) ? v : 0), 0);
    const total429 = count(hi, (c) => c === 429) + count(lo, (c) => c === 429);
    const bad = count(hi, (c) => c === 0 || c >= 500) + count(lo, (c) => c === 0 || c >= 500);
    const ratio = p99(hi) / p99(alone);
    const row = (name: string, s: Side) => ({
      name,
      recordsPerSec: round(s.lat.length / (ms / 1000), 0),
      p50Ms: round(percentile(Float64Array.from(s.lat).sort(), 50), 3),
      p99Ms: round(p99(s), 3),
      peakRssMB: null,
      notes: `status ${JSON.stringify(s.status)}`,
    });
    rows.push(
      row('overload: priority 1000 alone 4c', alone),
      row('overload: priority 1000 4c under load', hi),
      row('overload: priority -1000 192c', lo),
    );
    const hiShare = total429 ? count(hi, (c) => c === 429) / total429 : 0;
    rows.push({
      name: 'overload: high p99 / unloaded p99',
      recordsPerSec: null,
      p50Ms: null,
      p99Ms: null,
      peakRssMB: null,
      notes: `${ratio.toFixed(2)}x (target ≤ 2x); 429s: ${total429}, ${(hiShare * 100).toFixed(1)}% on the high topic; 5xx/timeouts: ${bad}`,
    });
    Object.assign(summary, {
      overload_high_p99_ratio: round(ratio, 2),
      overload_429_total: total429,
      overload_429_high_share: round(hiShare, 3),
      overload_5xx_or_timeouts: bad,
    });
    return bad === 0;
  } finally {
    await srv.close();
  }
}

/**
 * The check itself, in this process: bearer parsing, SHA-256 of the token, 20 constant-time
 * digest comparisons and the allowlist, per request. Unlike the HTTP runs it does not depend on
 * what else the shared machine is doing.
 */
function checkCostUs(rows: Row[], summary: Record<string, unknown>): void {
  const ring = KeyRing.parse(KEYS);
  const header = `Bearer ${LAST_KEY}`;
  const n = 200_000;
  let ok = 0;
  for (let i = 0; i < 20_000; i++) ok += ring.authenticate(bearerToken(header)) ? 1 : 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const k = ring.authenticate(bearerToken(header));
    if (k && allowsName(k.prefixes, 'auth.t1')) ok++;
  }
  const us = Number(process.hrtime.bigint() - t0) / 1e3 / n;
  if (ok < n) throw new Error('the bench key did not authenticate');
  summary.auth_check_us = round(us, 2);
  rows.push({
    name: 'auth check per request (20 keys, in-process)',
    recordsPerSec: null,
    p50Ms: null,
    p99Ms: null,
    peakRssMB: null,
    notes: `${us.toFixed(2)} µs`,
  });
}

export async function auth(): Promise<WorkloadResult> {
  const rows: Row[] = [];
  const summary: Record<string, unknown> = {
    targets: { auth_on_vs_off_single_64c: '>= 0.97', overload_high_p99_ratio: '<= 2', overload_5xx_or_timeouts: 0 },
  };
  checkCostUs(rows, summary);
  await costOfAuth(rows, summary);
  const clean = await overload(rows, summary);
  return { workload: 'auth', ok: clean, rows, summary, ...(clean ? {} : { error: '5xx or timeouts under overload' }) };
}
