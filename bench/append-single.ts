// Workload append-single: single-record appends (one ~256 B record per request) at 1 and 64
// clients, to a `memory`, a `disk` and an `fsync` topic, ~4 s each (BENCH_SECONDS). `memory` acks
// on enqueue, without waiting for the WAL thread: what ack-on-enqueue for `disk` would give
// (docs/PERFORMANCE.md). In the same run a bare
// Fastify JSON echo server (bench/echo-server.ts, its own child process) is measured with the
// same client and payload, as the ceiling for "HTTP + JSON on this machine".
// Targets: spool disk at 64 clients >= 80% of echo at 64; fsync >= 75% of disk at 64;
// 1-client p50 disk <= 0.35 ms, fsync <= 0.6 ms.
import {
  CpuSplitMeter,
  cpuNote,
  HttpClient,
  appendBody,
  benchMs,
  createTopic,
  loadRow,
  log,
  round,
  runLoad,
  startEcho,
  startSpool,
  warmupMs,
  type ChildServer,
  type LoadResult,
  type Row,
  type WorkloadResult,
} from './lib.js';

const CLIENTS = [1, 64] as const;

async function measure(
  srv: ChildServer,
  name: string,
  path: string,
  clients: number,
  durationMs: number,
): Promise<{ row: Row; r: LoadResult }> {
  const client = new HttpClient(srv.port, clients);
  try {
    const bodies = Array.from({ length: 16 }, (_, k) => appendBody(1, k));
    const common = { client, concurrency: clients, path, bodies, recordsPerRequest: 1, server: srv };
    await runLoad({ ...common, durationMs: warmupMs() });
    srv.rss.reset();
    const cpu = new CpuSplitMeter(srv.pid).start();
    log(`append-single: ${name}, ${durationMs} ms`);
    const r = await runLoad({ ...common, durationMs });
    const split = cpu.stop();
    const peak = srv.rss.peakBytes();
    srv.assertAlive();
    const notes = cpuNote(split) + (r.errors ? `; ${r.errors} non-2xx` : '');
    return {
      row: loadRow(name, r, peak, notes, { clients, server_cpu_pct: round(split.server, 0), other_cpu_pct: round(split.other, 0) }),
      r,
    };
  } finally {
    client.close();
  }
}

export async function appendSingle(): Promise<WorkloadResult> {
  const durationMs = benchMs(4);
  const rows: Row[] = [];
  const rps: Record<string, number> = {};
  const p50: Record<string, number | null> = {};
  let errors = 0;

  const echo = await startEcho();
  try {
    for (const c of CLIENTS) {
      const { row, r } = await measure(echo, `echo (bare Fastify) ${c}c`, '/echo', c, durationMs);
      rows.push(row);
      rps[`echo_${c}`] = r.reqPerSec;
      errors += r.errors;
    }
  } finally {
    await echo.close();
  }

  const srv = await startSpool({ label: 'append-single' });
  try {
    const admin = new HttpClient(srv.port, 1);
    try {
      await createTopic(admin, 'single-disk', { durability: 'disk' });
      await createTopic(admin, 'single-fsync', { durability: 'fsync' });
      await createTopic(admin, 'single-memory', { durability: 'memory' });
    } finally {
      admin.close();
    }
    for (const cls of ['memory', 'disk', 'fsync'] as const) {
      for (const c of CLIENTS) {
        const { row, r } = await measure(srv, `append-single ${cls} ${c}c`, `/v0/topics/single-${cls}`, c, durationMs);
        rows.push(row);
        rps[`${cls}_${c}`] = r.reqPerSec;
        p50[`${cls}_${c}`] = row.p50Ms;
        errors += r.errors;
      }
    }
  } finally {
    await srv.close();
  }

  const diskVsEcho = rps.disk_64! / rps.echo_64!;
  const fsyncVsDisk = rps.fsync_64! / rps.disk_64!;
  const summary = {
    spool_disk_vs_echo_64c: round(diskVsEcho, 3),
    fsync_vs_disk_64c: round(fsyncVsDisk, 3),
    disk_p50_1c_ms: p50.disk_1,
    fsync_p50_1c_ms: p50.fsync_1,
    targets: {
      spool_disk_vs_echo_64c: '>= 0.80',
      fsync_vs_disk_64c: '>= 0.75',
      disk_p50_1c_ms: '<= 0.35',
      fsync_p50_1c_ms: '<= 0.6',
    },
  };
  log(
    `append-single: spool-disk/echo at 64c = ${(diskVsEcho * 100).toFixed(1)}% (target >= 80%); fsync/disk at 64c = ${(fsyncVsDisk * 100).toFixed(1)}% (target >= 75%)`,
  );
  rows.push({
    name: 'ratio spool-disk / echo @64c',
    recordsPerSec: null,
    p50Ms: null,
    p99Ms: null,
    peakRssMB: null,
    notes: `${(diskVsEcho * 100).toFixed(1)}% (target ≥ 80%)`,
  });
  rows.push({
    name: 'ratio fsync / disk @64c',
    recordsPerSec: null,
    p50Ms: null,
    p99Ms: null,
    peakRssMB: null,
    notes: `${(fsyncVsDisk * 100).toFixed(1)}% (target ≥ 75%)`,
  });
  return { workload: 'append-single', ok: errors === 0, rows, summary, ...(errors ? { error: `${errors} non-2xx responses` } : {}) };
}
