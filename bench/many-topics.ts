// Workload many-topics (docs/PERFORMANCE.md "Topic creation"): N small topics (BENCH_MANY_TOPICS, default 10,000), each
// created by one append of 10 records × 256 B from 32 writers; then random single-topic diffs at
// 16 readers, `GET /v0/topics` over every page, SIGKILL and restart on the same data dir. Prints
// creation rate, RSS per topic, files on disk, diff and list rates, ready time and RSS after the
// restart. Baseline in the same run: the bare Fastify echo at 32 clients, sampled for 2 s at a
// time while the creation and diff phases run: the creations go in ten slices, and between two
// slices (and before the first, after the last, after the diffs) the spool server is stopped
// (SIGSTOP: no thread of it runs, so it takes no CPU from the echo and skips none of its own
// work, which waits) and the echo sampled. Each ratio uses the mean of the samples around its
// phase. Samples taken only before and after a five-minute phase measured the machine's moments
// as much as the echo: on this shared VM one run's two samples were 5.6k and 8.1k req/s, and
// back-to-back 3 s samples fell from 5.0k to 4.0k while the echo's CPU per request rose by a
// quarter.
// Targets (1M topics): creation and diffs >= 50% of the echo's rate; RSS <= 2 GB (an idle topic
// <= 1 KB beyond its cached records); files on disk independent of N; ready <= 10 s.
import fs from 'node:fs';
import path from 'node:path';
import {
  HttpClient,
  appendBody,
  benchMs,
  envNumber,
  log,
  percentile,
  removeDir,
  round,
  runLoad,
  settledRss,
  startEcho,
  startSpool,
  tempDir,
  MB,
  type ChildServer,
  type Row,
  type WorkloadResult,
} from './lib.js';

const WRITERS = 32;
const READERS = 16;
const RECORDS = 10;
/** Slices of the creation phase, with an echo sample between two. */
const SLICES = 10;

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

type Send = (i: number) => Promise<{ status: number; ns: bigint; body: Buffer }>;

/**
 * `workers` closed loops over requests `from..to - 1` made by `send(i)`, latencies into `lat[i]`;
 * every answer must be 2xx. Returns the seconds taken.
 */
async function closedLoop(from: number, to: number, workers: number, lat: Float64Array, send: Send): Promise<number> {
  let next = from;
  const t0 = process.hrtime.bigint();
  const loop = async () => {
    while (next < to) {
      const i = next++;
      const r = await send(i);
      if (r.status < 200 || r.status > 299) throw new Error(`request ${i}: ${r.status} ${r.body.toString('utf8').slice(0, 300)}`);
      lat[i] = Number(r.ns) / 1e6;
    }
  };
  await Promise.all(Array.from({ length: workers }, loop));
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

/** `n` requests in `slices` closed-loop slices, `between()` run after each slice but the last. */
async function slicedLoop(
  n: number,
  slices: number,
  workers: number,
  send: Send,
  between: () => Promise<void> = async () => undefined,
): Promise<Pass> {
  const lat = new Float64Array(n);
  let seconds = 0;
  for (let k = 0; k < slices; k++) {
    seconds += await closedLoop(Math.floor((n * k) / slices), Math.floor((n * (k + 1)) / slices), workers, lat, send);
    if (k < slices - 1) await between();
  }
  return { done: n, seconds, lat: lat.sort() };
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

/** The bare echo server and a 32-client sampler of its rate (the server stays up, idle between samples). */
class EchoSampler {
  readonly samples: number[] = [];
  private constructor(
    private readonly server: ChildServer,
    private readonly client: HttpClient,
  ) {}

  static async start(): Promise<EchoSampler> {
    const server = await startEcho();
    return new EchoSampler(server, new HttpClient(server.port, WRITERS));
  }

  /** One sample: 0.5 s of warm-up, then `benchMs(2)` measured; kept in `samples`. */
  async sample(): Promise<number> {
    const common = {
      client: this.client,
      concurrency: WRITERS,
      path: '/echo',
      bodies: [appendBody(RECORDS)],
      recordsPerRequest: 1,
      server: this.server,
    };
    await runLoad({ ...common, durationMs: 500 });
    const r = await runLoad({ ...common, durationMs: benchMs(2) });
    this.samples.push(r.reqPerSec);
    return r.reqPerSec;
  }

  /** A sample taken while `srv` is stopped (SIGSTOP, then SIGCONT whatever happens). */
  async sampleWhileStopped(srv: ChildServer): Promise<number> {
    process.kill(srv.pid, 'SIGSTOP');
    try {
      return await this.sample();
    } finally {
      process.kill(srv.pid, 'SIGCONT');
    }
  }

  async close(): Promise<void> {
    this.client.close();
    await this.server.close();
  }
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const range = (xs: number[]) => `${Math.round(Math.min(...xs))}-${Math.round(Math.max(...xs))}`;

export async function manyTopics(): Promise<WorkloadResult> {
  const n = Math.max(100, Math.floor(envNumber('BENCH_MANY_TOPICS', 10_000)));
  const diffs = Math.max(1000, Math.min(n, 50_000));
  const echo = await EchoSampler.start();
  const echoBefore = await echo.sample();
  log(`many-topics: echo (before the spool server starts) ${Math.round(echoBefore)} req/s at ${WRITERS} clients`);

  const dir = tempDir('spool-bench-many-topics-');
  const rows: Row[] = [];
  let srv: ChildServer | undefined;
  try {
    srv = await startSpool({ label: 'many-topics', dataDir: dir, keepDir: true });
    const emptyRss = await settledRss(srv, 500);
    const writers = new HttpClient(srv.port, WRITERS);
    const body = appendBody(RECORDS);
    log(`many-topics: creating ${n} topics × ${RECORDS} records in ${SLICES} slices, the echo sampled around each`);
    const live = srv;
    const sampleEcho = async () => void (await echo.sampleWhileStopped(live));
    await sampleEcho();
    const create = await slicedLoop(n, SLICES, WRITERS, (i) => writers.post(`/v0/topics/${topicName(i)}`, body), sampleEcho);
    await sampleEcho();
    const createEcho = echo.samples.slice(1); // the samples of the creation phase
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
    const createNotes = (echo: number) =>
      `topics/s = ${Math.round(create.done / create.seconds)} (${((create.done / create.seconds / echo) * 100).toFixed(0)}% of echo); RSS ${(rss / MB).toFixed(0)} MB, ${perTopicKB.toFixed(1)} KB/topic; ${files} files`;
    rows.push(createRow);

    const readers = new HttpClient(srv.port, READERS);
    const diffBody = Buffer.from('{"from_seq":0}');
    let seed = 12345;
    const pick = () => (seed = (seed * 1103515245 + 12345) >>> 0) % n;
    log(`many-topics: ${diffs} random single-topic diffs at ${READERS} readers`);
    const diff = await slicedLoop(diffs, 1, READERS, () => readers.post(`/v0/topics/${topicName(pick())}/diff`, diffBody));
    await sampleEcho();
    const diffEcho = echo.samples.slice(-2); // the last of the creation phase, and this one
    log(`many-topics: echo ${range(createEcho)} req/s during the creations, ${range(diffEcho)} around the diffs`);
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
    rows.push({
      name: `many-topics list all (pages of 1000)`,
      recordsPerSec: round(listed / listS, 0),
      p50Ms: null,
      p99Ms: null,
      peakRssMB: null,
      notes: `${listed} topics in ${listS.toFixed(2)} s`,
    });

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
    const echoAfter = await echo.sample();
    log(`many-topics: echo (after the spool server is gone) ${Math.round(echoAfter)} req/s at ${WRITERS} clients`);
    const createBase = mean(createEcho);
    const diffBase = mean(diffEcho);
    createRow.notes = createNotes(createBase);
    createRow.extra!.vs_echo = round(create.done / create.seconds / createBase, 3);
    createRow.extra!.echo_req_per_s = round(createBase, 0);
    diffRow.notes = `diffs/s = ${Math.round(diff.done / diff.seconds)} (${((diff.done / diff.seconds / diffBase) * 100).toFixed(0)}% of echo)`;
    diffRow.extra!.vs_echo = round(diff.done / diff.seconds / diffBase, 3);
    diffRow.extra!.echo_req_per_s = round(diffBase, 0);
    rows.push({
      name: `echo (bare Fastify) ${WRITERS}c, baseline (mean of the samples around the creations)`,
      recordsPerSec: round(createBase, 0),
      p50Ms: null,
      p99Ms: null,
      peakRssMB: null,
      notes: `requests/s; ${createEcho.length} samples ${range(createEcho)}; around the diffs ${Math.round(diffBase)}; ${Math.round(echoBefore)} before the spool server, ${Math.round(echoAfter)} after`,
    });
    return {
      workload: 'many-topics',
      ok: true,
      rows,
      summary: {
        topics: n,
        echo_req_per_s: round(createBase, 0),
        echo_diffs_req_per_s: round(diffBase, 0),
        echo_samples: echo.samples.map((x) => round(x, 0)),
        echo_before: round(echoBefore, 0),
        echo_after: round(echoAfter, 0),
      },
    };
  } finally {
    await srv?.close();
    await echo.close();
    removeDir(dir);
  }
}
