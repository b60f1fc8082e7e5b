// Workload stages: where one request's time goes, one client on one keep-alive connection, warm.
// (1) The ladder: p50/p99 of requests that cross more and more of the server (health: HTTP only;
//     state: one crossing to a topic worker and back; a one-record diff; a `memory` append,
//     answered before the WAL; `disk` and `fsync` appends), with the stage clock off, so each
//     stage's cost shows as a difference. Targets (the request-path issue): state <= health +
//     60 µs, diff <= state + 40 µs, memory append <= state + 60 µs, disk append <= memory + 50 µs.
// (2) The stage table: the same requests, and a long-poll diff woken by an append, on a server
//     with SERVICE_STAGE_CLOCK=1: per stage p50/p99 (docs/PERFORMANCE.md "Stage clock") and each
//     thread's CPU per request. BENCH_STAGES_N requests per kind (default 3000), after 300 warm-up.
// (3) Queues (docs/PERFORMANCE.md "Queues"), in both: one worker claiming 1 job (`max` 1) from a
//     pre-filled `disk` queue and acking it with its lease id, BENCH_STAGES_N pairs after 300:
//     claim and ack p50/p99 (target: claim p50 <= 0.3 ms), and their stage tables.
import { RawHttpConn, envNumber, log, round, startSpool, type ChildServer, type Row, type WorkloadResult } from './lib.js';

interface Kind {
  name: string;
  method: string;
  path: string;
  body?: string;
}

const KINDS: Kind[] = [
  { name: 'health', method: 'GET', path: '/v0/health' },
  { name: 'state', method: 'GET', path: '/v0/topics/d?touch=false' },
  { name: 'diff1', method: 'POST', path: '/v0/topics/d/diff', body: '{"from_seq":0,"limit":1}' },
  { name: 'append_memory', method: 'POST', path: '/v0/topics/m', body: '{"records":[{"data":{"a":1}}]}' },
  { name: 'append_disk', method: 'POST', path: '/v0/topics/d', body: '{"records":[{"data":{"a":1}}]}' },
  { name: 'append_fsync', method: 'POST', path: '/v0/topics/f', body: '{"records":[{"data":{"a":1}}]}' },
];

const CLAIM_P50_TARGET_MS = 0.3;
const QUEUE_WARMUP = 300;

async function setup(srv: ChildServer, jobs: number): Promise<RawHttpConn> {
  const c = new RawHttpConn(srv.port);
  for (const [t, d] of [
    ['d', 'disk'],
    ['m', 'memory'],
    ['f', 'fsync'],
    ['w', 'disk'],
  ]) {
    const r = await c.request('PUT', `/v0/topics/${t}`, JSON.stringify({ durability: d }));
    if (r.status !== 201 && r.status !== 200) throw new Error(`PUT ${t}: ${r.status}`);
  }
  const q = await c.request('PUT', '/v0/topics/q', JSON.stringify({ type: 'queue', durability: 'disk' }));
  if (q.status !== 201 && q.status !== 200) throw new Error(`PUT q: ${q.status}`);
  const job = JSON.stringify({ data: { job: 'x'.repeat(100) } });
  for (let left = jobs; left > 0; left -= 1000) {
    const r = await c.post('/v0/topics/q?return_seqs=false', `{"records":[${Array(Math.min(1000, left)).fill(job).join(',')}]}`);
    if (r.status >= 300) throw new Error(`fill q: ${r.status} ${r.body.toString().slice(0, 200)}`);
  }
  return c;
}

/** One worker: claim 1, ack it with its lease id, `n` times; claim and ack latencies (ms). */
async function claimAckPairs(c: RawHttpConn, n: number): Promise<{ claim: Float64Array; ack: Float64Array }> {
  const claim = new Float64Array(n);
  const ack = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const r = await c.post('/v0/topics/q/claim', '{"node":"w1","max":1}');
    const job = (JSON.parse(r.body.toString()) as { claimed?: { $seq: number; lease_id: string }[] }).claimed?.[0];
    if (r.status !== 200 || !job) throw new Error(`claim: ${r.status} ${r.body.toString().slice(0, 200)}`);
    const a = await c.post('/v0/topics/q/ack', JSON.stringify({ node: 'w1', seqs: [job.$seq], lease_ids: [job.lease_id] }));
    if (a.status !== 200 || (JSON.parse(a.body.toString()) as { acked: number }).acked !== 1)
      throw new Error(`ack: ${a.status} ${a.body.toString().slice(0, 200)}`);
    claim[i] = Number(r.ns) / 1e6;
    ack[i] = Number(a.ns) / 1e6;
  }
  return { claim: claim.sort(), ack: ack.sort() };
}

/** p50 and p99 in ms of `n` requests of one kind, after a warm-up. */
async function ladderRun(c: RawHttpConn, k: Kind, n: number): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 300; i++) await c.request(k.method, k.path, k.body);
  const ts = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const r = await c.request(k.method, k.path, k.body);
    if (r.status >= 300) throw new Error(`${k.name}: ${r.status} ${r.body.toString().slice(0, 200)}`);
    ts[i] = Number(r.ns) / 1e6;
  }
  ts.sort();
  return { p50: ts[n >> 1]!, p99: ts[Math.floor(n * 0.99)]! };
}

interface Threads {
  main?: number;
  workers: (number | undefined)[];
  wal?: number;
}

async function debugStages(
  c: RawHttpConn,
): Promise<{ stages: Record<string, Record<string, { n: number; p50_us: number; p99_us: number }>>; thread_cpu_us: Threads }> {
  const r = await c.request('GET', '/v0/debug/stages');
  return JSON.parse(r.body.toString());
}

/** Long-polls on topic w woken by an append on a second connection, one at a time. */
async function longPolls(srv: ChildServer, c: RawHttpConn, n: number): Promise<void> {
  const writer = new RawHttpConn(srv.port);
  try {
    let head = 0;
    for (let i = 0; i < n; i++) {
      const parked = c.post('/v0/topics/w/diff', JSON.stringify({ from_seq: head, wait_ms: 5000 }));
      await new Promise((r) => setTimeout(r, 1)); // let it park
      await writer.post('/v0/topics/w', '{"records":[{"data":1}]}');
      const r = await parked;
      head = (JSON.parse(r.body.toString()) as { next_from_seq: number }).next_from_seq;
    }
  } finally {
    writer.close();
  }
}

export async function stages(): Promise<WorkloadResult> {
  const n = envNumber('BENCH_STAGES_N', 3000);
  const rows: Row[] = [];
  const ladder: Record<string, { p50: number; p99: number }> = {};
  const plain = await startSpool({ label: 'stages' });
  const jobs = QUEUE_WARMUP + n;
  try {
    const c = await setup(plain, jobs);
    for (const k of KINDS) {
      log(`stages: ladder ${k.name}`);
      ladder[k.name] = await ladderRun(c, k, n);
    }
    log('stages: ladder claim 1 + ack, disk queue');
    await claimAckPairs(c, QUEUE_WARMUP);
    const q = await claimAckPairs(c, n);
    for (const [name, ts] of [
      ['claim1', q.claim],
      ['ack1', q.ack],
    ] as const)
      ladder[name] = { p50: ts[n >> 1]!, p99: ts[Math.floor(n * 0.99)]! };
    c.close();
  } finally {
    await plain.close();
  }
  const us = (ms: number) => Math.round(ms * 1000);
  const d = (a: string, b: string) => us(ladder[a]!.p50 - ladder[b]!.p50);
  const targets = {
    claim1_p50_us: { got: us(ladder.claim1!.p50), target: us(CLAIM_P50_TARGET_MS) },
    state_over_health_us: { got: d('state', 'health'), target: 60 },
    diff_over_state_us: { got: d('diff1', 'state'), target: 40 },
    memory_over_state_us: { got: d('append_memory', 'state'), target: 60 },
    disk_over_memory_us: { got: d('append_disk', 'append_memory'), target: 50 },
  };
  for (const k of [...KINDS.map((x) => x.name), 'claim1', 'ack1'])
    rows.push({
      name: `stages ${k} 1c`,
      recordsPerSec: null,
      p50Ms: round(ladder[k]!.p50, 3),
      p99Ms: round(ladder[k]!.p99, 3),
      peakRssMB: null,
    });
  rows[rows.length - 2]!.notes =
    `claim p50 target ≤ ${CLAIM_P50_TARGET_MS} ms: ${ladder.claim1!.p50 <= CLAIM_P50_TARGET_MS ? 'met' : '**MISSED**'} (disk queue, max 1)`;

  // The stage table, on a server with the stage clock on.
  const timed = await startSpool({ label: 'stages-clock', env: { SERVICE_STAGE_CLOCK: '1' } });
  const table: Record<string, unknown> = {};
  try {
    const c = await setup(timed, jobs);
    const cpu: Record<string, Record<string, number>> = {};
    const measure = async (name: string, run: () => Promise<void>, count: number) => {
      await c.request('DELETE', '/v0/debug/stages');
      const before = (await debugStages(c)).thread_cpu_us;
      await run();
      const after = await debugStages(c);
      const per = (a?: number, b?: number) => (a === undefined || b === undefined ? NaN : round((a - b) / count, 1)!);
      cpu[name] = {
        main: per(after.thread_cpu_us.main, before.main),
        worker: per(after.thread_cpu_us.workers[0], before.workers[0]),
        wal: per(after.thread_cpu_us.wal, before.wal),
      };
      table[name] = { stages: after.stages, cpu_us_per_request: cpu[name] };
    };
    for (const k of KINDS.filter((x) => x.name !== 'health')) {
      log(`stages: stage clock ${k.name}`);
      for (let i = 0; i < 300; i++) await c.request(k.method, k.path, k.body);
      await measure(
        k.name,
        async () => {
          for (let i = 0; i < n; i++) await c.request(k.method, k.path, k.body);
        },
        n,
      );
    }
    log('stages: stage clock claim 1 + ack (CPU per pair)');
    await claimAckPairs(c, QUEUE_WARMUP);
    await measure('claim_ack', async () => void (await claimAckPairs(c, n)), n);
    log('stages: stage clock long-poll wake');
    const polls = Math.min(n, 1000);
    await measure('longpoll_wake', () => longPolls(timed, c, polls), polls);
    c.close();
    printTable(table);
  } finally {
    await timed.close();
  }
  const ok = Object.values(targets).every((t) => t.got <= t.target);
  return {
    workload: 'stages',
    rows,
    summary: {
      ladder_p50_ms: Object.fromEntries(Object.entries(ladder).map(([k, v]) => [k, round(v.p50, 3)])),
      targets,
      stage_table: table,
    },
    ok,
  };
}

function printTable(table: Record<string, unknown>): void {
  const lines: string[] = ['', 'stage table (µs: p50 / p99), stage clock on:'];
  for (const [name, v] of Object.entries(table)) {
    const { stages, cpu_us_per_request: cpu } = v as {
      stages: Record<string, Record<string, { p50_us: number; p99_us: number }>>;
      cpu_us_per_request: Record<string, number>;
    };
    lines.push(`${name}: CPU per request main ${cpu.main} µs, worker ${cpu.worker} µs, WAL ${cpu.wal} µs`);
    for (const [kind, st] of Object.entries(stages)) {
      lines.push(`  ${kind}`);
      for (const [stage, s] of Object.entries(st)) lines.push(`    ${stage.padEnd(11)} ${String(s.p50_us).padStart(8)} / ${s.p99_us}`);
    }
  }
  process.stderr.write(`${lines.join('\n')}\n`);
}
