// Workload compaction (docs/ARCHITECTURE.md "Compaction"): what appends and catch-up reads lose
// while compaction runs. One pre-filled data dir (compaction off while it is made):
//   - `bench-cmp-dead`: BENCH_COMPACT_MB (256) of 1 KB records in a `disk` log, 600 of every 1000
//     deleted by tag (BENCH_COMPACT_PATTERN: `blocks` of 600, or `interleaved` 3 of every 5), so
//     every sealed segment (16 MiB) is 40 % live: compaction rewrites them all, copying 40 % of
//     each (the dearest case per byte given back);
//   - `bench-cmp-read`: 100k × 256 B for the catch-up reader.
// Each round copies it twice and starts a server on each copy, one with compaction off
// (SERVICE_COMPACT_LIVE_PERCENT=0: the baseline) and one with the default (50 %, 8 MiB/s), in
// alternating order (BENCH_COMPACT_ROUNDS, 2). On each: 1 s for compaction to begin, then
// 8 writers × 100 × 256 B into a `disk` topic for BENCH_SECONDS (5), then one reader reading
// `bench-cmp-read` from seq 0 in pages of 1000, pass after pass, for as long. Reports records/s,
// p50/p99 (per request, per page), server CPU per record, peak RSS, and what compaction gave back
// meanwhile (its /v0/metrics counters); the target is >= 0.9 of the baseline for both.
import fs from 'node:fs';
import path from 'node:path';
import {
  CpuSplitMeter,
  cpuNote,
  HttpClient,
  RawHttpConn,
  appendBody,
  appendMany,
  benchMs,
  createTopic,
  envNumber,
  log,
  percentile,
  readCpuSeconds,
  removeDir,
  round,
  runLoad,
  runAsScript,
  scanPage,
  sleep,
  startSpool,
  tempDir,
  warmupMs,
  MB,
  type ChildServer,
  type Row,
  type WorkloadResult,
} from './lib.js';

const SEGMENT_BYTES = 16 * 1024 * 1024;
const WRITERS = 8;
const BATCH = 100;
const PAGE = 1000;
const READ_RECORDS = 100_000;
const TARGET = 0.9;
const ENV = { SERVICE_SEGMENT_BYTES: String(SEGMENT_BYTES), SERVICE_CHECKPOINT_MS: '2000' };

/**
 * One batch of 1000 records of ~1 KB, 600 of them tagged `dead`: the first 600 (`blocks`, the
 * default: one deleted range per batch, each copied frame one piece) or 3 of every 5
 * (`interleaved`: 200 deleted ranges and 200 pieces per batch).
 */
function deadBody(pattern: string): Buffer {
  const pad = 'd'.repeat(1000);
  const dead = (i: number) => (pattern === 'interleaved' ? i % 5 < 3 : i < 600);
  const recs = Array.from({ length: 1000 }, (_, i) => (dead(i) ? `{"data":"${pad}","tag":"dead"}` : `{"data":"${pad}"}`));
  return Buffer.from(`{"records":[${recs.join(',')}]}`);
}

/** The data dir every run copies: made with compaction off, stopped cleanly. */
async function prefill(mb: number): Promise<string> {
  const dir = tempDir('spool-bench-compact-src-');
  const srv = await startSpool({
    label: 'compaction-prefill',
    dataDir: dir,
    keepDir: true,
    env: { ...ENV, SERVICE_COMPACT_LIVE_PERCENT: '0' },
  });
  let exit: Awaited<ReturnType<typeof srv.terminate>>;
  const client = new HttpClient(srv.port, 4);
  try {
    await createTopic(client, 'bench-cmp-dead', { durability: 'disk' });
    await createTopic(client, 'bench-cmp-read', { durability: 'disk' });
    const body = deadBody(process.env.BENCH_COMPACT_PATTERN ?? 'blocks');
    const batches = Math.ceil(mb);
    log(`compaction: pre-filling ${batches} MB of 1 KB records, 60 % to be deleted`);
    let next = 0;
    const writer = async () => {
      while (next < batches) {
        next++;
        const r = await client.post('/v0/topics/bench-cmp-dead?return_seqs=false', body);
        if (r.status === 429) {
          next--;
          await sleep(50);
        } else if (r.status !== 200) throw new Error(`pre-fill -> ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
      }
    };
    await Promise.all(Array.from({ length: 4 }, () => writer()));
    const del = await client.json('POST', '/v0/topics/bench-cmp-dead/delete', { match: 'dead' });
    log(`compaction: deleted ${del.deleted} records`);
    await appendMany({
      client,
      topic: 'bench-cmp-read',
      total: READ_RECORDS,
      batch: 1000,
      concurrency: 4,
      deadlineMs: 300_000,
      server: srv,
    });
    srv.assertAlive();
  } finally {
    client.close();
    exit = await srv.terminate();
  }
  if (exit.code !== 0) throw new Error(`pre-fill server exited with ${exit.code} (${exit.signal})`);
  return dir;
}

interface Phase {
  records: number;
  seconds: number;
  latMs: Float64Array;
  cpuS: number;
  note: string;
}

interface RunResult {
  compaction: boolean;
  appends: Phase;
  reads: Phase;
  peakRss: number;
  /** What compaction gave back during each phase (its counters; swaps come with checkpoints). */
  reclaimed: { appends: number; reads: number };
  rewritten: number;
}

async function compactionCounters(client: HttpClient): Promise<{ bytes: number; rewritten: number }> {
  const text = (await client.request('GET', '/v0/metrics')).body.toString('utf8');
  const counter = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { bytes: counter('spool_compaction_bytes_reclaimed_total'), rewritten: counter('spool_compaction_segments_rewritten_total') };
}

async function appendPhase(client: HttpClient, srv: ChildServer): Promise<Phase> {
  const bodies = Array.from({ length: WRITERS }, (_, w) => appendBody(BATCH, w * BATCH));
  const common = { client, concurrency: WRITERS, path: '/v0/topics/bench-cmp-app', bodies, recordsPerRequest: BATCH, server: srv };
  await runLoad({ ...common, durationMs: warmupMs() });
  const split = new CpuSplitMeter(srv.pid).start();
  const cpu0 = readCpuSeconds(srv.pid) ?? 0;
  const r = await runLoad({ ...common, durationMs: benchMs(5) });
  const cpuS = (readCpuSeconds(srv.pid) ?? 0) - cpu0;
  if (r.errors) throw new Error(`appends: ${r.errors} non-2xx: ${r.errorSamples.join(' | ')}`);
  return { records: r.records, seconds: r.elapsedS, latMs: r.latMs, cpuS, note: cpuNote(split.stop()) };
}

async function readPhase(srv: ChildServer): Promise<Phase> {
  const reader = new RawHttpConn(srv.port);
  const split = new CpuSplitMeter(srv.pid).start();
  const cpu0 = readCpuSeconds(srv.pid) ?? 0;
  const pageMs: number[] = [];
  let records = 0;
  const t0 = process.hrtime.bigint();
  const end = Date.now() + benchMs(5);
  try {
    while (Date.now() < end) {
      for (let from = 0; Date.now() < end;) {
        const r = await reader.post('/v0/topics/bench-cmp-read/diff', JSON.stringify({ from_seq: from, limit: PAGE }));
        if (r.status !== 200) throw new Error(`diff from_seq=${from} -> ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
        pageMs.push(Number(r.ns) / 1e6);
        const info = scanPage(r.body, false);
        records += info.nextFromSeq - from;
        from = info.nextFromSeq;
        if (info.caughtUp) break;
      }
    }
  } finally {
    reader.close();
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpuS = (readCpuSeconds(srv.pid) ?? 0) - cpu0;
  return { records, seconds, latMs: Float64Array.from(pageMs).sort(), cpuS, note: cpuNote(split.stop()) };
}

async function run(src: string, compaction: boolean): Promise<RunResult> {
  const dir = tempDir(`spool-bench-compact-${compaction ? 'on' : 'off'}-`);
  fs.cpSync(src, dir, { recursive: true });
  fs.rmSync(path.join(dir, 'LOCK'), { force: true });
  const pace = process.env.BENCH_COMPACT_BYTES_PER_SEC;
  const env = { ...ENV, ...(compaction ? (pace ? { SERVICE_COMPACT_BYTES_PER_SEC: pace } : {}) : { SERVICE_COMPACT_LIVE_PERCENT: '0' }) };
  const srv = await startSpool({ label: `compaction-${compaction ? 'on' : 'off'}`, dataDir: dir, env });
  const client = new HttpClient(srv.port, WRITERS);
  try {
    await createTopic(client, 'bench-cmp-app', { durability: 'disk' });
    await sleep(1000); // compaction looks within a second of the recovery's inputs
    const before = await compactionCounters(client);
    srv.rss.reset();
    log(`compaction (${compaction ? 'on' : 'off'}): appends`);
    const appends = await appendPhase(client, srv);
    const mid = await compactionCounters(client);
    log(`compaction (${compaction ? 'on' : 'off'}): catch-up reads`);
    const reads = await readPhase(srv);
    const after = await compactionCounters(client);
    srv.assertAlive();
    const reclaimed = { appends: mid.bytes - before.bytes, reads: after.bytes - mid.bytes };
    return { compaction, appends, reads, peakRss: srv.rss.peakBytes(), reclaimed, rewritten: after.rewritten - before.rewritten };
  } finally {
    client.close();
    await srv.close();
    removeDir(dir);
  }
}

function rate(p: Phase): number {
  return p.records / p.seconds;
}

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

function phaseRow(name: string, runs: RunResult[], pick: (r: RunResult) => Phase, unit: string, notes: string): Row {
  const phases = runs.map(pick);
  const lat = Float64Array.from(phases.flatMap((p) => [...p.latMs])).sort();
  const records = phases.reduce((a, p) => a + p.records, 0);
  const cpuUs = (phases.reduce((a, p) => a + p.cpuS, 0) / records) * 1e6;
  return {
    name,
    recordsPerSec: round(mean(phases.map(rate)), 0),
    p50Ms: round(percentile(lat, 50), 3),
    p99Ms: round(percentile(lat, 99), 3),
    peakRssMB: round(Math.max(...runs.map((r) => r.peakRss)) / MB, 1),
    notes: `mean of ${phases.length} runs (${phases.map((p) => Math.round(rate(p) / 1000)).join('/')}k); server CPU ${cpuUs.toFixed(2)} µs/record; p50/p99 per ${unit}; ${notes}; ${phases.map((p) => p.note).join(' | ')}`,
    extra: { runs_records_per_s: phases.map((p) => round(rate(p), 0)), server_cpu_us_per_record: round(cpuUs, 3) },
  };
}

export async function compaction(): Promise<WorkloadResult> {
  const mb = envNumber('BENCH_COMPACT_MB', 256);
  const rounds = Math.max(1, Math.floor(envNumber('BENCH_COMPACT_ROUNDS', 2)));
  const src = await prefill(mb);
  const off: RunResult[] = [];
  const on: RunResult[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      // Alternating order: whatever the machine does meanwhile hits both.
      for (const c of i % 2 === 0 ? [false, true] : [true, false]) (c ? on : off).push(await run(src, c));
    }
  } finally {
    removeDir(src);
  }
  const mbOf = (b: number) => round(b / MB, 0);
  const reclaimed = on.map((r) => `${mbOf(r.reclaimed.appends)} + ${mbOf(r.reclaimed.reads)} MB, ${r.rewritten} segments`).join('; ');
  const appendRatio = mean(on.map((r) => rate(r.appends))) / mean(off.map((r) => rate(r.appends)));
  const readRatio = mean(on.map((r) => rate(r.reads))) / mean(off.map((r) => rate(r.reads)));
  const verdict = (x: number) => `${round(x, 3)} of the baseline (target >= ${TARGET}: ${x >= TARGET ? 'met' : 'MISSED'})`;
  const rows = [
    phaseRow(`compaction off: appends (disk, ${WRITERS} writers × ${BATCH})`, off, (r) => r.appends, 'request', 'baseline'),
    phaseRow(
      `compaction on: appends (disk, ${WRITERS} writers × ${BATCH})`,
      on,
      (r) => r.appends,
      'request',
      `${verdict(appendRatio)}; compaction gave back (appends + reads phase) ${reclaimed}`,
    ),
    phaseRow('compaction off: catch-up reads (1 reader, pages of 1000)', off, (r) => r.reads, 'page', 'baseline'),
    phaseRow('compaction on: catch-up reads (1 reader, pages of 1000)', on, (r) => r.reads, 'page', verdict(readRatio)),
  ];
  // Compaction must have been at work through both phases, or the comparison says nothing.
  const idle = on.filter((r) => r.reclaimed.appends <= 0 || r.reclaimed.reads <= 0);
  const problems = idle.length ? [`compaction gave nothing back during a phase (${reclaimed}): raise BENCH_COMPACT_MB`] : [];
  return {
    workload: 'compaction',
    ok: problems.length === 0,
    ...(problems.length ? { error: problems.join('; ') } : {}),
    rows,
    summary: {
      append_ratio: round(appendRatio, 3),
      read_ratio: round(readRatio, 3),
      target: TARGET,
      met: appendRatio >= TARGET && readRatio >= TARGET,
      dead_mb: mb,
      rounds,
    },
  };
}

runAsScript(import.meta.url, 'node dist/bench/compaction.js', () => compaction());
