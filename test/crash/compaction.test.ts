// Compaction through HTTP on a real server (docs/ARCHITECTURE.md "Compaction"): a queue whose
// head job is held by a long lease while everything behind it is claimed and acked, and a log
// whose delete by tag leaves one old record, give their space back (disk use outside the WAL at
// most twice the live bytes, snapshots aside) within two checkpoint intervals, with the default
// pack settings (the head job and the first batch sit in the topic's packed first segment, which
// moves to an own file, and its pack file goes) and with packs off; the record left reads the
// same before and after, cold, and after a SIGKILL and a restart on the same data dir;
// /v0/metrics shows what was reclaimed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, client, killServersAfterFile, type Server } from '../helpers/server.js';

killServersAfterFile();

const CHECKPOINT_MS = 2000;
const ENV = {
  SERVICE_WORKERS: '1',
  SERVICE_SEGMENT_BYTES: String(1 << 20),
  SERVICE_CHECKPOINT_MS: String(CHECKPOINT_MS),
  SERVICE_WAL_FILE_BYTES: String(1 << 20),
  // Every read after the writes is a cold read of the segment files.
  SERVICE_SEGMENT_CACHE_BYTES: '0',
};
const JOB = 'j'.repeat(1000);
const BATCHES = 20;
const PER_BATCH = 1000;

/**
 * Bytes of the files under `dir` (recursively), and of those under its `wal/`, in one walk. Of
 * the snapshots only the newest counts: the one before it is kept on purpose as the fallback
 * (docs/ARCHITECTURE.md "Checkpoints and recovery") and goes at the next checkpoint, which a
 * quiet server may not take for a long time; it holds the queue's state from before the acks.
 */
function du(dir: string, into = { data: 0, wal: 0 }, inWal = false): { data: number; wal: number } {
  if (!fs.existsSync(dir)) return into;
  const snapshots = fs
    .readdirSync(dir)
    .filter((n) => /^snapshot-.*\.snap$/.test(n))
    .sort();
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (snapshots.length > 1 && e.name !== snapshots.at(-1) && snapshots.includes(e.name)) continue;
    if (e.isDirectory()) du(p, into, inWal || e.name === 'wal');
    else {
      // A file unlinked between the listing and the stat (compaction at work) counts as gone.
      const size = fs.statSync(p, { throwIfNoEntry: false })?.size ?? 0;
      if (inWal) into.wal += size;
      else into.data += size;
    }
  }
  return into;
}

/**
 * Disk use outside the WAL (segments, packs, snapshots) and the WAL's files, from one walk (two
 * walks let a WAL file made between them count against the rest).
 */
function diskUse(srv: Server): { data: number; wal: number } {
  return du(srv.dataDir);
}

async function waitFor(what: string, ms: number, ok: () => Promise<boolean>): Promise<number> {
  const t0 = Date.now();
  while (!(await ok())) {
    if (Date.now() - t0 > ms) assert.fail(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return Date.now() - t0;
}

/**
 * Waits until disk use outside the WAL is at most twice the live bytes (and 2 KiB of snapshots);
 * returns how long it took. Two checkpoint intervals, and a second for the checkpoints' own time
 * and the copy: compaction looks every second while records die, so its copies are ready for the
 * next checkpoint, which swaps them in; a pack the moved segment leaves dead goes at the one after.
 */
async function untilCompacted(srv: Server, c: ReturnType<typeof client>, topic: string): Promise<number> {
  // Asked once: no request meanwhile (a quiet server skips timed checkpoints it has nothing for;
  // compaction's own work must keep them coming).
  const t = (await c.get(`/v0/topics/${topic}?touch=false`)).body as { bytes: number };
  // Bounded by twice that: on a loaded 2-core machine (the suite runs files in parallel) the
  // paced copy and the checkpoints' fsyncs take longer; the figure printed is the real one.
  return waitFor('space given back', 2 * (2 * CHECKPOINT_MS + 1000), async () => diskUse(srv).data <= 2 * t.bytes + 2048);
}

async function readAll(c: ReturnType<typeof client>, topic: string): Promise<{ seq: number; data: unknown }[]> {
  const r = await c.post(`/v0/topics/${topic}/diff`, { cursor: 0, limit: 1000 });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return (r.body as { records: { $seq: number; data: unknown }[] }).records.map((x) => ({ seq: x.$seq, data: x.data }));
}

for (const packs of ['default', 'off'] as const) {
  test(`a queue whose head job is held gives back the space of the 20,000 acked behind it (packs ${packs})`, async () => {
    await stuckHead(packs === 'off' ? { ...ENV, SERVICE_PACK_BYTES: '0' } : ENV);
  });
}

async function stuckHead(env: Record<string, string>): Promise<void> {
  let srv = await startServer({ env });
  let c = client(srv.url);
  assert.equal((await c.put('/v0/topics/q', { type: 'queue' })).status, 201);
  assert.equal((await c.post('/v0/topics/q', { records: [{ data: { head: JOB } }] })).status, 200);
  const held = await c.post('/v0/topics/q/claim', { node: 'stuck', max: 1, lease_ms: 86_400_000 });
  assert.equal((held.body as { count: number }).count, 1);
  for (let b = 0; b < BATCHES; b++) {
    const records = Array.from({ length: PER_BATCH }, (_, i) => ({ data: { n: b * PER_BATCH + i, pad: JOB } }));
    assert.equal((await c.post('/v0/topics/q', { records })).status, 200);
    const claimed = (await c.post('/v0/topics/q/claim', { node: 'w', max: PER_BATCH, lease_ms: 60_000 })).body as {
      claimed: { $seq: number }[];
    };
    const ack = await c.post('/v0/topics/q/ack', { node: 'w', seqs: claimed.claimed.map((j) => j.$seq) });
    assert.equal((ack.body as { acked: number }).acked, PER_BATCH);
  }
  // Compaction may have begun already (checkpoints run meanwhile): most is still there, though.
  const before = diskUse(srv);
  const tookMs = await untilCompacted(srv, c, 'q');
  const after = diskUse(srv);
  process.stdout.write(
    `# stuck-head queue (pack bytes ${env.SERVICE_PACK_BYTES ?? 'default'}): ${before.data} bytes outside the WAL before, ${after.data} after (${tookMs} ms), WAL ${after.wal}\n`,
  );
  assert.deepEqual(await readAll(c, 'q'), [{ seq: 1, data: { head: JOB } }]);
  const m = (await c.get('/v0/metrics', { accept: 'application/json' })).body as {
    compaction: { bytes_reclaimed: number; segments_rewritten: number; live_ratio: number };
  };
  assert.ok(m.compaction.bytes_reclaimed > BATCHES * PER_BATCH * 900, JSON.stringify(m.compaction));
  assert.ok(m.compaction.segments_rewritten >= BATCHES, JSON.stringify(m.compaction));
  const prom = (await c.get('/v0/metrics', { accept: 'text/plain' })).text;
  assert.match(prom, /# TYPE spool_compaction_bytes_reclaimed_total counter\nspool_compaction_bytes_reclaimed_total \d{8}/);
  assert.match(prom, /# TYPE spool_compaction_segments_rewritten_total counter/);
  // SIGKILL and a restart on the same data dir: the held job, its lease and the seqs stay.
  await srv.kill();
  srv = await startServer({ env, dataDir: srv.dataDir });
  c = client(srv.url);
  assert.deepEqual(await readAll(c, 'q'), [{ seq: 1, data: { head: JOB } }]);
  const t = (await c.get('/v0/topics/q')).body as { count: number; earliest_seq: number; head_seq: number; queue: { in_flight: number } };
  assert.deepEqual([t.count, t.earliest_seq, t.queue.in_flight], [1, 1, 1]);
  // A SIGKILL pads the seq reservation (docs/ARCHITECTURE.md "Seq reservations"): no seq is reused.
  assert.ok(t.head_seq >= BATCHES * PER_BATCH + 1, `head ${t.head_seq}`);
  const next = await c.post('/v0/topics/q', { records: [{ data: 'after' }] });
  assert.ok((next.body as { seqs: number[] }).seqs[0]! > t.head_seq);
  assert.ok(diskUse(srv).data < 64 * 1024, `still small after the restart: ${diskUse(srv).data}`);
  await srv.stop();
}

test('a log whose delete by tag leaves one old record gives back the space of the rest', async () => {
  let srv = await startServer({ env: ENV });
  let c = client(srv.url);
  assert.equal((await c.put('/v0/topics/log', {})).status, 201);
  // The kept record sits in a batch with records the delete takes: the batch is split.
  assert.equal(
    (
      await c.post('/v0/topics/log', {
        records: [
          { data: 'old-a', tag: 'x' },
          { data: { keep: JOB }, tag: 'keep' },
          { data: 'old-b', tag: 'x' },
        ],
      })
    ).status,
    200,
  );
  for (let b = 0; b < BATCHES; b++) {
    const records = Array.from({ length: PER_BATCH }, (_, i) => ({ data: { n: i, pad: JOB }, tag: `x` }));
    assert.equal((await c.post('/v0/topics/log', { records })).status, 200);
  }
  const del = await c.post('/v0/topics/log/delete', { match: 'x' });
  assert.equal((del.body as { deleted: number }).deleted, BATCHES * PER_BATCH + 2);
  const before = diskUse(srv);
  const tookMs = await untilCompacted(srv, c, 'log');
  process.stdout.write(`# delete by tag: ${before.data} bytes outside the WAL before, ${diskUse(srv).data} after (${tookMs} ms)\n`);
  assert.deepEqual(await readAll(c, 'log'), [{ seq: 2, data: { keep: JOB } }]);
  await srv.kill();
  srv = await startServer({ env: ENV, dataDir: srv.dataDir });
  c = client(srv.url);
  assert.deepEqual(await readAll(c, 'log'), [{ seq: 2, data: { keep: JOB } }]);
  const t = (await c.get('/v0/topics/log')).body as { count: number; earliest_seq: number; bytes: number };
  assert.deepEqual([t.count, t.earliest_seq], [1, 2]);
  await srv.stop();
});
