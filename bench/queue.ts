// Workload queue: job-queue throughput, latency and memory (docs/QUEUES.md). Run alone with
// `node dist/bench/queue.js [part ...]` (parts 1-5, default all).
//
// Parts 1-4 share one spool server (fresh data dir); every queue is a fresh topic created with
// {"type":"queue", durability}, pre-filled by one producer (appends of 1000 jobs of
// BENCH_QUEUE_JOB_BYTES (100) B `data`, not timed) and checked (`queue.ready` of GET /v0/topics/:q
// equals the jobs appended) before the clock starts. Each measured drain follows an unmeasured
// warm-up of BENCH_QUEUE_WARMUP_MS (3000) with the same workers on a separate queue of
// BENCH_QUEUE_WARMUP_JOBS (100k): the queue paths' code is still being compiled by V8 for the first
// ~2 s of a drain (per-thread CPU sampled every 250 ms: V8's helper threads busy and the rate at
// ~60 % of what follows), which a 0.5 s warm-up left inside the measured drain.
//   1. `claim+ack, disk`: BENCH_QUEUE_JOBS (100k) jobs, BENCH_QUEUE_WORKERS (8) workers, each
//      looping POST claim {node, max: BENCH_QUEUE_CLAIM_MAX (10)} → POST ack {node, seqs,
//      lease_ids} of what it got; a worker stops at its first claim with count 0 (no nack, no
//      lease expiry here, so nothing becomes ready again). jobs/s = jobs acked / (first claim →
//      last ack reply); latency = claim send → ack reply, one sample per non-empty batch.
//   2. `claim+ack, fsync`: the same on an `fsync` queue (target: ≥ 60% of the disk rate).
//   3. `claim+ack, 1 worker`: 1 worker, max 1, BENCH_QUEUE_SINGLE_JOBS (20k) jobs on a `disk`
//      queue; latency = the claim request alone (target: p50 ≤ 0.3 ms).
//   4. `/work push, disk`: BENCH_QUEUE_WORKERS SSE connections GET /v0/topics/:q/work?node=w<i>&max=
//      BENCH_QUEUE_CLAIM_MAX (node:http, Accept: text/event-stream, `job` frames parsed: `id:` =
//      seq, `data:` JSON with lease_id), BENCH_QUEUE_JOBS jobs. Each connection acks in batches:
//      once it holds ≥ BENCH_QUEUE_ACK_BATCH (5) un-acked jobs (checked after each socket read) or
//      BENCH_QUEUE_ACK_WAIT_MS (2) after its oldest un-acked job arrived, one POST ack with all of
//      them (acks may overlap). jobs/s = jobs acked / (connections opened → last ack reply);
//      latency = frame read → ack reply, per job.
// Parts 1-3 and the baseline: each worker holds one keep-alive raw socket (RawHttpConn of lib.ts,
// the lightest client, so latency is the server's and the client leaves the two cores to it);
// part 4's acks go on raw sockets too (RawConnPool; its streams stay node:http responses).
// BENCH_QUEUE_CLIENT=http uses node:http's agent instead (~50-70 µs more per request here).
// Server CPU per job (µs) = server CPU time over the drain / jobs (parts 1-4 also per thread, from
// /proc/<pid>/task: the main thread, then the others busiest first); peak RSS as everywhere. Targets
// printed next to each figure: ≤ 15 µs/job for 1; ≥ 85k jobs/s and ≤ 10 µs/job for 4.
//
// Baseline, same run: the bare Fastify echo server (bench/echo-server.ts) driven by
// BENCH_QUEUE_WORKERS clients alternating a claim-shaped and an ack-shaped POST (the same body
// sizes as 1; echo's replies stay small, whereas spool's claim reply carries the jobs, so the
// ceiling flatters echo) for BENCH_SECONDS (3). Its request/s gives the ceiling in jobs/s
// (BENCH_QUEUE_CLAIM_MAX jobs per two requests); spool/ceiling goes in the notes of 1 and 2.
//
//   5. memory: heap cost of BENCH_QUEUE_MEM_JOBS (1M) ready jobs of BENCH_QUEUE_MEM_JOB_BYTES (64)
//      B, `memory` durability, appended in batches of 1000 (4 writers), RSS read before (once
//      the empty queue exists) and after; the same records in a `log` topic on a second fresh
//      server; the queue's first server is fresh too, so both start from the same state. Target:
//      the queue costs ≤ 64 B per job more than the log. RSS only: the server exposes no heap
//      figures (/v0/metrics has no process metrics; src/http/metrics.ts registers spool_* gauges
//      only). Each RSS is the median of 5 VmRSS reads 200 ms apart after BENCH_QUEUE_SETTLE_MS
//      (2000) of quiet; there is no forced GC, so garbage still counts.
//
// Errors are loud: a non-200 claim or ack, a claim reply whose `count` disagrees with `claimed`,
// or an `event: error` frame aborts the part with the server's body in the message (the other
// parts still run); an ack with `skipped` seqs, a job delivered twice or a drain that does not
// finish within BENCH_QUEUE_MAX_S (120) marks the workload failed.
import fs from 'node:fs';
import http from 'node:http';
import {
  CpuSplitMeter,
  cpuNote,
  HttpClient,
  clientKindFrom,
  concurrentClient,
  serialClient,
  type PostClient,
  appendMany,
  benchMs,
  createTopic,
  envNumber,
  log,
  percentile,
  round,
  runAsScript,
  sleep,
  startEcho,
  startSpool,
  warmupMs,
  MB,
  type ChildServer,
  type CpuSplit,
  type Resp,
  type Row,
  type WorkloadResult,
  settledRss,
} from './lib.js';

const FILL_BATCH = 1000;
const PARTS = [1, 2, 3, 4, 5] as const;
const TARGET_FSYNC_VS_DISK = 0.6;
const TARGET_SINGLE_CLAIM_P50_MS = 0.3;
/** Server CPU per job of claim 10 + ack, `disk`, 8 workers (docs/PERFORMANCE.md "Queues"). */
const TARGET_CLAIM_ACK_US_PER_JOB = 15;
/** `/work`, 8 streams, max 10: jobs/s and server CPU per job. */
const TARGET_PUSH_JOBS_PER_SEC = 85_000;
const TARGET_PUSH_US_PER_JOB = 10;

/** `met` or `**MISSED**`, for a row's notes. */
const metText = (met: boolean) => (met ? 'met' : '**MISSED**');
const TARGET_MEM_EXTRA_BYTES = 64;

interface Knobs {
  jobs: number;
  workers: number;
  claimMax: number;
  jobBytes: number;
  singleJobs: number;
  warmJobs: number;
  warmMs: number;
  ackBatch: number;
  ackWaitMs: number;
  maxMs: number;
  memJobs: number;
  memJobBytes: number;
  settleMs: number;
}

function knobs(): Knobs {
  const int = (name: string, dflt: number, min = 1) => Math.max(min, Math.floor(envNumber(name, dflt)));
  return {
    jobs: int('BENCH_QUEUE_JOBS', 100_000),
    workers: int('BENCH_QUEUE_WORKERS', 8),
    claimMax: Math.min(1000, int('BENCH_QUEUE_CLAIM_MAX', 10)),
    jobBytes: int('BENCH_QUEUE_JOB_BYTES', 100, 32),
    singleJobs: int('BENCH_QUEUE_SINGLE_JOBS', 20_000),
    warmJobs: int('BENCH_QUEUE_WARMUP_JOBS', 100_000),
    warmMs: int('BENCH_QUEUE_WARMUP_MS', 3000, 0),
    ackBatch: int('BENCH_QUEUE_ACK_BATCH', 5),
    ackWaitMs: envNumber('BENCH_QUEUE_ACK_WAIT_MS', 2),
    maxMs: envNumber('BENCH_QUEUE_MAX_S', 120) * 1000,
    memJobs: int('BENCH_QUEUE_MEM_JOBS', 1_000_000, FILL_BATCH),
    memJobBytes: int('BENCH_QUEUE_MEM_JOB_BYTES', 64, 32),
    settleMs: envNumber('BENCH_QUEUE_SETTLE_MS', 2000),
  };
}

const topicPath = (topic: string, op = '') => `/v0/topics/${encodeURIComponent(topic)}${op ? `/${op}` : ''}`;
const nsSince = (t0: bigint) => Number(process.hrtime.bigint() - t0);
const sorted = (xs: number[]) => Float64Array.from(xs).sort();
const ms3 = (n: number) => (Number.isFinite(n) ? n.toFixed(3) : '–');

function serverState(srv: ChildServer): string {
  return srv.alive
    ? 'server still running'
    : `server DIED (code ${srv.proc.exitCode}, signal ${srv.proc.signalCode}); stderr: ${srv.stderr().trim().slice(-4000)}`;
}

/** POST expecting 200; anything else (or a transport error) throws with the body / server state. */
async function post200(
  srv: ChildServer,
  client: Pick<PostClient, 'post'>,
  p: string,
  body: string | Buffer,
  what: string,
): Promise<{ r: Resp; j: any }> {
  let r: Resp;
  try {
    r = await client.post(p, body);
  } catch (err) {
    throw new Error(`${what}: POST ${p}: ${(err as Error).message}; ${serverState(srv)}`);
  }
  const text = r.body.toString('utf8');
  if (r.status !== 200) throw new Error(`${what}: POST ${p} -> ${r.status}: ${text.slice(0, 1000)}`);
  let j: any;
  try {
    j = JSON.parse(text);
  } catch {
    throw new Error(`${what}: POST ${p} -> 200 with a body that is not JSON: ${text.slice(0, 300)}`);
  }
  return { r, j };
}

/** `acked` / `skipped` of an ack reply: an array of seqs (QUEUES.md); a bare count is accepted too. */
function countOf(v: unknown, field: string, reply: unknown): number {
  if (Array.isArray(v)) return v.length;
  if (typeof v === 'number') return v;
  throw new Error(`ack reply without a \`${field}\` array: ${JSON.stringify(reply).slice(0, 300)}`);
}

/** The topic's queue counters (GET /v0/topics/:q → queue). */
async function queueCounters(client: HttpClient, topic: string): Promise<{ ready: number; in_flight: number; dead_lettered?: number }> {
  const j = await client.json('GET', `${topicPath(topic)}?touch=false`);
  const q = j.queue;
  if (!q || typeof q.ready !== 'number')
    throw new Error(`GET ${topicPath(topic)}: no \`queue\` counters in ${JSON.stringify(j).slice(0, 300)}`);
  return q;
}

/** Creates a queue and appends `jobs` jobs with one producer (not timed); checks `ready`. */
async function fillQueue(
  srv: ChildServer,
  client: HttpClient,
  topic: string,
  durability: string,
  jobs: number,
  jobBytes: number,
  maxMs: number,
): Promise<void> {
  await createTopic(client, topic, { type: 'queue', durability });
  const t0 = process.hrtime.bigint();
  await appendMany({
    client,
    topic,
    total: jobs,
    batch: FILL_BATCH,
    concurrency: 1,
    deadlineMs: maxMs,
    server: srv,
    recordBytes: jobBytes,
  });
  const q = await queueCounters(client, topic);
  if (q.ready !== jobs || q.in_flight !== 0)
    throw new Error(`${topic}: after appending ${jobs} jobs the queue reports ready ${q.ready}, in_flight ${q.in_flight}`);
  log(`queue: ${topic} (${durability}) filled with ${jobs} jobs of ${jobBytes} B in ${(nsSince(t0) / 1e9).toFixed(1)} s`);
}

// ---- claim + ack workers -----------------------------------------------------------------------

interface DrainResult {
  acked: number;
  batches: number;
  emptyClaims: number;
  skipped: number;
  skippedSamples: string[];
  dup: number;
  /** Stopped by the time bound with jobs left. */
  timedOut: boolean;
  elapsedS: number;
  /** Claim send → ack reply, per non-empty batch. */
  pairMs: Float64Array;
  /** The claim request alone / the ack request alone, per non-empty batch. */
  claimMs: Float64Array;
  ackMs: Float64Array;
}

/**
 * `workers` workers loop claim → ack until their claim comes back empty, or until `stopAfterMs`
 * (then `timedOut` is set). A non-200 or a transport error stops every worker and throws.
 */
async function drainClaimAck(srv: ChildServer, topic: string, workers: number, max: number, stopAfterMs: number): Promise<DrainResult> {
  const clients = Array.from({ length: workers }, () => serialClient(srv.port, queueClientKind()));
  const claimPath = topicPath(topic, 'claim');
  const ackPath = topicPath(topic, 'ack');
  const pair: number[] = [];
  const claimLat: number[] = [];
  const ackLat: number[] = [];
  const seen = new Set<number>();
  const res = { acked: 0, batches: 0, emptyClaims: 0, skipped: 0, skippedSamples: [] as string[], dup: 0, timedOut: false };
  let fatal: Error | undefined;
  let lastAckNs = 0n;
  const t0 = process.hrtime.bigint();
  const end = t0 + BigInt(Math.round(stopAfterMs)) * 1_000_000n;
  const worker = async (w: number) => {
    const node = `w${w}`;
    const client = clients[w]!;
    const claimBody = Buffer.from(JSON.stringify({ node, max }));
    while (!fatal) {
      if (process.hrtime.bigint() > end) {
        res.timedOut = true;
        return;
      }
      const tClaim = process.hrtime.bigint();
      const c = await post200(srv, client, claimPath, claimBody, `claim (node ${node})`);
      const claimed = c.j.claimed as Array<{ $seq: number; lease_id: string }> | undefined;
      if (!Array.isArray(claimed) || c.j.count !== claimed.length)
        throw new Error(
          `claim (node ${node}): reply with count ${c.j.count} and ${Array.isArray(claimed) ? claimed.length : 'no'} claimed jobs: ${c.r.body.toString('utf8').slice(0, 300)}`,
        );
      if (claimed.length === 0) {
        res.emptyClaims++;
        return;
      }
      if (claimed.length > max) throw new Error(`claim (node ${node}): ${claimed.length} jobs for max ${max}`);
      const seqs: number[] = new Array(claimed.length);
      const leaseIds: string[] = new Array(claimed.length);
      for (let i = 0; i < claimed.length; i++) {
        const job = claimed[i]!;
        if (typeof job.$seq !== 'number' || typeof job.lease_id !== 'string')
          throw new Error(`claim (node ${node}): job without $seq/lease_id: ${JSON.stringify(job).slice(0, 300)}`);
        seqs[i] = job.$seq;
        leaseIds[i] = job.lease_id;
        if (seen.has(job.$seq)) res.dup++;
        else seen.add(job.$seq);
      }
      const a = await post200(srv, client, ackPath, JSON.stringify({ node, seqs, lease_ids: leaseIds }), `ack (node ${node})`);
      const now = process.hrtime.bigint();
      if (now > lastAckNs) lastAckNs = now;
      const acked = countOf(a.j.acked, 'acked', a.j);
      const skipped = a.j.skipped === undefined ? 0 : countOf(a.j.skipped, 'skipped', a.j);
      res.acked += acked;
      res.batches++;
      if (skipped) {
        res.skipped += skipped;
        if (res.skippedSamples.length < 3) res.skippedSamples.push(`node ${node}: ${JSON.stringify(a.j.skipped)}`);
      }
      pair.push(Number(now - tClaim) / 1e6);
      claimLat.push(Number(c.r.ns) / 1e6);
      ackLat.push(Number(a.r.ns) / 1e6);
    }
  };
  try {
    await Promise.all(
      Array.from({ length: workers }, (_, w) =>
        worker(w).catch((err: Error) => {
          fatal ??= err;
        }),
      ),
    );
  } finally {
    for (const c of clients) c.close();
  }
  if (fatal) throw fatal;
  const elapsedS = Number((lastAckNs > t0 ? lastAckNs : process.hrtime.bigint()) - t0) / 1e9;
  return { ...res, elapsedS, pairMs: sorted(pair), claimMs: sorted(claimLat), ackMs: sorted(ackLat) };
}

// ---- /work push consumers ----------------------------------------------------------------------

interface PushJob {
  seq: number;
  leaseId: string;
  /** hrtime of the socket read that completed the frame. */
  atNs: bigint;
}

/** Shared by the connections of one run. */
class PushRun {
  acked = 0;
  acks = 0;
  frames = 0;
  skipped = 0;
  skippedSamples: string[] = [];
  dup = 0;
  inFlight = 0;
  lastAckNs = 0n;
  /** hrtime of the last frame or ack reply, for the stall check. */
  lastProgressNs = process.hrtime.bigint();
  fatal: Error | undefined;
  /** No new acks once set (warm-up end). */
  stopping = false;
  readonly latMs: number[] = [];
  readonly seen = new Set<number>();

  constructor(
    readonly srv: ChildServer,
    /** The acks' client: raw keep-alive sockets (or node:http with BENCH_QUEUE_CLIENT=http). */
    readonly ackClient: Pick<PostClient, 'post'>,
    readonly topic: string,
    readonly ackBatch: number,
    readonly ackWaitMs: number,
  ) {}

  fail(err: Error): void {
    this.fatal ??= err;
  }
}

/**
 * One `/work` connection: node:http GET with `Accept: text/event-stream`, frames split on blank
 * lines; `job` frames give (id = seq, data.lease_id); `event: error` fails the run.
 */
class PushWorker {
  private req: http.ClientRequest | undefined;
  private buf = '';
  private pending: PushJob[] = [];
  private timer: NodeJS.Timeout | undefined;
  private closing = false;

  constructor(
    private readonly run: PushRun,
    readonly node: string,
    private readonly max: number,
  ) {}

  /** Resolves once the 200 head arrived; rejects with the status and body otherwise. */
  open(): Promise<void> {
    const p = `${topicPath(this.run.topic, 'work')}?node=${encodeURIComponent(this.node)}&max=${this.max}`;
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: this.run.srv.port, method: 'GET', path: p, agent: false, headers: { accept: 'text/event-stream' } },
        (res) => {
          if (res.statusCode !== 200) {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              reject(new Error(`GET ${p} -> ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 1000)}`)),
            );
            res.on('error', reject);
            return;
          }
          const ct = String(res.headers['content-type'] ?? '');
          if (!ct.startsWith('text/event-stream')) {
            reject(new Error(`GET ${p} -> 200 with content-type ${JSON.stringify(ct)}`));
            res.destroy();
            return;
          }
          res.setEncoding('utf8');
          res.on('data', (s: string) => this.onData(s, process.hrtime.bigint()));
          res.on('error', (e) => {
            if (!this.closing) this.run.fail(new Error(`${this.node}: /work stream: ${e.message}`));
          });
          res.on('close', () => {
            if (!this.closing) this.run.fail(new Error(`${this.node}: /work stream closed by the server; ${serverState(this.run.srv)}`));
          });
          resolve();
        },
      );
      req.on('error', (e) => {
        if (this.closing) return;
        const err = new Error(`${this.node}: GET ${p}: ${e.message}; ${serverState(this.run.srv)}`);
        this.run.fail(err);
        reject(err);
      });
      req.end();
      this.req = req;
    });
  }

  private onData(s: string, atNs: bigint): void {
    this.buf += s;
    for (;;) {
      const e = this.buf.indexOf('\n\n');
      if (e < 0) break;
      const frame = this.buf.slice(0, e);
      this.buf = this.buf.slice(e + 2);
      this.onFrame(frame, atNs);
    }
    if (this.pending.length >= this.run.ackBatch) this.flush();
  }

  private onFrame(frame: string, atNs: bigint): void {
    let event = 'message';
    let id: string | undefined;
    let data = '';
    for (const raw of frame.split('\n')) {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (line === '' || line.startsWith(':')) continue;
      const c = line.indexOf(':');
      const field = c < 0 ? line : line.slice(0, c);
      const value = c < 0 ? '' : line.slice(c + (line[c + 1] === ' ' ? 2 : 1));
      if (field === 'event') event = value;
      else if (field === 'id') id = value;
      else if (field === 'data') data = data ? `${data}\n${value}` : value;
    }
    if (event === 'error') {
      this.run.fail(new Error(`${this.node}: /work error frame: ${data.slice(0, 500)}`));
      return;
    }
    if (event !== 'job') return; // `retry:` and comment-only frames
    const seq = Number(id);
    let j: any;
    try {
      j = JSON.parse(data);
    } catch {
      this.run.fail(new Error(`${this.node}: job frame with data that is not JSON: ${data.slice(0, 300)}`));
      return;
    }
    if (!Number.isSafeInteger(seq) || j.$seq !== seq || typeof j.lease_id !== 'string') {
      this.run.fail(new Error(`${this.node}: job frame with id ${JSON.stringify(id)} and data ${data.slice(0, 300)}`));
      return;
    }
    const run = this.run;
    run.frames++;
    run.lastProgressNs = atNs;
    if (run.seen.has(seq)) run.dup++;
    else run.seen.add(seq);
    this.pending.push({ seq, leaseId: j.lease_id, atNs });
    if (this.pending.length === 1 && !this.timer) this.timer = setTimeout(() => this.flush(), this.run.ackWaitMs);
  }

  /** One ack POST with every un-acked job of this connection. */
  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const run = this.run;
    if (this.pending.length === 0 || run.stopping || run.fatal) return;
    const jobs = this.pending;
    this.pending = [];
    const body = JSON.stringify({ node: this.node, seqs: jobs.map((x) => x.seq), lease_ids: jobs.map((x) => x.leaseId) });
    run.inFlight++;
    post200(run.srv, run.ackClient, topicPath(run.topic, 'ack'), body, `ack (node ${this.node})`).then(
      ({ j }) => {
        const now = process.hrtime.bigint();
        run.inFlight--;
        try {
          run.acked += countOf(j.acked, 'acked', j);
          const skipped = j.skipped === undefined ? 0 : countOf(j.skipped, 'skipped', j);
          if (skipped) {
            run.skipped += skipped;
            if (run.skippedSamples.length < 3) run.skippedSamples.push(`node ${this.node}: ${JSON.stringify(j.skipped)}`);
          }
        } catch (err) {
          run.fail(err as Error);
          return;
        }
        run.acks++;
        run.lastAckNs = now;
        run.lastProgressNs = now;
        for (const x of jobs) run.latMs.push(Number(now - x.atNs) / 1e6);
      },
      (err: Error) => {
        run.inFlight--;
        run.fail(err);
      },
    );
  }

  close(): void {
    this.closing = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.req?.destroy();
  }
}

interface PushResult {
  acked: number;
  acks: number;
  frames: number;
  skipped: number;
  skippedSamples: string[];
  dup: number;
  timedOut: boolean;
  elapsedS: number;
  latMs: Float64Array;
}

/**
 * Opens `conns` /work connections and acks what they get until `expect` jobs are acked or
 * `stopAfterMs` passed (then `timedOut` is set: the end of a warm-up, a failure otherwise).
 * Throws on any error, and when nothing arrives or is acked for 10 s.
 */
async function drainPush(
  srv: ChildServer,
  topic: string,
  conns: number,
  max: number,
  k: Knobs,
  expect: number,
  stopAfterMs: number,
): Promise<PushResult> {
  const ackPool = concurrentClient(srv.port, queueClientKind(), conns * 2);
  const run = new PushRun(srv, ackPool, topic, k.ackBatch, k.ackWaitMs);
  const ws = Array.from({ length: conns }, (_, i) => new PushWorker(run, `w${i}`, max));
  const t0 = process.hrtime.bigint();
  const end = t0 + BigInt(Math.round(stopAfterMs)) * 1_000_000n;
  let timedOut = false;
  try {
    await Promise.all(ws.map((w) => w.open()));
    for (;;) {
      if (run.fatal) throw run.fatal;
      if (run.acked >= expect) break;
      const now = process.hrtime.bigint();
      if (now > end) {
        timedOut = true;
        break;
      }
      if (now - run.lastProgressNs > 10_000_000_000n) {
        const q = await diagnose(srv.port, (c) => queueCounters(c, topic));
        throw new Error(
          `/work: no job frame and no ack reply for 10 s; ${run.acked}/${expect} acked, ${run.frames} frames; queue ${JSON.stringify(q)}; ${serverState(srv)}`,
        );
      }
      await sleep(5);
    }
    // Stop acking, let the acks in flight finish, then close the streams.
    run.stopping = true;
    const drainUntil = Date.now() + 10_000;
    while (run.inFlight > 0 && Date.now() < drainUntil) await sleep(2);
    if (run.fatal) throw run.fatal;
  } finally {
    for (const w of ws) w.close();
    ackPool.close();
  }
  const elapsedS = Number((run.lastAckNs > t0 ? run.lastAckNs : process.hrtime.bigint()) - t0) / 1e9;
  return {
    acked: run.acked,
    acks: run.acks,
    frames: run.frames,
    skipped: run.skipped,
    skippedSamples: run.skippedSamples,
    dup: run.dup,
    timedOut,
    elapsedS,
    latMs: sorted(run.latMs),
  };
}

/** A diagnostic's question to the server on a client of its own, opened only for it; an error becomes its message. */
async function diagnose<T>(port: number, ask: (c: HttpClient) => Promise<T>): Promise<T | string> {
  const c = new HttpClient(port, 1);
  try {
    return await ask(c);
  } catch (e) {
    return (e as Error).message;
  } finally {
    c.close();
  }
}

/** The claim+ack workers' client (parts 1-3 and the echo baseline): BENCH_QUEUE_CLIENT=http for node:http. */
function queueClientKind(): 'raw' | 'http' {
  return clientKindFrom('BENCH_QUEUE_CLIENT');
}

// ---- baseline: echo server, claim+ack request shape --------------------------------------------

interface Baseline {
  row: Row;
  reqPerSec: number;
  /** jobs/s if every claim returned `claimMax` jobs at echo's request rate. */
  ceiling: number;
}

async function echoBaseline(k: Knobs, durationMs: number): Promise<Baseline> {
  const echo = await startEcho();
  const clients = Array.from({ length: k.workers }, () => serialClient(echo.port, queueClientKind()));
  try {
    const hex = (i: number) => i.toString(16).padStart(24, '0');
    const claimBodies = Array.from({ length: k.workers }, (_, w) => Buffer.from(JSON.stringify({ node: `w${w}`, max: k.claimMax })));
    const ackBodies = Array.from({ length: k.workers }, (_, w) => {
      const seqs = Array.from({ length: k.claimMax }, (_, i) => 50_000 + w * k.claimMax + i);
      return Buffer.from(JSON.stringify({ node: `w${w}`, seqs, lease_ids: seqs.map((s) => `lease_${hex(s * 7919)}`) }));
    });
    const run = async (ms: number) => {
      const pair: number[] = [];
      let requests = 0;
      const t0 = process.hrtime.bigint();
      const end = t0 + BigInt(ms) * 1_000_000n;
      let fatal: Error | undefined;
      const worker = async (w: number) => {
        while (!fatal && process.hrtime.bigint() < end) {
          const t = process.hrtime.bigint();
          await post200(echo, clients[w]!, '/echo', claimBodies[w]!, 'echo (claim shape)');
          await post200(echo, clients[w]!, '/echo', ackBodies[w]!, 'echo (ack shape)');
          requests += 2;
          pair.push(nsSince(t) / 1e6);
        }
      };
      await Promise.all(Array.from({ length: k.workers }, (_, w) => worker(w).catch((e: Error) => void (fatal ??= e))));
      if (fatal) throw fatal;
      return { requests, elapsedS: nsSince(t0) / 1e9, pairMs: sorted(pair) };
    };
    await run(warmupMs());
    echo.rss.reset();
    const cpu = new CpuSplitMeter(echo.pid).start();
    log(`queue: echo baseline, ${k.workers} clients alternating claim- and ack-shaped POSTs, ${durationMs} ms`);
    const r = await run(durationMs);
    const split = cpu.stop();
    const peak = echo.rss.peakBytes();
    echo.assertAlive();
    const reqPerSec = r.requests / r.elapsedS;
    const ceiling = (reqPerSec / 2) * k.claimMax;
    log(`queue: echo ${Math.round(reqPerSec)} req/s → ceiling ${Math.round(ceiling)} jobs/s; pair p50 ${ms3(percentile(r.pairMs, 50))} ms`);
    return {
      reqPerSec,
      ceiling,
      row: {
        name: 'queue: echo, claim+ack request shape',
        recordsPerSec: round(ceiling, 0),
        p50Ms: round(percentile(r.pairMs, 50), 3),
        p99Ms: round(percentile(r.pairMs, 99), 3),
        peakRssMB: round(peak / MB, 1),
        notes: `ceiling in jobs/s: ${Math.round(reqPerSec)} req/s, ${k.claimMax} jobs per claim+ack pair; ${k.workers} clients; latency per pair; echo replies are small (spool's claim reply carries the jobs); ${cpuNote(split)}`,
        extra: {
          req_per_s: round(reqPerSec, 0),
          requests: r.requests,
          seconds: round(r.elapsedS, 2),
          clients: k.workers,
          claim_body_bytes: claimBodies[0]!.length,
          ack_body_bytes: ackBodies[0]!.length,
          server_cpu_pct: round(split.server, 0),
          client_cpu_pct: round(split.client, 0),
          other_cpu_pct: round(split.other, 0),
        },
      },
    };
  } finally {
    for (const c of clients) c.close();
    await echo.close();
  }
}

// ---- parts 1-4 ---------------------------------------------------------------------------------

interface PartResult {
  row: Row;
  jobsPerSec: number;
  p50: number;
  /** Server CPU per job (all threads). */
  usPerJob: number;
  problems: string[];
}

/** Server CPU µs per job over a phase of `wallS` seconds. */
function cpuUsPerJob(split: CpuSplit, wallS: number, jobs: number): number {
  return jobs > 0 ? ((split.server / 100) * wallS * 1e6) / jobs : NaN;
}

/** The per-thread figures of threadUsPerJob as a note: main, then the three busiest others. */
function threadNote(t: { main: number; others: number[] }): string {
  return `per thread: main ${t.main.toFixed(1)}, then ${t.others
    .slice(0, 3)
    .map((v) => v.toFixed(1))
    .join(', ')} µs/job`;
}

/** utime + stime (s) of every thread of `pid`, by tid; a thread that ended meanwhile is left out. */
function threadCpuS(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const st = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), (Number(f[11]) + Number(f[12])) / 100); // USER_HZ ticks
    } catch {
      /* the thread ended */
    }
  }
  return out;
}

/**
 * Server CPU per job of each thread between two threadCpuS reads: the main (HTTP) thread, then
 * the others busiest first (for `/work`: the topic worker, the WAL thread, V8's helpers). Per
 * thread, no perf needed, and whole-drain figures rather than a sampled window.
 */
function threadUsPerJob(
  pid: number,
  before: Map<number, number>,
  after: Map<number, number>,
  jobs: number,
): { main: number; others: number[] } {
  const us = (tid: number) => (((after.get(tid) ?? 0) - (before.get(tid) ?? 0)) * 1e6) / Math.max(1, jobs);
  const others = [...after.keys()]
    .filter((t) => t !== pid)
    .map(us)
    .filter((v) => v > 0)
    .sort((a, b) => b - a);
  return { main: us(pid), others };
}

function ceilingNote(jobsPerSec: number, base: Baseline | undefined): string {
  return base
    ? `${((jobsPerSec / base.ceiling) * 100).toFixed(1)}% of the echo ceiling (${Math.round(base.ceiling)} jobs/s)`
    : 'no echo baseline';
}

async function afterDrainChecks(admin: HttpClient, topic: string, problems: string[]): Promise<{ ready: number; in_flight: number }> {
  const q = await queueCounters(admin, topic);
  if (q.ready !== 0 || q.in_flight !== 0) problems.push(`${topic} not empty after the drain: ready ${q.ready}, in_flight ${q.in_flight}`);
  return q;
}

/** Parts 1-3: fill, warm up on a separate queue, drain with claim+ack workers. */
async function claimAckPart(
  srv: ChildServer,
  admin: HttpClient,
  k: Knobs,
  o: {
    name: string;
    topic: string;
    durability: string;
    workers: number;
    max: number;
    jobs: number;
    latency: 'pair' | 'claim';
    base?: Baseline;
    target?: string;
  },
): Promise<PartResult> {
  const warmTopic = `${o.topic}.warm`;
  await fillQueue(srv, admin, warmTopic, o.durability, k.warmJobs, k.jobBytes, k.maxMs);
  await drainClaimAck(srv, warmTopic, o.workers, o.max, k.warmMs);
  await fillQueue(srv, admin, o.topic, o.durability, o.jobs, k.jobBytes, k.maxMs);

  srv.rss.reset();
  const cpu = new CpuSplitMeter(srv.pid).start();
  const threads0 = threadCpuS(srv.pid);
  const tc = process.hrtime.bigint();
  log(`queue: ${o.name}: ${o.jobs} jobs, ${o.workers} worker${o.workers === 1 ? '' : 's'}, max ${o.max}`);
  const d = await drainClaimAck(srv, o.topic, o.workers, o.max, k.maxMs);
  const split = cpu.stop();
  const byThread = threadUsPerJob(srv.pid, threads0, threadCpuS(srv.pid), d.acked);
  const wallS = nsSince(tc) / 1e9;
  const peak = srv.rss.peakBytes();
  srv.assertAlive();

  const problems: string[] = [];
  if (d.timedOut) problems.push(`drain not finished within ${k.maxMs / 1000} s`);
  if (d.acked !== o.jobs) problems.push(`${d.acked}/${o.jobs} jobs acked`);
  if (d.skipped) problems.push(`${d.skipped} seqs skipped by ack (${d.skippedSamples.join('; ')})`);
  if (d.dup) problems.push(`${d.dup} jobs claimed twice`);
  const q = await afterDrainChecks(admin, o.topic, problems);

  const lat = o.latency === 'pair' ? d.pairMs : d.claimMs;
  const jobsPerSec = d.acked / d.elapsedS;
  const us = cpuUsPerJob(split, wallS, d.acked);
  const p50 = percentile(lat, 50);
  const p99 = percentile(lat, 99);
  const latText =
    o.latency === 'pair'
      ? `latency claim send → ack reply per batch; claim p50 ${ms3(percentile(d.claimMs, 50))}, ack p50 ${ms3(percentile(d.ackMs, 50))} ms`
      : `latency = claim request; ack p50 ${ms3(percentile(d.ackMs, 50))} p99 ${ms3(percentile(d.ackMs, 99))} ms`;
  const notes = [
    o.target,
    o.base !== undefined ? ceilingNote(jobsPerSec, o.base) : undefined,
    `server CPU ${us.toFixed(1)} µs/job`,
    threadNote(byThread),
    latText,
    `${d.batches} batches`,
    cpuNote(split),
    problems.length ? `PROBLEMS: ${problems.join('; ')}` : undefined,
  ]
    .filter(Boolean)
    .join('; ');
  log(
    `queue: ${o.name}: ${Math.round(jobsPerSec)} jobs/s, p50 ${ms3(p50)} p99 ${ms3(p99)} ms, ${us.toFixed(1)} µs server CPU/job, peak RSS ${(peak / MB).toFixed(0)} MB${problems.length ? `; PROBLEMS: ${problems.join('; ')}` : ''}`,
  );
  return {
    jobsPerSec,
    p50,
    usPerJob: us,
    problems,
    row: {
      name: `queue: ${o.name}`,
      recordsPerSec: round(jobsPerSec, 0),
      p50Ms: round(p50, 3),
      p99Ms: round(p99, 3),
      peakRssMB: round(peak / MB, 1),
      notes,
      extra: {
        topic_config: { type: 'queue', durability: o.durability },
        jobs: o.jobs,
        job_bytes: k.jobBytes,
        workers: o.workers,
        max: o.max,
        acked: d.acked,
        batches: d.batches,
        empty_claims: d.emptyClaims,
        seconds: round(d.elapsedS, 3),
        latency: o.latency === 'pair' ? 'claim send to ack reply, per batch' : 'claim request',
        p90_ms: round(percentile(lat, 90), 3),
        p999_ms: round(percentile(lat, 99.9), 3),
        max_ms: round(lat.length ? lat[lat.length - 1]! : NaN, 3),
        claim_p50_ms: round(percentile(d.claimMs, 50), 3),
        claim_p99_ms: round(percentile(d.claimMs, 99), 3),
        ack_p50_ms: round(percentile(d.ackMs, 50), 3),
        ack_p99_ms: round(percentile(d.ackMs, 99), 3),
        server_cpu_us_per_job: round(us, 2),
        server_cpu_us_per_job_main: round(byThread.main, 1),
        server_cpu_us_per_job_other_threads: byThread.others.slice(0, 4).map((v) => round(v, 1)),
        server_cpu_pct: round(split.server, 0),
        client_cpu_pct: round(split.client, 0),
        other_cpu_pct: round(split.other, 0),
        steal_pct: round(split.steal, 0),
        ...(o.base ? { vs_echo_ceiling: round(jobsPerSec / o.base.ceiling, 3) } : {}),
        queue_after: q,
        skipped: d.skipped,
        dup: d.dup,
        ...(problems.length ? { problems } : {}),
      },
    },
  };
}

/** Part 4: /work push with batched acks. */
async function pushPart(srv: ChildServer, admin: HttpClient, k: Knobs, base: Baseline | undefined): Promise<PartResult> {
  const topic = 'queue-push';
  const name = '/work push, disk';
  await fillQueue(srv, admin, `${topic}.warm`, 'disk', k.warmJobs, k.jobBytes, k.maxMs);
  await drainPush(srv, `${topic}.warm`, k.workers, k.claimMax, k, k.warmJobs, k.warmMs);
  await fillQueue(srv, admin, topic, 'disk', k.jobs, k.jobBytes, k.maxMs);

  srv.rss.reset();
  const cpu = new CpuSplitMeter(srv.pid).start();
  const threads0 = threadCpuS(srv.pid);
  const tc = process.hrtime.bigint();
  log(`queue: ${name}: ${k.jobs} jobs, ${k.workers} connections, max ${k.claimMax}, ack at ${k.ackBatch} jobs or ${k.ackWaitMs} ms`);
  const d = await drainPush(srv, topic, k.workers, k.claimMax, k, k.jobs, k.maxMs);
  const split = cpu.stop();
  const byThread = threadUsPerJob(srv.pid, threads0, threadCpuS(srv.pid), d.acked);
  const wallS = nsSince(tc) / 1e9;
  const peak = srv.rss.peakBytes();
  srv.assertAlive();

  const problems: string[] = [];
  if (d.timedOut) problems.push(`drain not finished within ${k.maxMs / 1000} s`);
  if (d.acked !== k.jobs) problems.push(`${d.acked}/${k.jobs} jobs acked`);
  if (d.skipped) problems.push(`${d.skipped} seqs skipped by ack (${d.skippedSamples.join('; ')})`);
  if (d.dup) problems.push(`${d.dup} jobs delivered twice`);
  // The streams are closed; anything still leased to them was released.
  const q = await afterDrainChecks(admin, topic, problems);

  const jobsPerSec = d.acked / d.elapsedS;
  const us = cpuUsPerJob(split, wallS, d.acked);
  const p50 = percentile(d.latMs, 50);
  const p99 = percentile(d.latMs, 99);
  const notes = [
    base ? `${ceilingNote(jobsPerSec, base)} (a claim+ack ceiling; push needs no claim request)` : undefined,
    `server CPU ${us.toFixed(1)} µs/job`,
    threadNote(byThread),
    `latency frame read → ack reply per job`,
    `${(d.acked / Math.max(1, d.acks)).toFixed(1)} jobs per ack`,
    cpuNote(split),
    problems.length ? `PROBLEMS: ${problems.join('; ')}` : undefined,
  ]
    .filter(Boolean)
    .join('; ');
  log(
    `queue: ${name}: ${Math.round(jobsPerSec)} jobs/s, p50 ${ms3(p50)} p99 ${ms3(p99)} ms, ${d.acks} acks, ${us.toFixed(1)} µs server CPU/job, peak RSS ${(peak / MB).toFixed(0)} MB${problems.length ? `; PROBLEMS: ${problems.join('; ')}` : ''}`,
  );
  return {
    jobsPerSec,
    p50,
    usPerJob: us,
    problems,
    row: {
      name: `queue: ${name}`,
      recordsPerSec: round(jobsPerSec, 0),
      p50Ms: round(p50, 3),
      p99Ms: round(p99, 3),
      peakRssMB: round(peak / MB, 1),
      notes,
      extra: {
        topic_config: { type: 'queue', durability: 'disk' },
        jobs: k.jobs,
        job_bytes: k.jobBytes,
        connections: k.workers,
        max: k.claimMax,
        ack_batch: k.ackBatch,
        ack_wait_ms: k.ackWaitMs,
        acked: d.acked,
        frames: d.frames,
        acks: d.acks,
        seconds: round(d.elapsedS, 3),
        p90_ms: round(percentile(d.latMs, 90), 3),
        p999_ms: round(percentile(d.latMs, 99.9), 3),
        max_ms: round(d.latMs.length ? d.latMs[d.latMs.length - 1]! : NaN, 3),
        server_cpu_us_per_job: round(us, 2),
        server_cpu_us_per_job_main: round(byThread.main, 2),
        server_cpu_us_per_job_other_threads: byThread.others.slice(0, 4).map((v) => round(v, 2)),
        server_cpu_pct: round(split.server, 0),
        client_cpu_pct: round(split.client, 0),
        other_cpu_pct: round(split.other, 0),
        steal_pct: round(split.steal, 0),
        ...(base ? { vs_echo_ceiling: round(jobsPerSec / base.ceiling, 3) } : {}),
        queue_after: q,
        skipped: d.skipped,
        dup: d.dup,
        ...(problems.length ? { problems } : {}),
      },
    },
  };
}

// ---- part 5: memory of ready jobs, queue vs log ------------------------------------------------

interface MemSide {
  before: number;
  after: number;
  peak: number;
  rate: number;
  latMs: Float64Array;
  split: CpuSplit;
}

/** A fresh server, one topic of `type`; RSS before and after appending `k.memJobs` records. */
async function memSide(type: 'queue' | 'log', k: Knobs): Promise<MemSide> {
  const srv = await startSpool({ label: `queue-mem-${type}` });
  const client = new HttpClient(srv.port, 4);
  try {
    const cfg = { type, durability: 'memory' };
    // First-use costs (JIT of the append path, first WAL file) before the baseline.
    await createTopic(client, 'mem-warm', cfg);
    await appendMany({
      client,
      topic: 'mem-warm',
      total: 10 * FILL_BATCH,
      batch: FILL_BATCH,
      concurrency: 4,
      deadlineMs: k.maxMs,
      server: srv,
      recordBytes: k.memJobBytes,
    });
    await createTopic(client, 'mem', cfg);
    const before = await settledRss(srv, k.settleMs);
    srv.rss.reset();
    const cpu = new CpuSplitMeter(srv.pid).start();
    log(`queue: memory (${type}): appending ${k.memJobs} records of ${k.memJobBytes} B, RSS before ${(before / MB).toFixed(1)} MB`);
    const load = await appendMany({
      client,
      topic: 'mem',
      total: k.memJobs,
      batch: FILL_BATCH,
      concurrency: 4,
      deadlineMs: k.maxMs * 5,
      server: srv,
      recordBytes: k.memJobBytes,
      onProgress: (n) => log(`queue: memory (${type}): ${n}/${k.memJobs}`),
    });
    const split = cpu.stop();
    const peak = srv.rss.peakBytes();
    if (type === 'queue') {
      const q = await queueCounters(client, 'mem');
      if (q.ready !== k.memJobs) throw new Error(`memory (queue): ${k.memJobs} jobs appended, ready ${q.ready}`);
    }
    const after = await settledRss(srv, k.settleMs);
    srv.assertAlive();
    log(
      `queue: memory (${type}): RSS ${(before / MB).toFixed(1)} → ${(after / MB).toFixed(1)} MB = ${((after - before) / k.memJobs).toFixed(1)} B/record`,
    );
    return { before, after, peak, rate: load.records / load.elapsedS, latMs: load.latMs, split };
  } finally {
    client.close();
    await srv.close();
  }
}

async function memoryPart(k: Knobs): Promise<{ rows: Row[]; extraPerJob: number }> {
  const qm = await memSide('queue', k);
  const lm = await memSide('log', k);
  const perJob = (m: MemSide) => (m.after - m.before) / k.memJobs;
  const extraPerJob = perJob(qm) - perJob(lm);
  const label = `${k.memJobs >= 1e6 ? `${(k.memJobs / 1e6).toFixed(k.memJobs % 1e6 ? 1 : 0)}M` : `${k.memJobs / 1000}k`} × ${k.memJobBytes} B`;
  const side = (type: string, m: MemSide): Row => ({
    name: `queue: memory, ${label} in a ${type}`,
    recordsPerSec: round(m.rate, 0),
    p50Ms: round(percentile(m.latMs, 50), 3),
    p99Ms: round(percentile(m.latMs, 99), 3),
    peakRssMB: round(m.peak / MB, 1),
    notes: `settled RSS ${(m.before / MB).toFixed(1)} → ${(m.after / MB).toFixed(1)} MB = ${perJob(m).toFixed(1)} B/record; \`memory\` durability, fresh server; appends of ${FILL_BATCH}, 4 writers, per-request latency; ${cpuNote(m.split)}`,
    extra: {
      type,
      records: k.memJobs,
      record_bytes: k.memJobBytes,
      rss_before_mb: round(m.before / MB, 2),
      rss_after_mb: round(m.after / MB, 2),
      bytes_per_record: round(perJob(m), 1),
    },
  });
  const met = extraPerJob <= TARGET_MEM_EXTRA_BYTES;
  return {
    extraPerJob,
    rows: [
      side('queue (ready jobs)', qm),
      side('log', lm),
      {
        name: 'queue: memory, queue − log per job',
        recordsPerSec: null,
        p50Ms: null,
        p99Ms: null,
        peakRssMB: null,
        notes: `**${extraPerJob.toFixed(1)} B/job** (target ≤ ${TARGET_MEM_EXTRA_BYTES} B: ${met ? 'met' : '**MISSED**'}); RSS only (the server exposes no heap figures: /v0/metrics has no process metrics), settled medians, no forced GC`,
        extra: { extra_bytes_per_job: round(extraPerJob, 1), target_bytes: TARGET_MEM_EXTRA_BYTES, target_met: met },
      },
    ],
  };
}

// ---- the workload ------------------------------------------------------------------------------

export async function queue(parts: number[] = [...PARTS]): Promise<WorkloadResult> {
  for (const p of parts) if (!(PARTS as readonly number[]).includes(p)) throw new Error(`queue: unknown part ${p} (parts are 1-5)`);
  const k = knobs();
  const rows: Row[] = [];
  const errors: string[] = [];
  const summary: Record<string, unknown> = { parts, knobs: k };
  const failed = (name: string, err: unknown) => {
    const msg = (err as Error).message ?? String(err);
    log(`queue: ${name} FAILED: ${(err as Error).stack ?? msg}`);
    errors.push(`${name}: ${msg}`);
    rows.push({
      name: `queue: ${name} FAILED`,
      recordsPerSec: null,
      p50Ms: null,
      p99Ms: null,
      peakRssMB: null,
      notes: msg.replace(/\s+/g, ' ').replace(/\|/g, '\\|').slice(0, 300),
    });
  };
  const done = (name: string, r: PartResult) => {
    rows.push(r.row);
    if (r.problems.length) errors.push(`${name}: ${r.problems.join('; ')}`);
  };

  let base: Baseline | undefined;
  if (parts.includes(1) || parts.includes(2)) {
    try {
      base = await echoBaseline(k, benchMs(3));
      rows.push(base.row);
      summary.echo_req_per_s = round(base.reqPerSec, 0);
      summary.echo_ceiling_jobs_per_s = round(base.ceiling, 0);
    } catch (err) {
      failed('echo baseline', err);
    }
  }

  let disk: PartResult | undefined;
  let fsync: PartResult | undefined;
  if (parts.some((p) => p <= 4)) {
    const profDir = process.env.BENCH_QUEUE_CPU_PROF;
    const srv = await startSpool({ label: 'queue', ...(profDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] } : {}) });
    const admin = new HttpClient(srv.port, 1);
    try {
      const parallel = { workers: k.workers, max: k.claimMax, jobs: k.jobs, latency: 'pair' as const, base };
      if (parts.includes(1)) {
        try {
          disk = await claimAckPart(srv, admin, k, { ...parallel, name: 'claim+ack, disk', topic: 'queue-disk', durability: 'disk' });
          const met = disk.usPerJob <= TARGET_CLAIM_ACK_US_PER_JOB;
          disk.row.notes = `server CPU target ≤ ${TARGET_CLAIM_ACK_US_PER_JOB} µs/job: ${metText(met)}; ${disk.row.notes}`;
          done('claim+ack, disk', disk);
          summary.disk_jobs_per_s = round(disk.jobsPerSec, 0);
          summary.disk_us_per_job = round(disk.usPerJob, 1);
          summary.disk_us_per_job_target_met = met;
        } catch (err) {
          failed('claim+ack, disk', err);
        }
      }
      if (parts.includes(2)) {
        try {
          fsync = await claimAckPart(srv, admin, k, {
            ...parallel,
            name: 'claim+ack, fsync',
            topic: 'queue-fsync',
            durability: 'fsync',
            target: `target ≥ ${TARGET_FSYNC_VS_DISK * 100}% of disk`,
          });
          done('claim+ack, fsync', fsync);
          summary.fsync_jobs_per_s = round(fsync.jobsPerSec, 0);
        } catch (err) {
          failed('claim+ack, fsync', err);
        }
      }
      if (parts.includes(3)) {
        try {
          const single = await claimAckPart(srv, admin, k, {
            name: 'claim+ack, 1 worker',
            topic: 'queue-single',
            durability: 'disk',
            workers: 1,
            max: 1,
            jobs: k.singleJobs,
            latency: 'claim',
          });
          const met = single.p50 <= TARGET_SINGLE_CLAIM_P50_MS;
          single.row.notes = `claim p50 target ≤ ${TARGET_SINGLE_CLAIM_P50_MS} ms: ${metText(met)}; ${single.row.notes}`;
          done('claim+ack, 1 worker', single);
          summary.single_claim_p50_ms = round(single.p50, 3);
          summary.single_claim_p50_target_met = met;
        } catch (err) {
          failed('claim+ack, 1 worker', err);
        }
      }
      if (parts.includes(4)) {
        try {
          const push = await pushPart(srv, admin, k, base);
          const met = push.jobsPerSec >= TARGET_PUSH_JOBS_PER_SEC && push.usPerJob <= TARGET_PUSH_US_PER_JOB;
          push.row.notes = `target ≥ ${TARGET_PUSH_JOBS_PER_SEC / 1000}k jobs/s and ≤ ${TARGET_PUSH_US_PER_JOB} µs/job: ${metText(met)}; ${push.row.notes}`;
          done('/work push, disk', push);
          summary.push_jobs_per_s = round(push.jobsPerSec, 0);
          summary.push_us_per_job = round(push.usPerJob, 1);
          summary.push_target_met = met;
        } catch (err) {
          failed('/work push, disk', err);
        }
      }
    } finally {
      admin.close();
      if (profDir) {
        const t = await srv.terminate(30_000);
        log(`queue: server stopped for --cpu-prof (${t.ms.toFixed(0)} ms, code ${t.code}); profiles in ${profDir}`);
      }
      await srv.close();
    }
  }

  if (parts.includes(5)) {
    try {
      const m = await memoryPart(k);
      rows.push(...m.rows);
      summary.memory_extra_bytes_per_job = round(m.extraPerJob, 1);
      summary.memory_target_met = m.extraPerJob <= TARGET_MEM_EXTRA_BYTES;
    } catch (err) {
      failed('memory', err);
    }
  }

  if (base && disk) {
    const r = disk.jobsPerSec / base.ceiling;
    summary.disk_vs_echo_ceiling = round(r, 3);
    rows.push({
      name: 'ratio claim+ack disk / echo ceiling',
      recordsPerSec: null,
      p50Ms: null,
      p99Ms: null,
      peakRssMB: null,
      notes: `${(r * 100).toFixed(1)}% (no target)`,
    });
  }
  if (disk && fsync) {
    const r = fsync.jobsPerSec / disk.jobsPerSec;
    summary.fsync_vs_disk = round(r, 3);
    summary.fsync_vs_disk_target_met = r >= TARGET_FSYNC_VS_DISK;
    log(`queue: claim+ack fsync/disk = ${(r * 100).toFixed(1)}% (target >= ${TARGET_FSYNC_VS_DISK * 100}%)`);
    rows.push({
      name: 'ratio claim+ack fsync / disk',
      recordsPerSec: null,
      p50Ms: null,
      p99Ms: null,
      peakRssMB: null,
      notes: `${(r * 100).toFixed(1)}% (target ≥ ${TARGET_FSYNC_VS_DISK * 100}%)`,
    });
  }
  summary.targets = {
    disk_us_per_job: `<= ${TARGET_CLAIM_ACK_US_PER_JOB}`,
    push_jobs_per_s: `>= ${TARGET_PUSH_JOBS_PER_SEC}`,
    push_us_per_job: `<= ${TARGET_PUSH_US_PER_JOB}`,
    fsync_vs_disk: `>= ${TARGET_FSYNC_VS_DISK}`,
    single_claim_p50_ms: `<= ${TARGET_SINGLE_CLAIM_P50_MS}`,
    memory_extra_bytes_per_job: `<= ${TARGET_MEM_EXTRA_BYTES}`,
  };
  return { workload: 'queue', ok: errors.length === 0, rows, summary, ...(errors.length ? { error: errors.join('; ') } : {}) };
}

// `node dist/bench/queue.js [part ...]`
runAsScript(
  import.meta.url,
  'node dist/bench/queue.js [part ...]   (parts 1-5: claim+ack disk, fsync, 1 worker, /work push, memory)',
  (args) => queue(args),
);
