// Workload append-batch: 16 concurrent writers, each POSTing batches of 100 records (~256 B of
// `data` each) to one `disk` topic for ~5 s (BENCH_SECONDS). Reports records/s and per-request
// p50/p99. Target: >= 200k records/s.
import { CpuSplitMeter, cpuNote, HttpClient, appendBody, benchMs, createTopic, loadRow, log, round, runLoad, startSpool, warmupMs, type WorkloadResult } from './lib.js';

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
    const notes = `${WRITERS}×${BATCH}/req, ${round(r.reqPerSec, 0)} req/s; ${cpuNote(split)}` + (r.errors ? `; ${r.errors} non-2xx` : '') + (countOk ? '' : `; COUNT MISMATCH ${state.count} != ${expected}`);
    const row = loadRow('append-batch (disk, 16 writers × 100)', r, peak, notes, { server_cpu_pct: round(split.server, 0), other_cpu_pct: round(split.other, 0), topic_count: state.count, expected_count: expected });
    return { workload: 'append-batch', ok: r.errors === 0 && countOk, rows: [row], ...(countOk ? {} : { error: `topic count ${state.count} != acked ${expected}` }) };
  } finally {
    client.close();
    await srv.close();
  }
}
