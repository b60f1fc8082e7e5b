// Workload retention: the cost of caps and of record deletes (docs/API.md "PUT /v0/topics/:topic", "Record delete"; docs/ARCHITECTURE.md "Watermarks", "Retention").
//  (a) Appends at a full cap: 16 writers POST batches of 100 records (~256 B `data` each) for
//      ~5 s (BENCH_SECONDS) into
//        - an uncapped `disk` topic, and
//        - a `disk` topic with cap_records 100000 and discard "old", pre-filled past the cap, so
//          every batch evicts 100 records.
//      Both topics are pre-filled with the same volume (BENCH_RETENTION_PREFILL, default 120000)
//      and each run gets a fresh server. Reports records/s of both and the per-record cost ratio
//      (uncapped rate / capped rate). Target: capped costs <= 15% more (ratio <= 1.15).
//      Checks afterwards that the capped topic holds exactly cap_records records.
//  (b) Record delete by tag: a topic of 1M records (BENCH_RETENTION_DELETE_RECORDS) of ~256 B where
//      every 100th record (10k in all, spread evenly) carries tag "victim"; one
//      POST .../delete {"match":["tag","Eq","victim"]} is timed. Target: < 50 ms. The same on a
//      second identical topic with {"match":["tag","Glob","vic*"]}. Each delete must report
//      deleted = 10000 and leave count = total - 10000.
// Timings for (b) are client-side (request write to last response byte) with the server's own
// performance.server_total_ms in the notes.
import {
  CpuSplitMeter,
  cpuNote,
  HttpClient,
  appendBody,
  appendMany,
  benchMs,
  createTopic,
  envNumber,
  loadRow,
  log,
  makeData,
  round,
  runLoad,
  sleep,
  startSpool,
  warmupMs,
  MB,
  type ChildServer,
  type Row,
  type WorkloadResult,
} from './lib.js';

const WRITERS = 16;
const BATCH = 100;
const CAP = 100_000;
const COST_RATIO_TARGET = 1.15;
const DELETE_TARGET_MS = 50;
const VICTIM_PERIOD = 100;

interface AppendRun {
  row: Row;
  recordsPerSec: number;
  ok: boolean;
  error?: string;
}

async function appendRun(slug: string, label: string, config: Record<string, unknown>, prefill: number): Promise<AppendRun> {
  const srv = await startSpool({ label: `retention-${slug}` });
  const client = new HttpClient(srv.port, WRITERS);
  try {
    const topic = `bench-ret-${slug}`;
    await createTopic(client, topic, { durability: 'disk', ...config });
    log(`retention (${label}): pre-filling ${prefill} records`);
    await appendMany({ client, topic, total: prefill, batch: 1000, concurrency: 4, deadlineMs: 600_000, server: srv });
    const bodies = Array.from({ length: WRITERS }, (_, w) => appendBody(BATCH, prefill + w * BATCH));
    const common = { client, concurrency: WRITERS, path: `/v0/topics/${topic}`, bodies, recordsPerRequest: BATCH, server: srv };
    const warm = await runLoad({ ...common, durationMs: warmupMs() });
    srv.rss.reset();
    const cpu = new CpuSplitMeter(srv.pid).start();
    const durationMs = benchMs(5);
    log(`retention (${label}): ${WRITERS} writers x ${BATCH} records, ${durationMs} ms`);
    const r = await runLoad({ ...common, durationMs });
    const split = cpu.stop();
    const peak = srv.rss.peakBytes();
    srv.assertAlive();
    const state = await client.json('GET', `/v0/topics/${topic}?touch=false`);
    const appended = prefill + warm.records + r.records;
    const capped = typeof config.cap_records === 'number' && config.cap_records > 0;
    const expectedCount = capped ? Math.min(appended, config.cap_records as number) : appended;
    const problems: string[] = [];
    if (state.head_seq !== appended) problems.push(`head_seq ${state.head_seq} != appended ${appended}`);
    if (state.count !== expectedCount) problems.push(`count ${state.count} != ${expectedCount}`);
    if (capped && state.earliest_seq !== state.head_seq - expectedCount + 1)
      problems.push(`earliest_seq ${state.earliest_seq} != head - cap + 1`);
    if (r.errors) problems.push(`${r.errors} non-2xx`);
    const notes =
      `${WRITERS}×${BATCH}/req, prefill ${prefill}; ${round(r.reqPerSec, 0)} req/s; count ${state.count}; ${cpuNote(split)}` +
      (problems.length ? `; ${problems.join('; ')}` : '');
    const row = loadRow(`retention append ${label} (disk, ${WRITERS} writers × ${BATCH})`, r, peak, notes, {
      server_cpu_pct: round(split.server, 0),
      other_cpu_pct: round(split.other, 0),
      head_seq: state.head_seq,
      count: state.count,
      earliest_seq: state.earliest_seq,
      config,
    });
    return {
      row,
      recordsPerSec: r.recordsPerSec,
      ok: problems.length === 0,
      ...(problems.length ? { error: `${label}: ${problems.join('; ')}` } : {}),
    };
  } finally {
    client.close();
    await srv.close();
  }
}

/** An append body of `n` records whose seq (start + i + 1) is a multiple of 100 carry tag "victim". */
function taggedBody(start: number, n: number): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) {
    const seq = start + i + 1;
    parts.push(seq % VICTIM_PERIOD === 0 ? `{"data":${makeData(seq)},"tag":"victim"}` : `{"data":${makeData(seq)}}`);
  }
  return Buffer.from(`{"records":[${parts.join(',')}]}`);
}

/** Loads `total` records (batches of 1000, 4 writers; 429s retried). */
async function loadTagged(client: HttpClient, srv: ChildServer, topic: string, total: number): Promise<void> {
  const batch = 1000;
  const pool = Array.from({ length: 8 }, (_, k) => taggedBody(k * batch, batch));
  const batches = Math.ceil(total / batch);
  let next = 0;
  const stopAt = Date.now() + 900_000;
  let lastReport = Date.now();
  const worker = async () => {
    while (next < batches) {
      const b = next++;
      const n = Math.min(batch, total - b * batch);
      // Bodies are reused; the tag pattern only depends on the offset within a batch of 1000.
      const body = n === batch ? pool[b % pool.length]! : taggedBody(b * batch, n);
      for (let attempt = 0; ; attempt++) {
        if (Date.now() > stopAt) throw new Error(`loading ${topic}: deadline passed at batch ${b}`);
        const r = await client.post(`/v0/topics/${topic}?return_seqs=false`, body);
        if (r.status >= 200 && r.status < 300) break;
        if (r.status === 429 && attempt < 200) {
          await sleep(50);
          continue;
        }
        srv.assertAlive();
        throw new Error(`loading ${topic}: POST -> ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
      }
      if (Date.now() - lastReport > 5000) {
        lastReport = Date.now();
        log(`retention: ${topic} loaded ${Math.min(total, next * batch)}/${total}`);
      }
    }
  };
  await Promise.all(Array.from({ length: 4 }, () => worker()));
}

interface DeleteRun {
  row: Row;
  ms: number;
  ok: boolean;
  error?: string;
}

async function timedDelete(
  client: HttpClient,
  srv: ChildServer,
  topic: string,
  total: number,
  match: unknown,
  label: string,
): Promise<DeleteRun> {
  const before = await client.json('GET', `/v0/topics/${topic}?touch=false`);
  const cpu = new CpuSplitMeter(srv.pid).start();
  const r = await client.post(`/v0/topics/${topic}/delete`, JSON.stringify({ match }));
  const split = cpu.stop();
  const ms = Number(r.ns) / 1e6;
  const text = r.body.toString('utf8');
  if (r.status !== 200) throw new Error(`${label}: delete -> ${r.status}: ${text.slice(0, 500)}`);
  const body = JSON.parse(text);
  const after = await client.json('GET', `/v0/topics/${topic}?touch=false`);
  const victims = Math.floor(total / VICTIM_PERIOD);
  const problems: string[] = [];
  if (before.count !== total) problems.push(`count before ${before.count} != ${total}`);
  if (body.deleted !== victims) problems.push(`deleted ${body.deleted} != ${victims}`);
  if (after.count !== total - victims) problems.push(`count after ${after.count} != ${total - victims}`);
  if (body.head_seq !== total) problems.push(`head_seq ${body.head_seq} != ${total}`);
  const serverMs = body.performance?.server_total_ms as number | undefined;
  const verdict = ms < DELETE_TARGET_MS ? `meets < ${DELETE_TARGET_MS} ms` : `MISSES < ${DELETE_TARGET_MS} ms`;
  log(`retention: ${label}: ${round(ms, 2)} ms client, ${serverMs ?? '?'} ms server, deleted ${body.deleted}`);
  const row: Row = {
    name: `retention delete ${label} (${total} records, ${victims} tagged)`,
    recordsPerSec: ms > 0 ? round((body.deleted / ms) * 1000, 0) : null,
    p50Ms: round(ms, 3),
    p99Ms: round(ms, 3),
    peakRssMB: round(srv.rss.peakBytes() / MB, 1),
    notes:
      `one request; server_total_ms ${serverMs ?? '?'}; ${verdict}; records/s = deleted per second of latency; ${cpuNote(split)}` +
      (problems.length ? `; ${problems.join('; ')}` : ''),
    extra: {
      client_ms: round(ms, 3),
      server_total_ms: serverMs,
      deleted: body.deleted,
      count_after: after.count,
      match,
      target_ms: DELETE_TARGET_MS,
    },
  };
  return { row, ms, ok: problems.length === 0, ...(problems.length ? { error: `${label}: ${problems.join('; ')}` } : {}) };
}

async function deleteRuns(total: number): Promise<DeleteRun[]> {
  const srv = await startSpool({ label: 'retention-delete' });
  const client = new HttpClient(srv.port, 4);
  try {
    const topics = ['bench-ret-del-eq', 'bench-ret-del-glob'];
    for (const t of topics) {
      await createTopic(client, t, { durability: 'disk' });
      const t0 = Date.now();
      log(`retention: loading ${total} records into ${t}`);
      await loadTagged(client, srv, t, total);
      log(`retention: ${t} loaded in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    await sleep(500); // let the loading's group commits and checkpoints settle
    srv.rss.reset();
    const eq = await timedDelete(client, srv, topics[0]!, total, ['tag', 'Eq', 'victim'], 'Eq "victim"');
    const glob = await timedDelete(client, srv, topics[1]!, total, ['tag', 'Glob', 'vic*'], 'Glob "vic*"');
    srv.assertAlive();
    return [eq, glob];
  } finally {
    client.close();
    await srv.close();
  }
}

export async function retention(): Promise<WorkloadResult> {
  const prefill = Math.max(CAP + 10_000, Math.floor(envNumber('BENCH_RETENTION_PREFILL', 120_000)));
  const deleteTotal = Math.max(VICTIM_PERIOD * 10, Math.floor(envNumber('BENCH_RETENTION_DELETE_RECORDS', 1_000_000)));
  const rows: Row[] = [];
  const errors: string[] = [];

  const uncapped = await appendRun('uncapped', 'uncapped', {}, prefill);
  const capped = await appendRun('capped', `cap_records ${CAP} old`, { cap_records: CAP, discard: 'old' }, prefill);
  const ratio = capped.recordsPerSec > 0 ? uncapped.recordsPerSec / capped.recordsPerSec : Infinity;
  const ratioNote = `per-record cost ratio capped/uncapped ${round(ratio, 3)} (target <= ${COST_RATIO_TARGET}: ${ratio <= COST_RATIO_TARGET ? 'met' : 'MISSED'})`;
  capped.row.notes = `${ratioNote}; ${capped.row.notes ?? ''}`;
  rows.push(uncapped.row, capped.row);
  for (const r of [uncapped, capped]) if (!r.ok && r.error) errors.push(r.error);
  log(`retention: ${ratioNote}`);

  const dels = await deleteRuns(deleteTotal);
  for (const d of dels) {
    rows.push(d.row);
    if (!d.ok && d.error) errors.push(d.error);
  }

  return {
    workload: 'retention',
    ok: errors.length === 0,
    ...(errors.length ? { error: errors.join(' | ') } : {}),
    rows,
    summary: {
      uncapped_records_per_s: round(uncapped.recordsPerSec, 0),
      capped_records_per_s: round(capped.recordsPerSec, 0),
      cost_ratio: round(ratio, 3),
      cost_ratio_target: COST_RATIO_TARGET,
      cost_ratio_met: ratio <= COST_RATIO_TARGET,
      delete_eq_ms: round(dels[0]!.ms, 3),
      delete_glob_ms: round(dels[1]!.ms, 3),
      delete_target_ms: DELETE_TARGET_MS,
      delete_eq_met: dels[0]!.ms < DELETE_TARGET_MS,
      delete_glob_met: dels[1]!.ms < DELETE_TARGET_MS,
    },
  };
}
