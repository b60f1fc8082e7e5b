// Workload watch-fanout: write-to-deliver latency of watch streams (docs/WATCH.md) at a fixed
// write rate, for N watchers of one topic (N = 1, 10, 100, 1000; BENCH_WATCH_N or, run directly,
// argv: `node dist/bench/watch-fanout.js 100 1000`).
//
// Per N: a fresh server and one topic with the default config; N sessions (POST /v0/watch
// {topics:{t:{tail:true}}}), one SSE connection each (bench/watch-client.ts: raw sockets,
// minimal scanning), every one caught up before writing starts. A writer in this process sends
// single-record appends open-loop at BENCH_WATCH_RATE (500) records/s: BENCH_WATCH_WARMUP_MS
// (2000) of unmeasured warm-up, then BENCH_SECONDS (10) measured. Each record's `data` carries
// its send time (process.hrtime.bigint(), taken just before the request is written to a keep-alive
// raw socket of a small pool, RawConnPool of lib.ts; BENCH_WATCH_CLIENT=http: node:http's agent,
// which adds ~50-70 µs per request on this machine before the request leaves) and is padded to
// BENCH_WATCH_RECORD_BYTES (256). Latency = the watcher's hrtime when the chunk
// holding the record is read − that send time, for every measured record at every watcher
// (hrtime is CLOCK_MONOTONIC, shared by all processes of the machine).
// After the writer stops the run waits (≤ 10 s) until every watcher has every seq, then counts
// lost seqs (any seq missing at any watcher) and duplicates.
//
// Watchers live in this process (BENCH_WATCH_PROCS=0) or are split across k child processes
// (BENCH_WATCH_PROCS=k); by default 0 below 100 watchers, 1 below 1000, 2 from 1000 on, so the
// writer's event loop (whose timers and acks are measured) is not slowed by the watchers. CPU is reported per party: server,
// writer (this process, with the in-process watchers), watcher children, everything else.
//
// Targets (2 cores shared by server and load generator): 1 and 10 watchers p50 ≤ 0.5 ms, p99 ≤
// 2 ms; 100 watchers p50 ≤ 1.5 ms, p99 ≤ 10 ms, nothing lost; 1000 watchers p99 ≤ 50 ms, nothing
// lost.
//
// BENCH_BASE_CLI=<checkout>/dist/cli.js: for each N, that build (a baseline, e.g. main's) runs first
// and this one after it, each reported on its own row.
//
// BENCH_WATCH_CPU_PROF=<dir>: the server runs with --cpu-prof into <dir> and is stopped with
// SIGTERM, so V8 writes its profiles (one per thread).
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CLI,
  CpuMeter,
  CpuSplitMeter,
  HttpClient,
  clientKindFrom,
  concurrentClient,
  benchMs,
  createTopic,
  envNumber,
  log,
  round,
  sleep,
  startSpool,
  MB,
  type ChildServer,
  type Row,
  type PostClient,
  type WorkloadResult,
  runAsScript,
} from './lib.js';
import { Hist, WatcherGroup, type FromChild, type GroupResult, type ToChild } from './watch-client.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CLIENT_SCRIPT = path.join(here, 'watch-client.js');
const TOPIC = 'watch-fanout';
const DEFAULT_N = [1, 10, 100, 1000];

interface Target {
  p50?: number;
  p99: number;
  noLoss: boolean;
}

function targetFor(n: number): Target | undefined {
  if (n <= 10) return { p50: 0.5, p99: 2, noLoss: true };
  if (n <= 100) return { p50: 1.5, p99: 10, noLoss: true };
  if (n <= 1000) return { p99: 50, noLoss: true };
  return undefined;
}

// ---- watcher groups: in-process or child processes ---------------------------------------------

interface Group {
  open(urls: string[]): Promise<{ caughtUp: number; errors: string[] }>;
  complete(upTo: number): Promise<number>;
  result(expectSeqs: number): Promise<GroupResult>;
  close(): Promise<void>;
  readonly pid: number | undefined;
}

function localGroup(port: number, base: bigint, maxSeq: number): Group {
  const g = new WatcherGroup(port, base, maxSeq);
  return {
    pid: undefined,
    open: (urls) => g.open(urls),
    complete: async (upTo) => g.complete(upTo),
    result: async (e) => g.result(e),
    close: async () => g.close(),
  };
}

function childGroup(port: number, base: bigint, maxSeq: number): Group {
  const child: ChildProcess = fork(CLIENT_SCRIPT, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let waiting: { type: FromChild['type']; resolve: (m: any) => void; reject: (e: Error) => void } | undefined;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.on('message', (m: FromChild) => {
    const w = waiting;
    if (!w) return;
    waiting = undefined;
    if (m.type === 'error') w.reject(new Error(`watcher process: ${m.message}`));
    else w.resolve(m);
  });
  child.once('exit', (code, sig) => waiting?.reject(new Error(`watcher process exited (code ${code}, signal ${sig})`)));
  const ask = <T extends FromChild>(msg: ToChild, type: T['type']): Promise<T> =>
    new Promise((resolve, reject) => {
      waiting = { type, resolve, reject };
      child.send(msg);
    });
  return {
    pid: child.pid,
    open: async (urls) =>
      ask<{ type: 'opened'; caughtUp: number; errors: string[] }>({ type: 'open', port, base: base.toString(), maxSeq, urls }, 'opened'),
    complete: async (upTo) => (await ask<{ type: 'complete'; n: number }>({ type: 'complete', upTo }, 'complete')).n,
    result: async (expectSeqs) => (await ask<{ type: 'result'; result: GroupResult }>({ type: 'result', expectSeqs }, 'result')).result,
    close: async () => {
      if (child.connected) child.send({ type: 'close' } satisfies ToChild);
      const t = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(t);
    },
  };
}

// ---- open-loop writer --------------------------------------------------------------------------

interface WriteStats {
  sent: number;
  ok: number;
  errors: string[];
  /** Worst delay of a send behind its schedule, ms (the writer's event loop lagging). */
  maxLagMs: number;
  ackMs: number[];
}

/**
 * Sends `count` single-record appends at `rate`/s, each stamped with its send time; resolves
 * once every request is answered.
 */
function writeAtRate(
  client: Pick<PostClient, 'post'>,
  base: bigint,
  rate: number,
  count: number,
  measured: boolean,
  pad: string,
): Promise<WriteStats> {
  const st: WriteStats = { sent: 0, ok: 0, errors: [], maxLagMs: 0, ackMs: [] };
  const p = `/v0/topics/${TOPIC}`;
  const intervalNs = 1e9 / rate;
  const flag = measured ? ',"m":1' : '';
  let inflight = 0;
  return new Promise((resolve) => {
    const t0 = Number(process.hrtime.bigint() - base);
    const done = () => {
      if (st.sent === count && inflight === 0) resolve(st);
    };
    const tick = () => {
      let now = Number(process.hrtime.bigint() - base);
      while (st.sent < count && t0 + st.sent * intervalNs <= now) {
        const lag = (now - (t0 + st.sent * intervalNs)) / 1e6;
        if (lag > st.maxLagMs) st.maxLagMs = lag;
        now = Number(process.hrtime.bigint() - base);
        const body = `{"records":[{"data":{"wt":${now}${flag},"pad":"${pad}"}}]}`;
        st.sent++;
        inflight++;
        client.post(p, body).then(
          (r) => {
            inflight--;
            if (r.status >= 200 && r.status < 300) {
              st.ok++;
              st.ackMs.push(Number(r.ns) / 1e6);
            } else if (st.errors.length < 5) st.errors.push(`${r.status} ${r.body.toString('utf8').slice(0, 200)}`);
            done();
          },
          (err: Error) => {
            inflight--;
            if (st.errors.length < 5) st.errors.push(err.message);
            done();
          },
        );
      }
      if (st.sent < count) {
        const waitMs = (t0 + st.sent * intervalNs - Number(process.hrtime.bigint() - base)) / 1e6;
        setTimeout(tick, Math.max(0, Math.floor(waitMs)));
      } else done();
    };
    tick();
  });
}

// ---- one run -----------------------------------------------------------------------------------

async function openSessions(client: HttpClient, n: number): Promise<string[]> {
  const urls: string[] = new Array(n);
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const j = await client.json('POST', '/v0/watch', { topics: { [TOPIC]: { tail: true } } });
      urls[i] = j.stream_url as string;
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return urls;
}

function procsFor(n: number): number {
  const v = process.env.BENCH_WATCH_PROCS;
  if (v !== undefined && v.trim() !== '') return Math.floor(envNumber('BENCH_WATCH_PROCS', 0));
  // Measured on the 2-core box: at 100 watchers, watchers in the writer's process delay its
  // event loop (append ack p50 1.8 ms vs 0.95 ms, delivery p99 ~2x); at 1 and 10 they make no
  // difference; at 1000 the server is saturated whether 1, 2 or 3 processes read.
  return n < 100 ? 0 : n < 1000 ? 1 : 2;
}

async function runOne(
  n: number,
  build?: { name: string; cli: string },
): Promise<{ row: Row; ok: boolean; error?: string; summary: Record<string, unknown>; other: number }> {
  const rate = envNumber('BENCH_WATCH_RATE', 500);
  const measureMs = benchMs(10);
  const warmMs = envNumber('BENCH_WATCH_WARMUP_MS', 2000);
  const recordBytes = envNumber('BENCH_WATCH_RECORD_BYTES', 256);
  const procs = procsFor(n);
  const profDir = process.env.BENCH_WATCH_CPU_PROF;
  const warmCount = Math.round((rate * warmMs) / 1000);
  const measCount = Math.max(1, Math.round((rate * measureMs) / 1000));
  const total = warmCount + measCount;
  // data = {"wt":<≤12 digits>,"m":1,"pad":"…"}: pad to recordBytes.
  const pad = 'x'.repeat(Math.max(0, recordBytes - `{"wt":000000000000,"m":1,"pad":""}`.length));
  const base = process.hrtime.bigint();

  const srv: ChildServer = await startSpool({
    label: `watch-fanout-${n}`,
    ...(build ? { cli: build.cli } : {}),
    ...(profDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] } : {}),
  });
  const admin = new HttpClient(srv.port, 16);
  const writer = concurrentClient(srv.port, clientKindFrom('BENCH_WATCH_CLIENT'), 32);
  const groups: Group[] = [];
  try {
    await createTopic(admin, TOPIC, {});
    const cfg = await admin.json('GET', `/v0/topics/${TOPIC}?touch=false`);
    const rss0 = srv.rss.peakBytes();
    log(`watch-fanout N=${n}: opening ${n} sessions/streams (${procs === 0 ? 'in this process' : `${procs} watcher processes`})`);
    const urls = await openSessions(admin, n);
    const k = Math.max(1, procs);
    for (let i = 0; i < k; i++) groups.push(procs === 0 ? localGroup(srv.port, base, total + 64) : childGroup(srv.port, base, total + 64));
    const opened = await Promise.all(groups.map((g, i) => g.open(urls.filter((_, j) => j % k === i))));
    const caughtUp = opened.reduce((a, o) => a + o.caughtUp, 0);
    if (caughtUp !== n) throw new Error(`only ${caughtUp}/${n} watchers caught up: ${opened.flatMap((o) => o.errors).join('; ')}`);
    await sleep(200);
    const rssOpen = srv.rss.peakBytes();

    log(`watch-fanout N=${n}: warm-up ${warmCount} records at ${rate}/s`);
    const warm = await writeAtRate(writer, base, rate, warmCount, false, pad);
    srv.rss.reset();
    const cpu = new CpuSplitMeter(srv.pid).start();
    const childCpu = groups.filter((g) => g.pid !== undefined).map((g) => new CpuMeter(g.pid!).start());
    log(`watch-fanout N=${n}: measuring ${measCount} records at ${rate}/s`);
    const t0 = process.hrtime.bigint();
    const meas = await writeAtRate(writer, base, rate, measCount, true, pad);
    const sendS = Number(process.hrtime.bigint() - t0) / 1e9;
    const split = cpu.stop();
    const watcherCpu = childCpu.map((c) => c.stop());
    const watcherCpuSum = watcherCpu.reduce((a, b) => a + b, 0);
    const other = Math.max(0, split.other - watcherCpuSum);

    const written = warm.ok + meas.ok;
    const writeErrors = [...warm.errors, ...meas.errors];
    // Drain: every watcher has every seq, or 10 s.
    const drainStart = Date.now();
    for (;;) {
      const c = (await Promise.all(groups.map((g) => g.complete(written)))).reduce((a, b) => a + b, 0);
      if (c === n || Date.now() - drainStart > 10_000) break;
      await sleep(100);
    }
    const drainMs = Date.now() - drainStart;
    const peak = srv.rss.peakBytes();
    srv.assertAlive();
    const results = await Promise.all(groups.map((g) => g.result(written)));
    const hist = new Hist();
    for (const r of results) hist.merge(r.hist);
    const sum = (f: (r: GroupResult) => number) => results.reduce((a, r) => a + f(r), 0);
    const lost = sum((r) => r.lost);
    const dup = sum((r) => r.dup);
    const dropped = sum((r) => r.dropped);
    const unexpected = sum((r) => r.unexpected);
    const measured = sum((r) => r.measured);
    const clientErrors = results.flatMap((r) => r.errors);
    const p50 = hist.percentileMs(50);
    const p99 = hist.percentileMs(99);
    const maxMs = hist.maxNs / 1e6;
    const deliveredPerS = measured / sendS;
    const ackSorted = Float64Array.from(meas.ackMs).sort();
    const ackP50 = ackSorted.length ? ackSorted[Math.floor(ackSorted.length / 2)]! : NaN;
    const ackP99 = ackSorted.length ? ackSorted[Math.min(ackSorted.length - 1, Math.ceil(ackSorted.length * 0.99) - 1)]! : NaN;

    const tgt = targetFor(n);
    const misses: string[] = [];
    if (tgt) {
      if (tgt.p50 !== undefined && !(p50 <= tgt.p50)) misses.push(`p50 > ${tgt.p50}`);
      if (!(p99 <= tgt.p99)) misses.push(`p99 > ${tgt.p99}`);
      if (tgt.noLoss && lost > 0) misses.push('lost records');
    }
    const tgtText = tgt
      ? `target ${tgt.p50 !== undefined ? `p50 ≤ ${tgt.p50}, ` : ''}p99 ≤ ${tgt.p99}${tgt.noLoss ? ', no loss' : ''}: ${misses.length ? `**MISSED** (${misses.join(', ')})` : 'met'}`
      : 'no target';
    const problems: string[] = [];
    if (writeErrors.length) problems.push(`${written}/${total} appends ok: ${writeErrors.join('; ')}`);
    if (lost || dup || unexpected) problems.push(`lost ${lost}, dup ${dup}, unexpected ${unexpected}`);
    if (dropped) problems.push(`${dropped} watch connections dropped`);
    if (clientErrors.length) problems.push(clientErrors.join('; '));
    if (measured !== n * meas.ok && !lost) problems.push(`measured deliveries ${measured} != ${n} × ${meas.ok}`);

    const cpuText = `CPU server ${Math.round(split.server)}% writer${procs === 0 ? '+watchers' : ''} ${Math.round(split.client)}%${procs ? ` watchers ${watcherCpu.map((c) => Math.round(c)).join('+')}%` : ''} other ${Math.round(other)}%${split.steal >= 5 ? ` steal ${Math.round(split.steal)}%` : ''}`;
    const notes = `max ${maxMs.toFixed(1)} ms; lost ${lost}, dup ${dup}; ${tgtText}; append ack p50 ${ackP50.toFixed(2)} p99 ${ackP99.toFixed(2)} ms; ${cpuText}; ${procs === 0 ? 'watchers in writer process' : `watchers in ${procs} processes`}`;
    log(
      `watch-fanout N=${n}: ${Math.round(deliveredPerS)} deliveries/s, p50 ${p50.toFixed(3)} p99 ${p99.toFixed(3)} max ${maxMs.toFixed(1)} ms, lost ${lost} dup ${dup}, peak RSS ${(peak / MB).toFixed(0)} MB; append ack p50 ${ackP50.toFixed(3)} p99 ${ackP99.toFixed(3)} ms; writer lag max ${Math.max(warm.maxLagMs, meas.maxLagMs).toFixed(1)} ms; ${cpuText}; drain ${drainMs} ms`,
    );
    const summary = {
      n,
      ...(build ? { build: build.name } : {}),
      delivered_per_s: round(deliveredPerS, 0),
      expected_per_s: round((n * meas.ok) / sendS, 0),
      p50_ms: round(p50, 3),
      p99_ms: round(p99, 3),
      max_ms: round(maxMs, 3),
      lost,
      dup,
      peak_rss_mb: round(peak / MB, 1),
      target_met: tgt ? misses.length === 0 : null,
    };
    return {
      other: other + split.steal,
      ok: problems.length === 0,
      ...(problems.length ? { error: problems.join('; ') } : {}),
      summary,
      row: {
        name: `watch-fanout N=${n}${build ? ` ${build.name}` : ''}`,
        recordsPerSec: round(deliveredPerS, 0),
        p50Ms: round(p50, 3),
        p99Ms: round(p99, 3),
        peakRssMB: round(peak / MB, 1),
        notes,
        extra: {
          watchers: n,
          rate,
          record_bytes: recordBytes,
          topic_config: { durability: cfg.durability ?? cfg.config?.durability },
          watcher_procs: procs,
          measured_records: meas.ok,
          warmup_records: warm.ok,
          send_seconds: round(sendS, 3),
          deliveries: measured,
          p90_ms: round(hist.percentileMs(90), 3),
          p999_ms: round(hist.percentileMs(99.9), 3),
          max_ms: round(maxMs, 3),
          lost,
          dup,
          unexpected,
          dropped,
          drain_ms: drainMs,
          writer_max_lag_ms: round(Math.max(warm.maxLagMs, meas.maxLagMs), 2),
          append_ack_p50_ms: round(ackP50, 3),
          append_ack_p99_ms: round(ackP99, 3),
          rss_before_watchers_mb: round(rss0 / MB, 1),
          rss_watchers_open_mb: round(rssOpen / MB, 1),
          server_cpu_pct: round(split.server, 0),
          writer_cpu_pct: round(split.client, 0),
          watcher_procs_cpu_pct: watcherCpu.map((c) => round(c, 0)),
          other_cpu_pct: round(other, 0),
          steal_pct: round(split.steal, 0),
          ...(problems.length ? { problems } : {}),
        },
      },
    };
  } finally {
    await Promise.all(groups.map((g) => g.close().catch(() => undefined)));
    admin.close();
    writer.close();
    if (profDir) {
      const t = await srv.terminate(30_000);
      log(`watch-fanout N=${n}: server stopped for --cpu-prof (${t.ms.toFixed(0)} ms, code ${t.code}); profiles in ${profDir}`);
    }
    await srv.close();
  }
}

function listFromEnv(): number[] {
  const v = process.env.BENCH_WATCH_N;
  if (v === undefined || v.trim() === '') return DEFAULT_N;
  return v.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_WATCH_N: bad watcher count ${JSON.stringify(s)}`);
    return n;
  });
}

export async function watchFanout(ns: number[] = listFromEnv()): Promise<WorkloadResult> {
  const rows: Row[] = [];
  const summary: Record<string, unknown>[] = [];
  const errors: string[] = [];
  const tries = Math.max(1, Math.floor(envNumber('BENCH_WATCH_TRIES', 3)));
  const maxOther = envNumber('BENCH_WATCH_MAX_OTHER_CPU', 20);
  // BENCH_BASE_CLI: a baseline build (another checkout's dist/cli.js) measured before this one
  // for each N, in the same run.
  const base = process.env.BENCH_BASE_CLI ? path.resolve(process.env.BENCH_BASE_CLI) : undefined;
  const builds: ({ name: string; cli: string } | undefined)[] = base
    ? [
        { name: 'base', cli: base },
        { name: 'this', cli: CLI },
      ]
    : [undefined];
  for (const n of ns) {
    for (const build of builds) {
      const label = `N=${n}${build ? ` ${build.name}` : ''}`;
      try {
        // The machine is shared: a run disturbed by other processes or the hypervisor (CPU "other"
        // + steal above BENCH_WATCH_MAX_OTHER_CPU %) is repeated, up to BENCH_WATCH_TRIES runs; the least
        // disturbed one is kept.
        let r = await runOne(n, build);
        let last = r.other;
        for (let t = 2; t <= tries && r.other > maxOther; t++) {
          log(`watch-fanout ${label}: other processes and steal took ${Math.round(last)}% CPU (> ${maxOther}%): run ${t}/${tries}`);
          const again = await runOne(n, build);
          last = again.other;
          if (again.other < r.other) r = again;
        }
        if (r.other > maxOther) r.row.notes += `; DISTURBED: other processes and steal took ${Math.round(r.other)}% CPU`;
        rows.push(r.row);
        summary.push(r.summary);
        if (!r.ok) errors.push(`${label}: ${r.error}`);
      } catch (err) {
        log(`watch-fanout ${label} FAILED: ${(err as Error).stack ?? err}`);
        errors.push(`${label}: ${(err as Error).message}`);
        rows.push({
          name: `watch-fanout ${label} FAILED`,
          recordsPerSec: null,
          p50Ms: null,
          p99Ms: null,
          peakRssMB: null,
          notes: (err as Error).message.replace(/\s+/g, ' ').replace(/\|/g, '\\|').slice(0, 300),
        });
      }
    }
  }
  return {
    workload: 'watch-fanout',
    ok: errors.length === 0,
    rows,
    summary: { runs: summary },
    ...(errors.length ? { error: errors.join('; ') } : {}),
  };
}

// `node dist/bench/watch-fanout.js [N ...]`
runAsScript(import.meta.url, 'node dist/bench/watch-fanout.js [watchers ...]', watchFanout);
