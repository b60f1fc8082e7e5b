// Disk space given back without being asked (docs/ARCHITECTURE.md "Compaction", "Retention"), on a
// real server: a `ttl_ms` topic that is only written, never read, holds about one TTL window of
// records while writes go on and nothing once it is quiet; a topic whose records were all
// deleted, and a queue whose jobs were all acked, give back their active segment too (it used
// to stay, up to a whole segment file, for ever). Sizes hold across a SIGKILL and a restart.
// With the default packs, a topic's dead packed first segment gives its pack file back on a
// server that then stays quiet; and a compaction that failed on a full disk is tried again once
// space returns, with no request to prompt it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { client, killServersAfterFile, startServer, type Server } from '../helpers/server.js';
import { fill, tmpfsServer, tmpfsSkip } from '../helpers/tmpfs.js';

killServersAfterFile();

const MiB = 1 << 20;
const ENV = {
  SERVICE_WORKERS: '1',
  SERVICE_SEGMENT_BYTES: String(MiB),
  SERVICE_PACK_BYTES: '0',
  SERVICE_CHECKPOINT_MS: '1000',
  SERVICE_WAL_FILE_BYTES: String(MiB),
  SERVICE_TOPIC_SLEEP_MS: '500',
};
const PAD = 'p'.repeat(1000);

/** Bytes under the data dir's topics/ (segment files), or under `sub`. */
function segmentBytes(srv: Server, sub = 'topics', root = srv.dataDir): number {
  const dir = path.join(root, sub);
  if (!fs.existsSync(dir)) return 0;
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += fs.statSync(path.join(e.parentPath, e.name), { throwIfNoEntry: false })?.size ?? 0;
  }
  return n;
}

async function waitFor(what: string, ms: number, ok: () => boolean | Promise<boolean>): Promise<void> {
  const t0 = Date.now();
  while (!(await ok())) {
    if (Date.now() - t0 > ms) assert.fail(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const batch = (n: number, from = 0) => ({ records: Array.from({ length: n }, (_, i) => ({ data: { i: from + i, pad: PAD } })) });

test('a ttl topic only written holds about one TTL window, and nothing once quiet', async () => {
  const srv = await startServer({ env: ENV });
  const c = client(srv.url);
  assert.equal((await c.put('/v0/topics/t', { ttl_ms: 1000 })).status, 201);
  // ~6 MB over ~6 s: 1 MB a second, never read (appends alone must expire what is past its TTL).
  let peak = 0;
  for (let s = 0; s < 12; s++) {
    assert.equal((await c.post('/v0/topics/t', batch(500, s * 500))).status, 200);
    await new Promise((r) => setTimeout(r, 500));
    peak = Math.max(peak, segmentBytes(srv));
  }
  assert.ok(peak < 4.5 * MiB, `at most a TTL window plus segments in flight: peak ${peak}`);
  // Quiet, unread: the rest expires and goes.
  await waitFor('expired segments reclaimed', 20_000, () => segmentBytes(srv) < 64 * 1024);
  await srv.kill();
  const again = await startServer({ env: ENV, dataDir: srv.dataDir });
  assert.ok(segmentBytes(again) < 64 * 1024, `after a restart: ${segmentBytes(again)}`);
  const st = (await client(again.url).get('/v0/topics/t')).body as { count: number };
  assert.equal(st.count, 0);
  assert.equal(await again.stop(), 0);
});

test('a topic with every record deleted, and a queue with every job acked, give back their active segment', async () => {
  const srv = await startServer({ env: ENV });
  const c = client(srv.url);
  assert.equal((await c.put('/v0/topics/all', {})).status, 201);
  assert.equal((await c.put('/v0/topics/q', { type: 'queue' })).status, 201);
  for (let b = 0; b < 3; b++) {
    assert.equal((await c.post('/v0/topics/all', batch(500, b * 500))).status, 200);
    assert.equal((await c.post('/v0/topics/q', batch(500, b * 500))).status, 200);
  }
  assert.equal((await c.post('/v0/topics/all/delete', { before_seq: 1_000_000 })).status, 200);
  for (;;) {
    const got = (await c.post('/v0/topics/q/claim', { node: 'w', max: 1000 })).body as { claimed: { $seq: number }[] };
    if (got.claimed.length === 0) break;
    const seqs = got.claimed.map((j) => j.$seq);
    assert.equal(((await c.post('/v0/topics/q/ack', { node: 'w', seqs })).body as { acked: number }).acked, seqs.length);
  }
  assert.ok(segmentBytes(srv) > 2 * MiB, `written: ${segmentBytes(srv)}`);
  await waitFor('dead segments reclaimed', 20_000, () => segmentBytes(srv) < 64 * 1024);
  await srv.kill();
  const again = await startServer({ env: ENV, dataDir: srv.dataDir });
  assert.ok(segmentBytes(again) < 64 * 1024, `after a restart: ${segmentBytes(again)}`);
  const a2 = client(again.url);
  for (const t of ['all', 'q']) assert.equal(((await a2.get(`/v0/topics/${t}`)).body as { count: number }).count, 0, t);
  // Both go on taking records, from past the old head.
  assert.equal((await a2.post('/v0/topics/all', batch(1))).status, 200);
  assert.equal((await a2.post('/v0/topics/q', batch(1))).status, 200);
  assert.equal(await again.stop(), 0);
});

test('a dead packed first segment gives its pack file back on a server that stays quiet', async () => {
  const env: Record<string, string> = { ...ENV, SERVICE_PACK_BYTES: String(MiB) };
  const srv = await startServer({ env });
  const c = client(srv.url);
  assert.equal((await c.put('/v0/topics/p', {})).status, 201);
  assert.equal((await c.post('/v0/topics/p', batch(500))).status, 200); // ~0.5 MB, in its packed segment
  await waitFor('packed', 10_000, () => segmentBytes(srv, 'packs') > 400 * 1024);
  assert.equal((await c.post('/v0/topics/p/delete', { before_seq: 1_000_000 })).status, 200);
  // No request from here on: the checkpoints that release the segment and unlink its pack run anyway.
  await waitFor('dead pack unlinked', 20_000, () => segmentBytes(srv, 'packs') < 64 * 1024);
  assert.equal(await srv.stop(), 0);
});

test('a compaction that failed on a full disk is tried again once space returns', { skip: tmpfsSkip }, async () => {
  const disk = await tmpfsServer(24 * MiB, ENV);
  const srv = await disk.start();
  const c = client(srv.url);
  assert.equal((await c.put('/v0/topics/cmp', {})).status, 201);
  // 3 MB in 1 MiB segments, tagged t0..t9 in turn.
  for (let b = 0; b < 6; b++) {
    const records = Array.from({ length: 500 }, (_, i) => ({ data: { i, pad: PAD }, tag: `t${i % 10}` }));
    assert.equal((await c.post('/v0/topics/cmp', { records })).status, 200);
  }
  await new Promise((r) => setTimeout(r, 1500)); // segment writes and a checkpoint settle
  const filler = fill(disk.inside, 'filler');
  // Seven tenths die: every sealed segment is worth a copy, which cannot be written.
  for (let t = 0; t < 7; t++) assert.equal((await c.post('/v0/topics/cmp/delete', { match: ['tag', 'Eq', `t${t}`] })).status, 200);
  const before = segmentBytes(srv, 'topics', disk.inside('data'));
  await new Promise((r) => setTimeout(r, 3000));
  assert.ok(segmentBytes(srv, 'topics', disk.inside('data')) > 0.9 * before, 'nothing compacted on the full disk');
  fs.rmSync(filler);
  // No request from here on.
  await waitFor('compacted once space returned', 20_000, () => segmentBytes(srv, 'topics', disk.inside('data')) < 0.6 * before);
  const r = await c.post('/v0/topics/cmp/diff', { from_seq: 0, limit: 1000 });
  assert.equal(r.body.records.length, 900);
  assert.equal(await srv.stop(), 0);
});
