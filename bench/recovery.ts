// Workload recovery: how fast a restart gets back to /v0/ready.
//  1. crash: append ~256 MiB of records (BENCH_RECOVERY_MB; batches of 1000 × 256 B) to a `disk`
//     topic with checkpoints off (SERVICE_CHECKPOINT_MS=3600000 and
//     SERVICE_CHECKPOINT_WAL_BYTES=0, else the 256 MiB WAL-size trigger would checkpoint anyway),
//     SIGKILL, restart on the same directory and time spawn -> GET /v0/ready 200. Everything
//     is WAL replay; reports MB/s of WAL replayed (WAL size = files in <dataDir>/wal).
//  2. clean: the same volume with the default checkpoint settings, SIGTERM (clean shutdown),
//     restart, time spawn -> ready.
// Both restarts check that the topic holds every acked record. The page cache is warm (the data
// was just written), so this is replay CPU cost more than disk speed.
// Targets: >= 150 MB/s replay; ready within 10 s for 1 GiB (BENCH_RECOVERY_MB=1024).
import path from 'node:path';
import {
  HttpClient,
  appendMany,
  createTopic,
  dirBytes,
  envNumber,
  log,
  removeDir,
  round,
  startSpool,
  tempDir,
  treeBytes,
  MB,
  type ChildServer,
  type Row,
  type WorkloadResult,
} from './lib.js';

const TOPIC = 'bench-recovery';
const RECORD_BYTES = 256;

async function load(srv: ChildServer, total: number): Promise<{ rate: number }> {
  const client = new HttpClient(srv.port, 4);
  try {
    await createTopic(client, TOPIC, { durability: 'disk' });
    const r = await appendMany({
      client,
      topic: TOPIC,
      total,
      batch: 1000,
      concurrency: 4,
      deadlineMs: 900_000,
      server: srv,
      onProgress: (d) => log(`recovery: loaded ${d}/${total}`),
    });
    return { rate: r.records / r.elapsedS };
  } finally {
    client.close();
  }
}

async function topicCount(srv: ChildServer): Promise<{ count: number | undefined; head: number }> {
  const c = new HttpClient(srv.port, 1);
  try {
    const s = await c.json('GET', `/v0/topics/${TOPIC}`);
    return { count: s.count, head: s.head_seq };
  } finally {
    c.close();
  }
}

async function scenario(kind: 'crash' | 'clean', total: number, emptyReadyS: number): Promise<Row> {
  const dir = tempDir(`spool-bench-recovery-${kind}-`);
  const env: Record<string, string> = kind === 'crash' ? { SERVICE_CHECKPOINT_MS: '3600000', SERVICE_CHECKPOINT_WAL_BYTES: '0' } : {};
  let srv: ChildServer | undefined;
  try {
    srv = await startSpool({ label: `recovery-${kind}`, dataDir: dir, env });
    log(`recovery (${kind}): appending ${total} records of ${RECORD_BYTES} B`);
    const { rate } = await load(srv, total);
    const before = await topicCount(srv);
    let stopInfo = '';
    if (kind === 'crash') {
      await srv.kill();
    } else {
      const t = await srv.terminate(60_000);
      stopInfo = `; SIGTERM shutdown ${(t.ms / 1000).toFixed(2)} s (exit ${t.code ?? t.signal})`;
      if (t.code !== 0)
        log(`recovery (clean): server exited with ${t.code ?? t.signal} after SIGTERM: ${srv.stderr().trim().slice(-2000)}`);
    }
    const walBytes = dirBytes(path.join(dir, 'wal'));
    const dataBytes = treeBytes(dir);
    log(`recovery (${kind}): stopped; WAL ${(walBytes / MB).toFixed(1)} MB, data dir ${(dataBytes / MB).toFixed(1)} MB; restarting`);
    srv = await startSpool({ label: `recovery-${kind}-restart`, dataDir: dir, env, readyTimeoutMs: 600_000 });
    const readyS = srv.readyMs / 1000;
    const peak = srv.rss.peakBytes();
    const after = await topicCount(srv);
    srv.assertAlive();
    const expected = before.count ?? total;
    if (after.count !== undefined && after.count !== expected) {
      throw new Error(
        `recovery (${kind}): topic count after restart ${after.count} != ${expected} before (head ${before.head} -> ${after.head})`,
      );
    }
    const mbps = walBytes / MB / readyS;
    // The same, less the time an empty data dir takes to get ready (process start, threads).
    const netMbps = readyS > emptyReadyS ? walBytes / MB / (readyS - emptyReadyS) : null;
    log(`recovery (${kind}): ready in ${readyS.toFixed(2)} s${kind === 'crash' ? ` = ${mbps.toFixed(0)} MB/s of WAL` : ''}`);
    const notes =
      kind === 'crash'
        ? `SIGKILL, no checkpoint: ${(walBytes / MB).toFixed(0)} MB WAL replayed, ready in ${readyS.toFixed(2)} s = **${mbps.toFixed(0)} MB/s** (${netMbps === null ? '–' : netMbps.toFixed(0)} MB/s less the ${emptyReadyS.toFixed(2)} s an empty dir takes)`
        : `SIGTERM + default checkpoints: ready in **${readyS.toFixed(2)} s** (WAL left ${(walBytes / MB).toFixed(0)} MB, data dir ${(dataBytes / MB).toFixed(0)} MB)${stopInfo}`;
    return {
      name: `recovery ${kind === 'crash' ? 'crash (WAL replay)' : 'clean restart'}`,
      recordsPerSec: round(expected / readyS, 0),
      p50Ms: null,
      p99Ms: null,
      peakRssMB: round(peak / MB, 1),
      notes: `${notes}; records/s = records recovered / ready time`,
      extra: {
        records: expected,
        wal_bytes: walBytes,
        data_dir_bytes: dataBytes,
        ready_s: round(readyS, 3),
        bind_s: round(srv.bindMs / 1000, 3),
        wal_mb_per_s: round(mbps, 1),
        wal_mb_per_s_less_empty_start: round(netMbps, 1),
        empty_dir_ready_s: round(emptyReadyS, 3),
        load_records_per_s: round(rate, 0),
        head_before: before.head,
        head_after: after.head,
        count_after: after.count,
        env,
      },
    };
  } finally {
    if (srv) await srv.close();
    removeDir(dir);
  }
}

export async function recovery(): Promise<WorkloadResult> {
  const mb = envNumber('BENCH_RECOVERY_MB', 256);
  const total = Math.max(1000, Math.round((mb * MB) / RECORD_BYTES));
  // Baseline: spawn -> ready on an empty data dir (node start, worker + WAL threads, recovery of nothing).
  const empty = await startSpool({ label: 'recovery-empty' });
  const emptyReadyS = empty.readyMs / 1000;
  await empty.close();
  log(`recovery: an empty data dir is ready in ${emptyReadyS.toFixed(2)} s`);
  const rows = [await scenario('crash', total, emptyReadyS), await scenario('clean', total, emptyReadyS)];
  return { workload: 'recovery', ok: true, rows, summary: { recovery_mb: mb, records: total, empty_dir_ready_s: round(emptyReadyS, 3) } };
}
