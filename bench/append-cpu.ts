// Paired CPU-per-append measurement (docs/PERFORMANCE.md "Single-record appends"): server CPU per request,
// split per thread, for one or more spool builds and the bare Fastify echo. Every server is
// started once and kept running; the measurements then rotate between them in short runs, round
// after round, so that every build sees the same background load, and the medians are printed at
// the end. CPU per request is much less disturbed by other work on the machine than rates are;
// rates and the ratio to the echo's median are printed too, with the load average.
//   node dist/bench/append-cpu.js
// Settings (env): BENCH_CLIS (comma-separated dist/cli.js paths, default this build; a path may be
// followed by node options and SERVICE_ settings for that server, space-separated), BENCH_ROUNDS
// (6), BENCH_SECONDS (2), BENCH_WARMUP_MS (500, before every run), BENCH_CPU_CLIENTS (1,64),
// BENCH_CPU_CLASSES (disk,fsync), BENCH_CPU_RECORDS (1: records per request, e.g. 100 to check
// batched appends; CPU stays per request). Threads: `main` is the process's first thread; the others are
// listed by CPU, biggest first (at these loads: the topic worker, then the WAL thread or a GC
// helper).
// BENCH_CPU_CREATE=1 measures topic creation instead (docs/PERFORMANCE.md "Topic creation"): every request is
// one append of BENCH_CPU_RECORDS (then 10 by default) records to a topic of a fresh name, at
// BENCH_CPU_CLIENTS (then 32) clients, and the runs also report WAL fdatasyncs per request
// (`spool_wal_fsyncs_total`). Each server keeps the topics of every run, so all builds grow alike.
import fs from 'node:fs';
import os from 'node:os';
import {
  CLI,
  HttpClient,
  appendBody,
  benchMs,
  cleanupAll,
  createTopic,
  envNumber,
  installCleanupHandlers,
  log,
  percentile,
  runLoad,
  startEcho,
  startSpool,
  warmupMs,
  type ChildServer,
} from './lib.js';

const CLK_TCK = 100;

/** utime and stime (s) of every thread of `pid`, by tid. */
function threadTimes(pid: number): Map<number, { user: number; sys: number }> {
  const out = new Map<number, { user: number; sys: number }>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const s = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), { user: Number(f[11]) / CLK_TCK, sys: Number(f[12]) / CLK_TCK });
    } catch {
      /* the thread ended */
    }
  }
  return out;
}

interface Measured {
  reqPerSec: number;
  p50Ms: number;
  /** µs of server CPU per request over all threads. */
  usTotal: number;
  /** µs per request (user, sys): main first, then the busiest other threads. */
  threads: { user: number; sys: number }[];
  load: number;
  /** WAL fdatasyncs per request (spool only). */
  fsyncsPerReq?: number;
  /** µs of the load generator's CPU per request (this process). */
  clientUs: number;
  /** Mean fdatasync latency over the run, ms. */
  fsyncMs?: number;
}

/** BENCH_CPU_CREATE=1: every request creates a topic. */
const CREATE = process.env.BENCH_CPU_CREATE === '1';
/** Records per append request (BENCH_CPU_RECORDS): 1, or a batch as a no-regression check. */
const RECORDS = envNumber('BENCH_CPU_RECORDS', CREATE ? 10 : 1);
/** Topic names already used, per server port (creation runs). */
const created = new Map<number, number>();

/** WAL fdatasyncs since start and their total latency in µs (undefined for the echo). */
async function fsyncs(client: HttpClient, path: string): Promise<{ n: number; us: number } | undefined> {
  if (path === '/echo') return undefined;
  const text = (await client.request('GET', '/v0/metrics')).body.toString('utf8');
  const n = /^spool_wal_fsync_latency_seconds_count (\d+)/m.exec(text);
  const seconds = /^spool_wal_fsync_latency_seconds_sum (\S+)/m.exec(text);
  return n && seconds ? { n: Number(n[1]), us: Number(seconds[1]) * 1e6 } : undefined;
}

async function measure(srv: ChildServer, path: string, clients: number, durationMs: number): Promise<Measured> {
  const client = new HttpClient(srv.port, clients);
  try {
    const bodies = Array.from({ length: 16 }, (_, k) => appendBody(RECORDS, k * RECORDS));
    // A fresh topic name per request: `path` is its prefix.
    const pathFor =
      CREATE && path !== '/echo' ? () => `${path}.${created.set(srv.port, (created.get(srv.port) ?? 0) + 1).get(srv.port)}` : undefined;
    const common = { client, concurrency: clients, path, pathFor, bodies, recordsPerRequest: RECORDS, server: srv };
    await runLoad({ ...common, durationMs: warmupMs() });
    const f0 = await fsyncs(client, path);
    const t0 = threadTimes(srv.pid);
    const r = await runLoad({ ...common, durationMs });
    const t1 = threadTimes(srv.pid);
    const f1 = await fsyncs(client, path);
    srv.assertAlive();
    if (r.errors) throw new Error(`${r.errors} non-2xx: ${r.errorSamples.join(' | ')}`);
    const n = r.okRequests;
    const per: { tid: number; user: number; sys: number }[] = [];
    for (const [tid, b] of t1) {
      const a = t0.get(tid) ?? { user: 0, sys: 0 };
      per.push({ tid, user: ((b.user - a.user) * 1e6) / n, sys: ((b.sys - a.sys) * 1e6) / n });
    }
    const main = per.find((p) => p.tid === srv.pid)!;
    const rest = per.filter((p) => p.tid !== srv.pid).sort((a, b) => b.user + b.sys - (a.user + a.sys));
    return {
      reqPerSec: r.reqPerSec,
      p50Ms: percentile(r.latMs, 50),
      usTotal: per.reduce((s, p) => s + p.user + p.sys, 0),
      threads: [main, ...rest.slice(0, 3)].map((p) => ({ user: p.user, sys: p.sys })),
      load: os.loadavg()[0]!,
      clientUs: ((r.clientCpuPct / 100) * r.elapsedS * 1e6) / n,
      fsyncsPerReq: f0 === undefined || f1 === undefined ? undefined : (f1.n - f0.n) / n,
      fsyncMs: f0 === undefined || f1 === undefined || f1.n === f0.n ? undefined : (f1.us - f0.us) / (f1.n - f0.n) / 1000,
    };
  } finally {
    client.close();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

function describe(m: Measured): string {
  const th = m.threads.map((t, i) => `${i === 0 ? 'main' : `t${i + 1}`} ${t.user.toFixed(0)}+${t.sys.toFixed(0)}`).join(', ');
  const syncs = m.fsyncsPerReq === undefined ? '' : ` ${m.fsyncsPerReq.toFixed(3)} fsyncs/req of ${(m.fsyncMs ?? 0).toFixed(2)} ms`;
  return `${m.reqPerSec.toFixed(0).padStart(6)}/s p50 ${m.p50Ms.toFixed(3)} ms ${m.usTotal.toFixed(0).padStart(5)} µs/req (${th}) client ${m.clientUs.toFixed(0)}${syncs} load ${m.load.toFixed(2)}`;
}

interface Target {
  label: string;
  srv: ChildServer;
  runs: { path: string; clients: number; key: string }[];
}

async function main(): Promise<void> {
  installCleanupHandlers();
  const clis = (process.env.BENCH_CLIS ?? CLI).split(',').filter(Boolean);
  const rounds = envNumber('BENCH_ROUNDS', 6);
  const durationMs = benchMs(2);
  const clientsList = (process.env.BENCH_CPU_CLIENTS ?? (CREATE ? '32' : '1,64')).split(',').map(Number);
  const classes = (process.env.BENCH_CPU_CLASSES ?? 'disk,fsync').split(',');
  const targets: Target[] = [];
  try {
    targets.push({ label: 'echo', srv: await startEcho(), runs: clientsList.map((c) => ({ path: '/echo', clients: c, key: `${c}c` })) });
    for (const [i, entry] of clis.entries()) {
      // An entry may carry node options or SERVICE_ settings after the path, space-separated.
      const [cli, ...opts] = entry.split(/\s+/).filter(Boolean);
      process.env.BENCH_SPOOL_CLI = cli!;
      const env = Object.fromEntries(opts.filter((o) => o.startsWith('SERVICE_')).map((o) => o.split('=') as [string, string]));
      const srv = await startSpool({ label: `append-cpu-${i}`, env, nodeArgs: opts.filter((o) => o.startsWith('--')) });
      const admin = new HttpClient(srv.port, 1);
      try {
        if (!CREATE) for (const cls of classes) await createTopic(admin, `cpu-${cls}`, { durability: cls });
      } finally {
        admin.close();
      }
      const runs = CREATE
        ? clientsList.map((c) => ({ path: `/v0/topics/create-${c}`, clients: c, key: `create ${c}c` }))
        : classes.flatMap((cls) => clientsList.map((c) => ({ path: `/v0/topics/cpu-${cls}`, clients: c, key: `${cls} ${c}c` })));
      targets.push({ label: `[${i}]`, srv, runs });
    }
    const results = new Map<string, Measured[]>();
    for (let round = 0; round < rounds; round++) {
      // Rotate the order every round, so no build always runs right after another.
      const order = targets.map((_, k) => targets[(k + round) % targets.length]!);
      for (const t of order) {
        for (const run of t.runs) {
          const m = await measure(t.srv, run.path, run.clients, durationMs);
          const key = `${t.label} ${run.key}`;
          results.set(key, [...(results.get(key) ?? []), m]);
          process.stdout.write(`round ${round} ${key.padEnd(18)} ${describe(m)}\n`);
        }
      }
    }
    process.stdout.write(`\nmedians over ${rounds} rounds (${durationMs} ms runs):\n`);
    for (const [key, ms] of results) {
      const clients = key.split(' ').at(-1)!;
      const echo = results.get(`echo ${clients}`);
      const us = median(ms.map((m) => m.usTotal));
      const rate = median(ms.map((m) => m.reqPerSec));
      const th = ms[0]!.threads
        .map(
          (_, i) =>
            `${i === 0 ? 'main' : `t${i + 1}`} ${median(ms.map((m) => m.threads[i]!.user)).toFixed(0)}+${median(ms.map((m) => m.threads[i]!.sys)).toFixed(0)}`,
        )
        .join(', ');
      const vsEcho =
        echo && !key.startsWith('echo')
          ? `, ${((100 * rate) / median(echo.map((m) => m.reqPerSec))).toFixed(0)}% of echo's rate, CPU ${(us / median(echo.map((m) => m.usTotal))).toFixed(2)}x echo`
          : '';
      const fsyncNote =
        ms[0]!.fsyncsPerReq === undefined
          ? ''
          : `, ${median(ms.map((m) => m.fsyncsPerReq!)).toFixed(3)} fsyncs/req of ${median(ms.map((m) => m.fsyncMs ?? 0)).toFixed(2)} ms`;
      process.stdout.write(
        `${key.padEnd(18)} ${rate.toFixed(0).padStart(6)}/s p50 ${median(ms.map((m) => m.p50Ms)).toFixed(3)} ms ${us.toFixed(0).padStart(5)} µs/req (${th}) client ${median(ms.map((m) => m.clientUs)).toFixed(0)}${vsEcho}${fsyncNote}; load ${median(ms.map((m) => m.load)).toFixed(2)}\n`,
      );
    }
    log(`builds: ${clis.map((c, i) => `[${i}] ${c}`).join(', ')}`);
  } finally {
    for (const t of targets) await t.srv.close();
    cleanupAll();
  }
}

await main();
