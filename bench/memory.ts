// Workload memory: append 5M records of 256 B (BENCH_MEMORY_RECORDS; batches of 1000, 4
// concurrent writers) to a `disk` topic; report the server's peak RSS (all threads) and
// records/s. Then read back the first 10k records (diff from_seq 0, pages of 1000): with 1.28 GB
// of data and a 256 MiB segment cache they must come from segment files (this
// is checked through the bytes the server read meanwhile, /proc/<pid>/io rchar). Target: peak RSS < 600 MB for 5M × 256 B.
import {
  CpuSplitMeter,
  cpuNote,
  HttpClient,
  appendMany,
  createTopic,
  envNumber,
  log,
  percentile,
  readRchar,
  round,
  scanPage,
  startSpool,
  treeBytes,
  MB,
  type Row,
  type WorkloadResult,
} from './lib.js';

const TOPIC = 'bench-memory';
const READBACK = 10_000;
const PAGE = 1000;

export async function memory(): Promise<WorkloadResult> {
  const total = Math.max(PAGE, Math.floor(envNumber('BENCH_MEMORY_RECORDS', 5_000_000)));
  const maxS = envNumber('BENCH_MEMORY_MAX_S', 900);
  const srv = await startSpool({ label: 'memory' });
  const client = new HttpClient(srv.port, 4);
  const reader = new HttpClient(srv.port, 1);
  try {
    await createTopic(client, TOPIC, { durability: 'disk' });
    log(`memory: appending ${total} records of 256 B (4 writers × 1000/batch, at most ${maxS} s)`);
    const cpu = new CpuSplitMeter(srv.pid).start();
    const load = await appendMany({
      client,
      topic: TOPIC,
      total,
      batch: 1000,
      concurrency: 4,
      deadlineMs: maxS * 1000,
      server: srv,
      onProgress: (d) => log(`memory: ${d}/${total} records, RSS peak so far ${(srv.rss.peakBytes() / MB).toFixed(0)} MB`),
    });
    const split = cpu.stop();
    const loadPeak = srv.rss.peakBytes();
    srv.assertAlive();
    const rate = load.records / load.elapsedS;
    log(
      `memory: ${load.records} records in ${load.elapsedS.toFixed(1)} s = ${Math.round(rate)} records/s, peak RSS ${(loadPeak / MB).toFixed(0)} MB`,
    );

    // Read back the first 10k records.
    const lat: number[] = [];
    let from = 0;
    let read = 0;
    let cold = 0;
    const rchar0 = readRchar(srv.pid);
    const t0 = process.hrtime.bigint();
    for (let page = 0; page < READBACK / PAGE + 5 && read < READBACK; page++) {
      const r = await reader.post(`/v0/topics/${TOPIC}/diff`, JSON.stringify({ from_seq: from, limit: Math.min(PAGE, READBACK - read) }));
      if (r.status !== 200) throw new Error(`diff from_seq=${from} -> ${r.status}: ${r.body.toString('utf8').slice(0, 500)}`);
      lat.push(Number(r.ns) / 1e6);
      const info = scanPage(r.body, true);
      if (info.records !== info.nextFromSeq - from)
        throw new Error(`diff from_seq=${from}: ${info.records} records, cursor advanced ${info.nextFromSeq - from}`);
      read += info.records!;
      from = info.nextFromSeq;
      cold += info.coldSegmentsRead;
    }
    const readS = Number(process.hrtime.bigint() - t0) / 1e9;
    const rchar1 = readRchar(srv.pid);
    // Bytes the server read through read()/pread() meanwhile (segment files + ~10 small diff
    // requests). At least the records' data bytes means they came from segment files; the
    // performance block has no cold_segments_read yet.
    const serverRead = rchar0 !== undefined && rchar1 !== undefined ? rchar1 - rchar0 : undefined;
    const peak = srv.rss.peakBytes();
    if (read !== READBACK) throw new Error(`memory: read back ${read} records, wanted ${READBACK}`);
    const diskBytes = treeBytes(srv.dataDir);
    const sortedLoad = load.latMs;
    const sortedRead = Float64Array.from(lat).sort();
    const fromSegments = cold > 0 || (serverRead !== undefined && serverRead >= read * 256);
    log(
      `memory: read back ${read} records in ${(readS * 1000).toFixed(1)} ms, server read ${serverRead === undefined ? '?' : (serverRead / MB).toFixed(2)} MB${cold ? `, cold_segments_read=${cold}` : ''}`,
    );
    const rows: Row[] = [
      {
        name: `memory: append ${(load.records / 1e6).toFixed(1)}M × 256 B`,
        recordsPerSec: round(rate, 0),
        p50Ms: round(percentile(sortedLoad, 50), 3),
        p99Ms: round(percentile(sortedLoad, 99), 3),
        peakRssMB: round(loadPeak / MB, 1),
        notes: `peak RSS **${(loadPeak / MB).toFixed(0)} MB** (target < 600 MB); 4 writers × 1000/req, per-request latency; data dir ${(diskBytes / MB).toFixed(0)} MB; ${cpuNote(split)}`,
        extra: { records: load.records, seconds: round(load.elapsedS, 2), load_429_retries: load.retries429, data_dir_bytes: diskBytes },
      },
      {
        name: `memory: read back first 10k`,
        recordsPerSec: round(read / readS, 0),
        p50Ms: round(percentile(sortedRead, 50), 3),
        p99Ms: round(percentile(sortedRead, 99), 3),
        peakRssMB: round(peak / MB, 1),
        notes: `${(readS * 1000).toFixed(1)} ms for ${read} records; per-page latency; server read ${serverRead === undefined ? '?' : (serverRead / MB).toFixed(2)} MB from files${fromSegments ? ' (from segments)' : ' (NOT from segments)'}`,
        extra: { records: read, seconds: round(readS, 4), cold_segments_read: cold, server_read_bytes: serverRead },
      },
    ];
    return {
      workload: 'memory',
      ok: fromSegments,
      rows,
      summary: { records: load.records, peak_rss_mb: round(loadPeak / MB, 1), target_rss_mb: 600 },
      ...(fromSegments ? {} : { error: 'read-back did not touch cold segments' }),
    };
  } finally {
    client.close();
    reader.close();
    await srv.close();
  }
}
