// Workload wal-prealloc: what pre-allocated WAL files (SERVICE_WAL_PREALLOCATE) buy an `fsync`
// topic. One client appends single ~256 B records to an fsync topic, so every request waits for
// its own fdatasync. Two servers run side by side, one with pre-allocation off (the baseline:
// each fdatasync also writes the grown file size) and one with it on; they are measured in
// alternating rounds (off, on, off, on…) so that noise on the shared machine hits both alike.
// A 16 MiB WAL file size makes the run cross several file rotations, so the cost of preparing
// the next file (in the background) is inside the figures.
// Target: fsync-class single-record latency improves with pre-allocation.
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
  round,
  runLoad,
  startSpool,
  warmupMs,
  type ChildServer,
  type LoadResult,
  type Row,
  type WorkloadResult,
} from './lib.js';

const WAL_FILE_BYTES = 16 * 1024 * 1024;

interface Side {
  label: 'off' | 'on';
  srv: ChildServer;
  client: HttpClient;
  results: LoadResult[];
  cpuMs: number;
  peakRss: number;
  /** CPU notes of each round (other% shows a disturbed round). */
  notes: string[];
}

async function start(label: 'off' | 'on'): Promise<Side> {
  const srv = await startSpool({
    label: `wal-prealloc-${label}`,
    env: { SERVICE_WAL_PREALLOCATE: label === 'on' ? '1' : '0', SERVICE_WAL_FILE_BYTES: String(WAL_FILE_BYTES) },
  });
  const client = new HttpClient(srv.port, 1);
  await createTopic(client, 'prealloc', { durability: 'fsync' });
  return { label, srv, client, results: [], cpuMs: 0, peakRss: 0, notes: [] };
}

/** Merges rounds into one result: counts add up, latency samples are pooled (sorted). */
function pooled(rs: LoadResult[]): LoadResult {
  const sum = (f: (r: LoadResult) => number) => rs.reduce((n, r) => n + f(r), 0);
  const elapsedS = sum((r) => r.elapsedS);
  const statusCounts: Record<string, number> = {};
  for (const r of rs) for (const [k, v] of Object.entries(r.statusCounts)) statusCounts[k] = (statusCounts[k] ?? 0) + v;
  return {
    requests: sum((r) => r.requests),
    okRequests: sum((r) => r.okRequests),
    records: sum((r) => r.records),
    errors: sum((r) => r.errors),
    errorSamples: rs.flatMap((r) => r.errorSamples),
    statusCounts,
    elapsedS,
    latMs: Float64Array.from(rs.flatMap((r) => Array.from(r.latMs))).sort(),
    reqPerSec: sum((r) => r.requests) / elapsedS,
    recordsPerSec: sum((r) => r.records) / elapsedS,
    clientCpuPct: sum((r) => r.clientCpuPct * r.elapsedS) / elapsedS,
  };
}

export async function walPrealloc(): Promise<WorkloadResult> {
  const roundMs = benchMs(3);
  const rounds = envNumber('BENCH_ROUNDS', 4);
  const sides = [await start('off'), await start('on')];
  try {
    const bodies = Array.from({ length: 16 }, (_, k) => appendBody(1, k));
    for (const s of sides)
      await runLoad({
        client: s.client,
        concurrency: 1,
        path: '/v0/topics/prealloc',
        bodies,
        recordsPerRequest: 1,
        server: s.srv,
        durationMs: warmupMs(),
      });
    for (let r = 0; r < rounds; r++) {
      for (const s of sides) {
        log(`wal-prealloc: round ${r + 1}/${rounds}, pre-allocation ${s.label}, ${roundMs} ms`);
        s.srv.rss.reset();
        const cpu = new CpuSplitMeter(s.srv.pid).start();
        s.results.push(
          await runLoad({
            client: s.client,
            concurrency: 1,
            path: '/v0/topics/prealloc',
            bodies,
            recordsPerRequest: 1,
            server: s.srv,
            durationMs: roundMs,
          }),
        );
        const split = cpu.stop();
        s.cpuMs += (split.server / 100) * s.results.at(-1)!.elapsedS * 1000;
        s.notes.push(cpuNote(split));
        s.peakRss = Math.max(s.peakRss, s.srv.rss.peakBytes());
        s.srv.assertAlive();
      }
    }
  } finally {
    for (const s of sides) {
      s.client.close();
      await s.srv.close();
    }
  }
  const rows: Row[] = [];
  const p50: Record<string, number | null> = {};
  const p99: Record<string, number | null> = {};
  let errors = 0;
  for (const s of sides) {
    const r = pooled(s.results);
    errors += r.errors;
    const cpuUsPerOp = r.okRequests ? round((s.cpuMs * 1000) / r.okRequests, 1) : null;
    const row = loadRow(`fsync 1c, pre-allocation ${s.label}`, r, s.peakRss, `server CPU ${cpuUsPerOp} µs/append; ${rounds} rounds`, {
      server_cpu_us_per_op: cpuUsPerOp,
      rounds: s.notes,
    });
    rows.push(row);
    p50[s.label] = row.p50Ms;
    p99[s.label] = row.p99Ms;
  }
  const ratio = p50.on != null && p50.off ? p50.on / p50.off : null;
  const note =
    ratio === null
      ? 'n/a'
      : `p50 on/off = ${(ratio * 100).toFixed(1)}% (target < 100%); p99 on/off = ${((p99.on! / p99.off!) * 100).toFixed(1)}%`;
  log(`wal-prealloc: ${note}`);
  rows.push({ name: 'ratio pre-allocation on / off', recordsPerSec: null, p50Ms: null, p99Ms: null, peakRssMB: null, notes: note });
  return {
    workload: 'wal-prealloc',
    ok: errors === 0,
    rows,
    summary: {
      fsync_p50_1c_ms_off: p50.off,
      fsync_p50_1c_ms_on: p50.on,
      p50_on_vs_off: round(ratio, 3),
      targets: { p50_on_vs_off: '< 1.0' },
    },
    ...(errors ? { error: `${errors} non-2xx responses` } : {}),
  };
}
