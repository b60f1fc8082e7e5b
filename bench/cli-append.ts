// Workload cli-append: `spool append <topic>` (the CLI, a separate process) taking 1M NDJSON
// lines (BENCH_CLI_LINES) of ~100 B each on stdin, into one `disk` topic. Two runs: the lines
// piped in (a producer | spool append) and redirected from a file (spool append < file). Reports
// records/s from process start to exit (reading, checking each line with JSON.parse, batching,
// the HTTP requests, the server's work) and checks the topic count. Target: >= 150k records/s.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  CLI,
  CpuSplitMeter,
  cpuNote,
  HttpClient,
  envNumber,
  log,
  readCpuSeconds,
  round,
  startSpool,
  tempDir,
  type Row,
  type WorkloadResult,
} from './lib.js';

const TARGET_PER_SEC = 150_000;

/** Line i: a small event of ~100 bytes, JSON as a producer would write it. */
function line(i: number): string {
  return JSON.stringify({
    id: i,
    user: `user-${i % 9973}`,
    event: i % 7 === 0 ? 'purchase' : 'click',
    ts: 1767225600000 + i,
    tags: ['a', 'b'],
    amount: (i % 1000) / 10,
  });
}

function writeInput(file: string, n: number): number {
  const fd = fs.openSync(file, 'w');
  let bytes = 0;
  try {
    for (let i = 0; i < n; i += 10_000) {
      const chunk = Array.from({ length: Math.min(10_000, n - i) }, (_, k) => line(i + k)).join('\n') + '\n';
      bytes += fs.writeSync(fd, chunk);
    }
  } finally {
    fs.closeSync(fd);
  }
  return bytes;
}

interface Run {
  ms: number;
  /** CPU seconds of the CLI process (sampled every 50 ms until it exits, so a little low). */
  cliCpuS: number;
  summary: { count: number; first_seq: number; last_seq: number; batches: number; records_per_sec: number };
}

/** Runs the CLI with the file on stdin: `pipe` streams it through a pipe, else stdin is the file. */
async function runCli(url: string, topic: string, file: string, pipe: boolean): Promise<Run> {
  const t0 = process.hrtime.bigint();
  const stdin = pipe ? 'pipe' : fs.openSync(file, 'r');
  const p = spawn(process.execPath, [CLI, 'append', topic, '--json', '--url', url], { stdio: [stdin, 'pipe', 'pipe'] });
  if (typeof stdin === 'number') fs.closeSync(stdin);
  if (pipe) fs.createReadStream(file).pipe(p.stdin!);
  let out = '';
  let err = '';
  p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  let cliCpuS = 0;
  const sampler = setInterval(() => (cliCpuS = readCpuSeconds(p.pid!) ?? cliCpuS), 50);
  const code = await new Promise<number | null>((r) => p.once('exit', (c) => r(c)));
  clearInterval(sampler);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (code !== 0) throw new Error(`spool append exited ${code}: ${err.slice(-2000)}`);
  return { ms, cliCpuS, summary: JSON.parse(out) };
}

export async function cliAppend(): Promise<WorkloadResult> {
  const n = envNumber('BENCH_CLI_LINES', 1_000_000);
  const dir = tempDir('spool-bench-cli-');
  const file = path.join(dir, 'lines.ndjson');
  const bytes = writeInput(file, n);
  log(`cli-append: ${n} lines, ${round(bytes / n, 0)} B each on average`);
  const srv = await startSpool({ label: 'cli-append' });
  const client = new HttpClient(srv.port, 1);
  const rows: Row[] = [];
  let ok = true;
  const errors: string[] = [];
  try {
    for (const pipe of [true, false]) {
      const topic = pipe ? 'cli-pipe' : 'cli-file';
      await client.json('PUT', `/v0/topics/${topic}`, { durability: 'disk' });
      srv.rss.reset();
      const cpu = new CpuSplitMeter(srv.pid).start();
      const r = await runCli(srv.url, topic, file, pipe);
      const split = cpu.stop();
      srv.assertAlive();
      const state = await client.json('GET', `/v0/topics/${topic}`);
      const perSec = (n / r.ms) * 1000;
      const countOk = state.count === n && r.summary.count === n;
      if (!countOk) errors.push(`${topic}: topic count ${state.count}, CLI count ${r.summary.count}, expected ${n}`);
      if (perSec < TARGET_PER_SEC) errors.push(`${topic}: ${round(perSec, 0)} records/s < ${TARGET_PER_SEC}`);
      ok &&= countOk && perSec >= TARGET_PER_SEC;
      rows.push({
        name: `spool append, ${n} NDJSON lines ${pipe ? 'piped into stdin' : 'redirected from a file'}`,
        recordsPerSec: round(perSec, 0),
        p50Ms: null,
        p99Ms: null,
        peakRssMB: round(srv.rss.peakBytes() / (1024 * 1024), 1),
        notes: `${round(r.ms / 1000, 2)} s process start to exit, ${r.summary.batches} batches; CPU spool append ≥${round((r.cliCpuS / r.ms) * 1e5, 0)}%, ${cpuNote(split)} (other includes spool append)`,
        extra: { lines: n, input_bytes: bytes, cli_reported_per_sec: r.summary.records_per_sec, topic_count: state.count },
      });
      log(`cli-append ${topic}: ${round(perSec, 0)} records/s`);
    }
  } finally {
    client.close();
    await srv.close();
  }
  return { workload: 'cli-append', ok, rows, ...(errors.length ? { error: errors.join('; ') } : {}) };
}
