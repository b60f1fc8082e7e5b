// Workload append-batch: 16 concurrent writers, each POSTing batches of 100 records (~256 B of
// `data` each) to one `disk` topic for ~5 s (BENCH_SECONDS). Reports records/s and per-request
// p50/p99. Target: >= 200k records/s. Then the same load spread over BENCH_SPREAD_TOPICS (5,000;
// 0 = skip) `disk` topics made beforehand, each request to the next topic in turn, in the same
// server: many-topics issue target >= 0.9x the single-topic rate.
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
  type Row,
  type WorkloadResult,
} from './lib.js';

const WRITERS = 16;
const BATCH = 100;

export async function appendBatch(): Promise<WorkloadResult> {
  const srv = await startSpool({ label: 'append-batch' });
  const client = new HttpClient(srv.port, WRITERS);
  try {
    const topic = 'bench-batch';
    await createTopic(client, topic, { durability: 'disk' });
    const bodies = Array.from({ length: WRITERS }, (_, w) => appendBody(BATCH, w * BATCH));
    const common = { client, concurrency: WRITERS, path: `/v0/topics/${topic}`, bodies, recordsPerRequest: BATCH, server: srv };
    const warm = await runLoad({ ...common, durationMs: warmupMs() });
    srv.rss.reset();
    const cpu = new CpuSplitMeter(srv.pid).start();
    const durationMs = benchMs(5);
    log(`append-batch: ${WRITERS} writers x ${BATCH} records, ${durationMs} ms`);
    const r = await runLoad({ ...common, durationMs });
    const split = cpu.stop();
    const peak = srv.rss.peakBytes();
    srv.assertAlive();
    // Sanity: every acked record is in the topic.
    const state = await client.json('GET', `/v0/topics/${topic}`);
    const expected = warm.records + r.records;
    const countOk = state.count === undefined || state.count === expected;
    const notes =
      `${WRITERS}×${BATCH}/req, ${round(r.reqPerSec, 0)} req/s; ${cpuNote(split)}` +
      (r.errors ? `; ${r.errors} non-2xx` : '') +
      (countOk ? '' : `; COUNT MISMATCH ${state.count} != ${expected}`);
    const row = loadRow('append-batch (disk, 16 writers × 100)', r, peak, notes, {
      server_cpu_pct: round(split.server, 0),
      other_cpu_pct: round(split.other, 0),
      topic_count: state.count,
      expected_count: expected,
    });
    const spread = await spreadRow(client, bodies, srv, r.recordsPerSec);
    const ok = r.errors === 0 && countOk && (spread?.ok ?? true);
    return {
      workload: 'append-batch',
      ok,
      rows: spread ? [row, spread.row] : [row],
      ...(countOk ? {} : { error: `topic count ${state.count} != acked ${expected}` }),
    };
  } finally {
    client.close();
    await srv.close();
  }
}

/** The same load spread over many topics (made first, not timed), next to the single-topic rate. */
async function spreadRow(
  client: HttpClient,
  bodies: Buffer[],
  srv: Awaited<ReturnType<typeof startSpool>>,
  singleRate: number,
): Promise<{ row: Row; ok: boolean } | undefined> {
  const n = Math.floor(envNumber('BENCH_SPREAD_TOPICS', 5000));
  if (n <= 0) return undefined;
  const name = (i: number) => `/v0/topics/bench-spread-${i % n}`;
  log(`append-batch: making ${n} topics for the spread run`);
  let next = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < n) await createTopic(client, `bench-spread-${next++}`, { durability: 'disk' });
    }),
  );
  const common = { client, concurrency: WRITERS, path: name(0), pathFor: name, bodies, recordsPerRequest: BATCH, server: srv };
  await runLoad({ ...common, durationMs: warmupMs() });
  srv.rss.reset();
  const cpu = new CpuSplitMeter(srv.pid).start();
  const r = await runLoad({ ...common, durationMs: benchMs(5) });
  const split = cpu.stop();
  srv.assertAlive();
  const ratio = r.recordsPerSec / singleRate;
  const notes =
    `spread over ${n} topics: ${round(ratio, 2)}× the single-topic rate (target ≥ 0.9×); ${cpuNote(split)}` +
    (r.errors ? `; ${r.errors} non-2xx` : '');
  return {
    row: loadRow(`append-batch spread over ${n} topics (disk, 16 writers × 100)`, r, srv.rss.peakBytes(), notes, {
      vs_single: round(ratio, 3),
      server_cpu_pct: round(split.server, 0),
    }),
    ok: r.errors === 0,
  };
}
