// Workload longpoll-wake: many parked long-polls on one topic woken by one append (docs/API.md
// diff `wait_ms`), and what a parked long-poll costs the server in memory.
//
// Per server: one `disk` topic holding one record; BENCH_LONGPOLL_N (3000) keep-alive connections
// held by a child process (raw sockets, the RawHttpConn of lib.ts) each post
// `POST /v0/topics/lp/diff {"from_seq":<head>,"wait_ms":30000}`; once the server's CPU is quiet
// (every request parked), one append is sent from this process and each waiter's latency is its
// hrtime when its whole reply was read minus the append's send time (hrtime is CLOCK_MONOTONIC,
// common to the processes). The waiters then post again from the new head: BENCH_LONGPOLL_ROUNDS
// (5) wakes per server, the median of the rounds' p50/p99 reported. Every reply is checked (200,
// the one new record, `next_from_seq` = the new head).
// Memory: the server's RSS (median of 5 reads) after a warm-up wake of BENCH_LONGPOLL_WARMUP
// (300) waiters, again with BENCH_LONGPOLL_N_LOW (1000) of the first round's waiters parked, and
// again with all N parked.
// Two figures, both connection included (its kernel socket buffers are not in RSS): the RSS per
// waiter at N, (RSS at N − RSS before) / N, which also holds what the burst of N requests grows
// once (V8's young generation, heap slack); and the marginal RSS per waiter, the slope between
// the two park sizes on the same server, (RSS at N − RSS at N_LOW) / (N − N_LOW): what one more
// waiter costs. The target is judged on the marginal figure (docs/PERFORMANCE.md). Both figures
// are printed next to the same waiters parked on a bare Fastify server (bench/echo-server.ts holds
// each diff unanswered), measured the same way in the same run: node:http's and Fastify's own cost.
// Baseline in the same run: BENCH_BASE_CLI names another build's dist/cli.js (main's); the two
// servers run in alternation, BENCH_LONGPOLL_PAIRS (2) times each. Target: p50 ≤ 100 ms, ≤ 8 KiB
// per waiter.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import {
  CLI,
  RawHttpConn,
  envNumber,
  log,
  readCpuSeconds,
  round,
  settledRss,
  sleep,
  startEcho,
  startSpool,
  type ChildServer,
  type Row,
  type WorkloadResult,
  runAsScript,
} from './lib.js';

const here = fileURLToPath(import.meta.url);
const TOPIC = 'lp';
const WAIT_MS = 30_000;
const TARGET_P50_MS = 100;
const TARGET_BYTES_PER_WAITER = 8 * 1024;

// ---- the waiters' process ------------------------------------------------------------------------

/** A park of `n` more waiters; `more` adds them to the round's waiters already parked. */
type ToWaiters = { type: 'park'; port: number; n: number; fromSeq: number; more: boolean } | { type: 'close' };
type FromWaiters = { type: 'parked' } | { type: 'woken'; doneNs: string[]; errors: string[] };

/** Child side: holds the connections, parks them, reports when each reply of a round arrived. */
function waiterProcess(): void {
  const conns: RawHttpConn[] = [];
  // The round's waiters: those of its first park and of any `more` parks after it.
  let doneNs: string[] = [];
  let errors: string[] = [];
  let bodies: { status: number; body: Buffer }[] = [];
  let left = 0;
  let fromSeq = 0;
  // Replies are checked once all are in: checking each as it comes would delay the next read.
  const finish = () => {
    if (--left > 0) return;
    for (const r of bodies) {
      if (!r) continue;
      const text = r.body.toString('utf8');
      if (r.status !== 200 || !text.includes(`"next_from_seq":${fromSeq + 1},`) || !text.includes(`"$seq":${fromSeq + 1},`)) {
        if (errors.length < 5) errors.push(`${r.status} ${text.slice(0, 200)}`);
      }
    }
    process.send!({ type: 'woken', doneNs, errors } satisfies FromWaiters);
  };
  process.on('message', (m: ToWaiters) => {
    if (m.type === 'close') {
      for (const c of conns) c.close();
      process.exit(0);
    }
    if (!m.more) {
      doneNs = [];
      errors = [];
      bodies = [];
      left = 0;
      fromSeq = m.fromSeq;
    }
    const first = doneNs.length;
    while (conns.length < first + m.n) conns.push(new RawHttpConn(m.port));
    const body = JSON.stringify({ from_seq: m.fromSeq, wait_ms: WAIT_MS });
    left += m.n;
    for (let i = first; i < first + m.n; i++) {
      doneNs.push('0');
      conns[i]!.post(`/v0/topics/${TOPIC}/diff`, body).then(
        (r) => {
          doneNs[i] = process.hrtime.bigint().toString();
          bodies[i] = r;
          finish();
        },
        (err: Error) => {
          doneNs[i] = '0';
          if (errors.length < 5) errors.push(err.message);
          finish();
        },
      );
    }
    process.send!({ type: 'parked' } satisfies FromWaiters);
  });
}

// ---- this process --------------------------------------------------------------------------------

interface Waiters {
  /** Resolves once every request is sent, with the replies still to come (in an object: a promise resolved with a promise would wait for it). */
  park(n: number, fromSeq: number, more?: boolean): Promise<{ woken: Promise<{ doneNs: bigint[]; errors: string[] }> }>;
  close(): Promise<void>;
}

function startWaiters(port: number): Waiters {
  const child: ChildProcess = fork(here, ['--waiters'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let onMsg: ((m: FromWaiters) => void) | undefined;
  child.on('message', (m: FromWaiters) => onMsg?.(m));
  return {
    park: (n, fromSeq, more = false) =>
      new Promise((parkedResolve) => {
        const woken = new Promise<{ doneNs: bigint[]; errors: string[] }>((resolve) => {
          onMsg = (m) => {
            if (m.type === 'parked') return parkedResolve({ woken });
            resolve({ doneNs: m.doneNs.map((s) => BigInt(s)), errors: m.errors });
          };
        });
        child.send({ type: 'park', port, n, fromSeq, more } satisfies ToWaiters);
      }),
    close: async () => {
      if (child.connected) child.send({ type: 'close' } satisfies ToWaiters);
      const t = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(t);
    },
  };
}

/**
 * Waits until the server used at most 10% of a core over 300 ms (every request read and parked),
 * for at most 10 s (well inside the waiters' wait_ms).
 */
async function quiet(srv: ChildServer): Promise<void> {
  const deadline = Date.now() + 10_000;
  let prev = readCpuSeconds(srv.pid) ?? 0;
  while (Date.now() < deadline) {
    await sleep(300);
    const now = readCpuSeconds(srv.pid) ?? 0;
    if (now - prev <= 0.03) return;
    prev = now;
  }
  log('longpoll-wake: the server did not go quiet within 10 s; waking anyway');
}

/**
 * BENCH_LONGPOLL_PERF=<dir>: each wake is recorded by `perf record` (cpu-clock, call graphs, 1.5 s
 * from 0.7 s before the append) into <dir>/wake-<head>.data; start the server with
 * BENCH_SERVER_NODE_ARGS=--perf-basic-prof for JS frame names.
 */
function perfRecord(srv: ChildServer, head: number): ChildProcess | undefined {
  const dir = process.env.BENCH_LONGPOLL_PERF;
  if (!dir) return undefined;
  return spawn(
    'perf',
    [
      'record',
      '-F',
      '2000',
      '-e',
      'cpu-clock',
      '-g',
      '-p',
      String(srv.pid),
      '-o',
      path.join(dir, `wake-${head}.data`),
      '--',
      'sleep',
      '1.5',
    ],
    { stdio: 'ignore' },
  );
}

interface Wake {
  p50: number;
  p99: number;
  max: number;
  /** The waking append's own ack, and a health probe sent once it came (the HTTP thread's stall). */
  ackMs: number;
  probeMs: number;
  errors: string[];
}

/**
 * One wake: N waiters parked at `head`, one append; latencies in ms. With `measure`, they park in
 * two steps (`measure.low`, then the rest) and `measure.parked(k)` runs once k are parked.
 */
async function wakeOnce(
  srv: ChildServer,
  w: Waiters,
  conns: { writer: RawHttpConn; probe: RawHttpConn },
  n: number,
  head: number,
  measure?: { low: number; parked: (k: number) => Promise<void> },
): Promise<Wake> {
  const { writer, probe } = conns;
  const low = measure ? Math.min(measure.low, n) : n;
  let { woken } = await w.park(low, head);
  await quiet(srv);
  if (measure && low < n) {
    await measure.parked(low);
    ({ woken } = await w.park(n - low, head, true));
    await quiet(srv);
  }
  await measure?.parked(n);
  const perf = perfRecord(srv, head);
  if (perf) await sleep(700); // perf attaches
  const t0 = process.hrtime.bigint();
  const r = await writer.post(`/v0/topics/${TOPIC}`, '{"records":[{"data":{"k":"wake"}}]}');
  if (r.status !== 200) throw new Error(`append: ${r.status} ${r.body.toString().slice(0, 200)}`);
  // While the replies go out (when the ack came first): how long does a request wait behind them?
  const p = await probe.request('GET', '/v0/health');
  const res = await woken;
  if (perf) await new Promise((r) => perf.once('exit', r));
  const ms = Float64Array.from(res.doneNs, (d) => Number(d - t0) / 1e6).sort();
  return {
    p50: ms[ms.length >> 1]!,
    p99: ms[Math.min(ms.length - 1, Math.ceil(ms.length * 0.99) - 1)]!,
    max: ms[ms.length - 1]!,
    ackMs: Number(r.ns) / 1e6,
    probeMs: Number(p.ns) / 1e6,
    errors: res.errors,
  };
}

interface ServerRun {
  build: string;
  /** The first wake of fresh connections, and the median of the later wakes. */
  first: Wake;
  p50: number;
  p99: number;
  max: number;
  ackMs: number;
  probeMs: number;
  /** RSS per waiter at N, and the marginal RSS per waiter (the slope from N_LOW to N). */
  bytesPerWaiter: number;
  marginalBytesPerWaiter: number;
  errors: string[];
}

async function runServer(build: string, cli: string, n: number, nLow: number, rounds: number): Promise<ServerRun> {
  const srv = await startSpool({ label: `longpoll-${build}`, cli });
  const writer = new RawHttpConn(srv.port);
  const conns = { writer, probe: new RawHttpConn(srv.port) };
  const w = startWaiters(srv.port);
  try {
    const put = await writer.request('PUT', `/v0/topics/${TOPIC}`, '{"durability":"disk"}');
    if (put.status >= 300) throw new Error(`PUT: ${put.status}`);
    await writer.post(`/v0/topics/${TOPIC}`, '{"records":[{"data":{"k":"first"}}]}');
    let head = 1;
    // Warm-up: a small wake (code paths, first connections), then the memory baseline.
    await wakeOnce(srv, w, conns, envNumber('BENCH_LONGPOLL_WARMUP', 300), head++);
    const rss0 = await settledRss(srv, 500);
    const errors: string[] = [];
    const wakes: Wake[] = [];
    const rssAt = new Map<number, number>();
    for (let i = 0; i < rounds; i++) {
      // The first round's parked states are the memory measurement.
      const measure = { low: nLow, parked: async (k: number) => void rssAt.set(k, await settledRss(srv, 0)) };
      wakes.push(await wakeOnce(srv, w, conns, n, head, i === 0 ? measure : undefined));
      head++;
      errors.push(...wakes[wakes.length - 1]!.errors);
      const last = wakes[wakes.length - 1]!;
      log(
        `longpoll-wake ${build}: round ${i + 1}: p50 ${last.p50.toFixed(1)} p99 ${last.p99.toFixed(1)} max ${last.max.toFixed(1)} ms; append ack ${last.ackMs.toFixed(1)} ms, health probe ${last.probeMs.toFixed(1)} ms`,
      );
    }
    const perWaiter = (rssAt.get(n)! - rss0) / n;
    const marginal = nLow < n ? (rssAt.get(n)! - rssAt.get(nLow)!) / (n - nLow) : NaN;
    log(
      `longpoll-wake ${build}: RSS per waiter at ${n} ${(perWaiter / 1024).toFixed(2)} KiB, marginal (${nLow} → ${n}) ${(marginal / 1024).toFixed(2)} KiB`,
    );
    const later = wakes.length > 1 ? wakes.slice(1) : wakes;
    const med = (f: (x: Wake) => number) => later.map(f).sort((a, b) => a - b)[later.length >> 1]!;
    srv.assertAlive();
    return {
      build,
      first: wakes[0]!,
      p50: med((x) => x.p50),
      p99: med((x) => x.p99),
      max: med((x) => x.max),
      ackMs: med((x) => x.ackMs),
      probeMs: med((x) => x.probeMs),
      bytesPerWaiter: perWaiter,
      marginalBytesPerWaiter: marginal,
      errors,
    };
  } finally {
    await w.close();
    writer.close();
    conns.probe.close();
    await srv.close();
  }
}

/**
 * The baseline of the memory figures: the same waiters parked on a bare Fastify server
 * (bench/echo-server.ts holds each diff unanswered), RSS per waiter at N and marginal, measured
 * the same way: what node:http and Fastify alone keep per parked request and its connection.
 */
async function bareFastifyMemory(n: number, nLow: number): Promise<{ perWaiter: number; marginal: number }> {
  const srv = await startEcho();
  const w = startWaiters(srv.port);
  try {
    await w.park(envNumber('BENCH_LONGPOLL_WARMUP', 300), 0);
    const rss0 = await settledRss(srv, 500);
    await w.park(nLow, 0, true);
    const rssLow = await settledRss(srv, 500);
    await w.park(n - nLow, 0, true);
    const rssN = await settledRss(srv, 500);
    return { perWaiter: (rssN - rss0) / n, marginal: nLow < n ? (rssN - rssLow) / (n - nLow) : NaN };
  } finally {
    await w.close();
    await srv.close();
  }
}

export async function longpollWake(): Promise<WorkloadResult> {
  const n = envNumber('BENCH_LONGPOLL_N', 3000);
  const nLow = envNumber('BENCH_LONGPOLL_N_LOW', 1000);
  const rounds = Math.max(1, envNumber('BENCH_LONGPOLL_ROUNDS', 5));
  const pairs = Math.max(1, envNumber('BENCH_LONGPOLL_PAIRS', 2));
  const base = process.env.BENCH_BASE_CLI ? path.resolve(process.env.BENCH_BASE_CLI) : undefined;
  const builds: [string, string][] = base
    ? [
        ['base', base],
        ['this', CLI],
      ]
    : [['this', CLI]];
  const runs: ServerRun[] = [];
  log(`longpoll-wake: bare Fastify holding ${n} parked requests (the memory baseline)`);
  const bare = await bareFastifyMemory(n, nLow);
  for (let p = 0; p < pairs; p++) {
    // Alternate the order, so neither build always runs first.
    for (const [name, cli] of p % 2 === 0 ? builds : [...builds].reverse()) {
      log(`longpoll-wake: ${name} (${cli}), ${n} waiters, ${rounds} wakes`);
      runs.push(await runServer(name, cli, n, nLow, rounds));
    }
  }
  const rows: Row[] = [];
  const summary: Record<string, unknown> = {};
  let ok = true;
  for (const [name] of builds) {
    const mine = runs.filter((r) => r.build === name);
    const med = (f: (x: ServerRun) => number) => mine.map(f).sort((a, b) => a - b)[mine.length >> 1]!;
    const p50 = med((r) => r.p50);
    const firstP50 = med((r) => r.first.p50);
    const kib = med((r) => r.bytesPerWaiter) / 1024;
    const marginalKib = med((r) => r.marginalBytesPerWaiter) / 1024;
    const errors = mine.flatMap((r) => r.errors);
    // The memory target is judged on what one more waiter costs (the marginal figure).
    const met = Math.max(p50, firstP50) <= TARGET_P50_MS && marginalKib * 1024 <= TARGET_BYTES_PER_WAITER;
    if (name === 'this') ok = met && errors.length === 0;
    const fig = (f: (x: ServerRun) => number) => round(med(f), 1);
    summary[name] = {
      first_p50_ms: round(firstP50, 1),
      first_p99_ms: fig((r) => r.first.p99),
      p50_ms: round(p50, 1),
      p99_ms: fig((r) => r.p99),
      append_ack_ms: fig((r) => r.ackMs),
      health_probe_ms: fig((r) => r.probeMs),
      kib_per_waiter: round(kib, 2),
      marginal_kib_per_waiter: round(marginalKib, 2),
      runs: mine.map((r) => ({
        first_p50: round(r.first.p50, 1),
        p50: round(r.p50, 1),
        p99: round(r.p99, 1),
        ack: round(r.ackMs, 1),
        probe: round(r.probeMs, 1),
        kib: round(r.bytesPerWaiter / 1024, 2),
        marginal_kib: round(r.marginalBytesPerWaiter / 1024, 2),
      })),
    };
    rows.push({
      name: `longpoll-wake ${n} ${name}`,
      recordsPerSec: null,
      p50Ms: round(p50, 1),
      p99Ms: fig((r) => r.p99),
      peakRssMB: null,
      notes:
        `first wake p50 ${firstP50.toFixed(1)} p99 ${med((r) => r.first.p99).toFixed(1)} ms; later wakes max ${med((r) => r.max).toFixed(1)} ms; waking append ack ${med((r) => r.ackMs).toFixed(1)} ms, ` +
        `health probe ${med((r) => r.probeMs).toFixed(1)} ms; ${kib.toFixed(1)} KiB RSS per parked waiter at ${n}, ` +
        `${marginalKib.toFixed(1)} KiB marginal (${nLow} → ${n}) against bare Fastify's ${(bare.perWaiter / 1024).toFixed(1)} / ${(bare.marginal / 1024).toFixed(1)} KiB; target p50 ≤ ${TARGET_P50_MS} ms, ≤ ${TARGET_BYTES_PER_WAITER / 1024} KiB marginal: ${met ? 'met' : '**MISSED**'}` +
        `${errors.length ? `; errors: ${errors.slice(0, 3).join('; ')}` : ''}`,
    });
  }
  summary.bare_fastify = { kib_per_waiter: round(bare.perWaiter / 1024, 2), marginal_kib_per_waiter: round(bare.marginal / 1024, 2) };
  return { workload: 'longpoll-wake', ok, rows, summary };
}

if (process.argv[2] === '--waiters') waiterProcess();
else runAsScript(import.meta.url, 'node dist/bench/longpoll-wake.js', () => longpollWake());
