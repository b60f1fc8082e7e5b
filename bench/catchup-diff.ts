// Workload catchup-diff: append 200k records (~256 B each, batches of 1000, `disk` topic), then one
// client reads them all with POST /diff in pages of limit 1000 (from_seq = next_from_seq each
// time). Reports records/s and per-page p50/p99. Run twice: with the default segment cache
// (records still in memory) and with SERVICE_SEGMENT_CACHE_BYTES=1048576 so nearly every page
// comes cold from segment files. Target: >= 300k records/s.
// BENCH_CATCHUP_RECORDS overrides the count; BENCH_PARSE=1 makes the reader JSON.parse every page.
import { CpuSplitMeter, cpuNote, HttpClient, appendMany, createTopic, envNumber, log, percentile, readRchar, round, scanPage, startSpool, MB, type Row, type WorkloadResult } from './lib.js';

const PAGE = 1000;
const READ_DEADLINE_MS = 300_000;

async function catchupOnce(label: string, env: Record<string, string>): Promise<Row> {
  const total = Math.max(PAGE, Math.floor(envNumber('BENCH_CATCHUP_RECORDS', 200_000)));
  const fullParse = process.env.BENCH_PARSE === '1';
  const srv = await startSpool({ label: 'catchup', env });
  const loader = new HttpClient(srv.port, 4);
  const reader = new HttpClient(srv.port, 1);
  try {
    const topic = 'bench-catchup';
    await createTopic(loader, topic, { durability: 'disk' });
    log(`catchup-diff (${label}): loading ${total} records`);
    const load = await appendMany({ client: loader, topic, total, batch: 1000, concurrency: 4, deadlineMs: 600_000, server: srv });
    log(`catchup-diff (${label}): loaded in ${load.elapsedS.toFixed(1)} s (${Math.round(load.records / load.elapsedS)} records/s); reading`);

    srv.rss.reset();
    const diffPath = `/v0/topics/${topic}/diff`;
    const lat: number[] = [];
    let from = 0;
    let read = 0;
    let pages = 0;
    let cold = 0;
    let checked = 0;
    let caughtUp = false;
    let headSeq = 0;
    const maxPages = Math.ceil(total / PAGE) * 2 + 10;
    const rchar0 = readRchar(srv.pid);
    const cpu = new CpuSplitMeter(srv.pid).start();
    const t0 = process.hrtime.bigint();
    const stopAt = Date.now() + READ_DEADLINE_MS;
    while (pages < maxPages && Date.now() < stopAt) {
      const r = await reader.post(diffPath, JSON.stringify({ from_seq: from, limit: PAGE }));
      if (r.status !== 200) throw new Error(`diff from_seq=${from} -> ${r.status}: ${r.body.toString('utf8').slice(0, 500)}`);
      lat.push(Number(r.ns) / 1e6);
      pages++;
      const info = scanPage(r.body, fullParse);
      // Spot-check 1 page in 50 (and every page with BENCH_PARSE=1): records == seq advance.
      const n = info.records ?? (pages % 50 === 1 ? (JSON.parse(r.body.toString('utf8')).records.length as number) : undefined);
      if (n !== undefined) {
        checked++;
        if (n !== info.nextFromSeq - from) throw new Error(`diff from_seq=${from}: ${n} records but next_from_seq advanced by ${info.nextFromSeq - from}`);
      }
      read += info.nextFromSeq - from;
      from = info.nextFromSeq;
      cold += info.coldSegmentsRead;
      headSeq = info.headSeq;
      if (info.caughtUp) {
        caughtUp = true;
        break;
      }
    }
    const elapsedS = Number(process.hrtime.bigint() - t0) / 1e9;
    const split = cpu.stop();
    const rchar1 = readRchar(srv.pid);
    // Bytes the server read (segment files + the small diff requests) while serving the pages:
    // the evidence that pages came cold from segments (the performance block has no
    // cold_segments_read yet).
    const serverReadMB = rchar0 !== undefined && rchar1 !== undefined ? (rchar1 - rchar0) / MB : null;
    const peak = srv.rss.peakBytes();
    srv.assertAlive();
    if (!caughtUp) throw new Error(`catchup-diff (${label}): not caught up after ${pages} pages / ${elapsedS.toFixed(1)} s (read ${read} of ${total})`);
    if (read !== total) throw new Error(`catchup-diff (${label}): read ${read} records, appended ${total} (head_seq ${headSeq})`);
    const sorted = Float64Array.from(lat).sort();
    const rate = read / elapsedS;
    log(`catchup-diff (${label}): ${read} records in ${elapsedS.toFixed(2)} s = ${Math.round(rate)} records/s; server read ${serverReadMB?.toFixed(1)} MB`);
    return {
      name: `catchup-diff ${label}`,
      recordsPerSec: round(rate, 0),
      p50Ms: round(percentile(sorted, 50), 3),
      p99Ms: round(percentile(sorted, 99), 3),
      peakRssMB: round(peak / MB, 1),
      notes: `${read} records, ${pages} pages of ${PAGE}; per-page latency; server read ${serverReadMB === null ? '?' : serverReadMB.toFixed(1)} MB from files${cold ? `, cold_segments_read=${cold}` : ''}${fullParse ? '; client JSON.parse each page' : ''}; ${cpuNote(split)}`,
      extra: {
        records: read,
        pages,
        seconds: round(elapsedS, 3),
        cold_segments_read: cold,
        server_read_mb: round(serverReadMB, 1),
        pages_spot_checked: checked,
        full_parse: fullParse,
        cpu_pct: { server: round(split.server, 0), client: round(split.client, 0), other: round(split.other, 0) },
        load_records_per_s: round(load.records / load.elapsedS, 0),
        load_429_retries: load.retries429,
        env,
      },
    };
  } finally {
    loader.close();
    reader.close();
    await srv.close();
  }
}

export async function catchupDiff(): Promise<WorkloadResult> {
  const rows: Row[] = [];
  rows.push(await catchupOnce('(default cache, warm)', {}));
  rows.push(await catchupOnce('(1 MiB cache, cold segments)', { SERVICE_SEGMENT_CACHE_BYTES: '1048576' }));
  return { workload: 'catchup-diff', ok: true, rows };
}
