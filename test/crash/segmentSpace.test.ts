// A disk filled through segment writes gives back the WAL files its newest snapshot covers by
// itself (docs/ARCHITECTURE.md "Storage faults", "Giving space back"), for real: the server runs
// on a small tmpfs (test/helpers/tmpfs.ts) with 1 MiB WAL files. Once a checkpoint covers WAL
// files that are still kept, a filler takes every free byte and appends run until refused: the
// WAL still has its files, their segment writes wait for space. Checked over HTTP, the filler
// left in place: within seconds storage is "ok" again and writes go on, no restart (it used to
// stay "disk_full", waiting for segment writes, for good, while the covered WAL files held the
// space), and every acknowledged record is there, also after a SIGKILL restart. Needs root (mount, unshare, nsenter); skipped with a message elsewhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { client, killServersAfterFile, type Server } from '../helpers/server.js';
import { appendUntilFull, fill, tmpfsServer, tmpfsSkip } from '../helpers/tmpfs.js';
import { metaDir } from '../../src/format/layout.js';
import { listWalFiles } from '../../src/wal/files.js';
import { nodeFs } from '../../src/storage/fs.js';

killServersAfterFile();

const MiB = 1024 * 1024;
const RECORD_BYTES = 2000;

/** The WAL files wholly before the newest snapshot's cut (its name carries the cut). */
function coveredWalFiles(dataDir: string): number[] {
  const snaps = fs
    .readdirSync(metaDir(dataDir))
    .filter((n) => /^snapshot-\d+-\d+\.snap$/.test(n))
    .sort();
  const cutFileNo = Number(snaps.at(-1)?.split('-')[1] ?? 0);
  return listWalFiles(nodeFs, dataDir).filter((n) => n < cutFileNo);
}

function rec(i: number) {
  return { data: { i, pad: 'p'.repeat(RECORD_BYTES) } };
}

async function readAll(c: ReturnType<typeof client>): Promise<number[]> {
  const got: number[] = [];
  for (let from = 0; ;) {
    const d = await c.post('/v0/topics/ff/diff', { from_seq: from, limit: 1000 });
    assert.equal(d.status, 200, JSON.stringify(d.body));
    for (const r of d.body.records) got.push(r.data.i);
    if (d.body.caught_up) return got;
    from = d.body.next_from_seq;
  }
}

test(
  'a disk filled through segment writes frees the WAL files the newest snapshot covers and takes writes again, no restart',
  { skip: tmpfsSkip, timeout: 180_000 },
  async () => {
    const { inside, start } = await tmpfsServer(20 * MiB, { SERVICE_WAL_FILE_BYTES: String(MiB), SERVICE_CHECKPOINT_MS: '1000' });
    let srv: Server = await start();
    let c = client(srv.url);
    assert.equal((await c.put('/v0/topics/ff', { durability: 'fsync' })).status, 201);
    const acked: number[] = [];
    // A few WAL files' worth, until a checkpoint covers WAL files that are still kept (the
    // previous snapshot's margin).
    const t1 = Date.now();
    for (let n = 0; coveredWalFiles(inside('data')).length === 0; n++) {
      assert.ok(Date.now() - t1 < 30_000, 'a checkpoint covers kept WAL files');
      if (n < 2000) {
        const r = await c.post('/v0/topics/ff', { records: [rec(acked.length)] });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        acked.push(acked.length);
      } else await new Promise((res) => setTimeout(res, 100));
    }
    // Full now: the WAL still has its current file and its reserve, so what fills is the
    // appends' segment writes (waits_for segment_writes).
    fill(inside, 'filler');
    await appendUntilFull(c, 'ff', acked, 'full by segment writes', rec);

    // The filler stays: the server must find the space itself, in the WAL files the newest
    // snapshot covers, and take writes again, with no restart.
    const t0 = Date.now();
    let ready = (await c.get('/v0/ready')).body;
    while (ready.storage !== 'ok') {
      assert.ok(
        Date.now() - t0 < 20_000,
        `still ${JSON.stringify(ready)} after 20 s, holding WAL files ${coveredWalFiles(inside('data'))} (server log: ${srv.stderr().slice(-1500)})`,
      );
      await new Promise((r) => setTimeout(r, 250));
      ready = (await c.get('/v0/ready')).body;
    }
    let wrote = false;
    for (let k = 0; k < 100 && !wrote; k++) {
      const r = await c.post('/v0/topics/ff', { records: [rec(acked.length)] });
      if (r.status === 200) {
        acked.push(acked.length);
        wrote = true;
      } else await new Promise((res) => setTimeout(res, 100));
    }
    assert.ok(wrote, 'writes go on without a restart');
    assert.deepEqual(await readAll(c), acked, 'every acknowledged record');

    await srv.kill();
    srv = await start();
    c = client(srv.url);
    assert.deepEqual(await readAll(c), acked, 'every acknowledged record after a SIGKILL restart');
  },
);
