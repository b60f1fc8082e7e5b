// Workload many-topics (issue 15): N small topics (BENCH_MANY_TOPICS, default 10,000), each
// created by one append of 10 records × 256 B from 32 writers; then random single-topic diffs at
// 16 readers, `GET /v0/topics` over every page, SIGKILL and restart on the same data dir. Prints
// creation rate, RSS per topic, files on disk, diff and list rates, ready time and RSS after the
// restart. Baseline in the same run: the bare Fastify echo at 32 clients, measured for 3 s
// before the spool server starts and again after it is gone; the ratios use the mean of the two.
// One sample taken minutes before a five-minute creation phase measured the machine's moment as
// much as the echo: on this shared VM single samples ranged 6.1-8.4k req/s within an hour.
// Targets (1M topics): creation and diffs >= 50% of the echo's rate; RSS <= 2 GB (an idle topic
// <= 1 KB beyond its cached records); files on disk independent of N; ready <= 10 s.
import fs from 'node:fs';
import path from 'node:path';
import { HttpClient, appendBody, benchMs, envNumber, log, percentile, removeDir, round, runLoad, settledRss, startEcho, startSpool, tempDir, MB, type ChildServer, type Row, type WorkloadResult } from './lib.js';

const WRITERS = 32;
const READERS = 16;
const RECORDS = 10;

const topicName = (i: number) => `mt.${i.toString(36).padStart(5, '0')}`;

/** Every file below `dir`. */
function fileCount(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) n += e.isDirectory() ? fileCount(path.join(dir, e.name)) : 1;
  return n;
}

interface Pass {
  done: number;
  seconds: number;
  lat: Float64Array;
}

/** `workers` closed loops over `n` requests made by `send(i)`; every answer must be 2xx. */
async function closedLoop(n: number, workers: number, send: (i: number) => Promise<{ status: number; ns: bigint; body: Buffer }>): Promise<Pass> {
  const lat = new Float64Array(n);
  let next = 0;
  const t0 = process.hrtime.bigint();
  const loop = async () => {
    while (next < n) {
      const i = next++;
      const r = await send(i);
      if (r.status < 200 || r.status > 299) throw new Error(`request ${i}: ${r.status} ${r.body.toString('utf8').slice(0, 300)}`);
      lat[i] = Number(r.ns) / 1e6;
    }
  };
  await Promise.all(Array.from({ length: workers }, loop));
  return { done: n, seconds: Number(process.hrtime.bigint() - t0) / 1e9, lat: lat.sort() };
}

function passRow(name: string, p: Pass, perRequest: number, peak: number | null, notes: string, extra: Record<string, unknown> = {}): Row {
  return {
    name,
    recordsPerSec: round((p.done * perRequest) / p.seconds, 0),
    p50Ms: round(percentile(p.lat, 50), 3),
    p99Ms: round(percentile(p.lat, 99), 3),
    peakRssMB: peak === null ? null : round(peak / MB, 1),
    notes,
    extra: { requests: p.done, req_per_s: round(p.done / p.seconds, 0), seconds: round(p.seconds, 2), ...extra },
  };
}

async function echoRate(): Promise<number> {
  const echo = await startEcho();
  const client = new HttpClient(echo.port, WRITERS);
  try {
    const common = { client, concurrency: WRITERS, path: '/echo', bodies: [appendBody(RECORDS)], recordsPerRequest: 1, server: echo };
    await runLoad({ ...common, durationMs: 1000 });
    const r = await runLoad({ ...common, durationMs: benchMs(3) });
    return r.reqPerSec;
  } finally {
    client.close();
    await echo.close();
  }
}

export async function manyTopics(): Promise<WorkloadResult> {
  const n = Math.max(100, Math.floor(envNumber('BENCH_MANY_TOPICS', 10_000)));
  const diffs = Math.max(1000, Math.min(n, 50_000));
  const echoBefore = await echoRate();
  log(`many-topics: echo baseline (before) ${Math.round(echoBefore)} req/s at ${WRITERS} clients`);

  const dir = tempDir('spool-bench-many-topics-');
  const rows: Row[] = [];
  let srv: ChildServer | undefined;
  try {
    srv = await startSpool({ label: 'many-topics', dataDir: dir, keepDir: true });
    const emptyRss = await settledRss(srv, 500);
    const writers = new HttpClient(srv.port, WRITERS);
    const body = appendBody(RECORDS);
    log(`many-topics: creating ${n} topics × ${RECORDS} records`);
    const create = await closedLoop(n, WRITERS, (i) => writers.post(`/v0/topics/${topicName(i)}`, body));
    writers.close();
    const createPeak = srv.rss.peakBytes();
    const rss = await settledRss(srv, 1000);
    const perTopicKB = (rss - emptyRss) / n / 1024;
    const files = fileCount(dir);
    // The ratios to the echo are filled in at the end, once its second sample is taken.
    const createRow = passRow(`many-topics create ${n} (1 append of ${RECORDS} each, ${WRITERS}c)`, create, 1, createPeak, '', {
      topics_per_s: round(create.done / create.seconds, 0),
      vs_echo: 0,
      rss_mb: round(rss / MB, 1),
      rss_per_topic_kb: round(perTopicKB, 2),
      files,
    });
    const createNotes = (echo: number) => `topics/s = ${Math.round(create.done / create.seconds)} (${((create.done / create.seconds / echo) * 100).toFixed(0)}% of echo); RSS ${(rss / MB).toFixed(0)} MB, ${perTopicKB.toFixed(1)} KB/topic; ${files} files`;
    rows.push(createRow);

    const readers = new HttpClient(srv.port, READERS);
    const diffBody = Buffer.from('{"from_seq":0}');
    let seed = 12345;
    const pick = () => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
    log(`many-topics: ${diffs} random single-topic diffs at ${READERS} readers`);
    const diff = await closedLoop(diffs, READERS, () => readers.post(`/v0/topics/${topicName(pick())}/diff`, diffBody));
    const diffRow = passRow(`many-topics random diff (${READERS}c)`, diff, 1, srv.rss.peakBytes(), '', { vs_echo: 0 });
    rows.push(diffRow);

    log('many-topics: listing every topic');
    const t0 = process.hrtime.bigint();
    let listed = 0;
    let cursor: string | undefined;
    do {
      const page = await readers.json('GET', `/v0/topics?page_size=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      listed += page.topics.length;
      cursor = page.next_cursor;
    } while (cursor);
    const listS = Number(process.hrtime.bigint() - t0) / 1e9;
    readers.close();
    if (listed < n) throw new Error(`GET /v0/topics listed ${listed} of ${n}`);
    rows.push({ name: `many-topics list all (pages of 1000)`, recordsPerSec: round(listed / listS, 0), p50Ms: null, p99Ms: null, peakRssMB: null, notes: `${listed} topics in ${listS.toFixed(2)} s` });

    await srv.kill();
    log('many-topics: SIGKILL; restarting on the same data dir');
    srv = await startSpool({ label: 'many-topics-restart', dataDir: dir, keepDir: true, readyTimeoutMs: 600_000 });
    const check = new HttpClient(srv.port, 1);
    for (const i of [0, n >> 1, n - 1]) {
      const st = await check.json('GET', `/v0/topics/${topicName(i)}`);
      if (st.count !== RECORDS) throw new Error(`after restart ${topicName(i)} holds ${st.count} records, not ${RECORDS}`);
    }
    check.close();
    const afterRss = await settledRss(srv, 500);
    rows.push({
      name: `many-topics restart after SIGKILL`,
      recordsPerSec: null,
      p50Ms: null,
      p99Ms: null,
      peakRssMB: round(srv.rss.peakBytes() / MB, 1),
      notes: `ready in ${(srv.readyMs / 1000).toFixed(2)} s; RSS after ${(afterRss / MB).toFixed(0)} MB`,
      extra: { ready_ms: srv.readyMs, rss_after_mb: round(afterRss / MB, 1) },
    });
    await srv.close();
    srv = undefined;
    const echoAfter = await echoRate();
    log(`many-topics: echo baseline (after) ${Math.round(echoAfter)} req/s at ${WRITERS} clients`);
    const echo = (echoBefore + echoAfter) / 2;
    createRow.notes = createNotes(echo);
    createRow.extra!.vs_echo = round(create.done / create.seconds / echo, 3);
    diffRow.notes = `diffs/s = ${Math.round(diff.done / diff.seconds)} (${((diff.done / diff.seconds / echo) * 100).toFixed(0)}% of echo)`;
    diffRow.extra!.vs_echo = round(diff.done / diff.seconds / echo, 3);
    rows.push({ name: `echo (bare Fastify) ${WRITERS}c, baseline (mean of before and after)`, recordsPerSec: round(echo, 0), p50Ms: null, p99Ms: null, peakRssMB: null, notes: `requests/s; ${Math.round(echoBefore)} before, ${Math.round(echoAfter)} after` });
    return { workload: 'many-topics', ok: true, rows, summary: { topics: n, echo_req_per_s: round(echo, 0), echo_before: round(echoBefore, 0), echo_after: round(echoAfter, 0) } };
  } finally {
    await srv?.close();
    removeDir(dir);
  }
}
