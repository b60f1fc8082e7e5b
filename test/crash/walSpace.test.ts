// The WAL's space on a real small volume (docs/ARCHITECTURE.md "Storage faults"), over HTTP:
// - a restart after the disk filled up is writable again within seconds: WAL files the newest
//   checkpoint covers give way to the new run's files (they used to hold the space for good);
// - a fresh server on a volume too small for two WAL files of the configured size starts with
//   smaller ones, says so, and takes writes (it refused every write before);
// - while the reserve cannot be made, /v0/ready says how much the WAL needs and how much is free;
// - recovery with no usable snapshot and a WAL whose first files are gone refuses to start
//   instead of rebuilding a part of the data.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { CLI, client, killServersAfterFile, startServer, type Server } from '../helpers/server.js';
import { appendUntilFull, fill, tmpfsServer, tmpfsSkip } from '../helpers/tmpfs.js';
import { metaDir, walDir } from '../../src/format/layout.js';
import { listWalFiles } from '../../src/wal/files.js';
import { nodeFs } from '../../src/storage/fs.js';

killServersAfterFile();

const MiB = 1024 * 1024;
const RECORD_BYTES = 4000;

function rec(i: number) {
  return { data: { i, pad: 'p'.repeat(RECORD_BYTES) } };
}

/** Appends until one is accepted, for at most `ms`; returns how long it took. */
async function writableWithin(c: ReturnType<typeof client>, topic: string, acked: number[], ms: number, what: string): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const r = await c.post(`/v0/topics/${topic}`, { records: [rec(acked.length)] });
    if (r.status === 200) {
      acked.push(acked.length);
      return Date.now() - t0;
    }
    assert.equal(r.status, 429, `${what}: ${JSON.stringify(r.body)}`);
    assert.ok(Date.now() - t0 < ms, `${what}: still refused after ${ms} ms (ready: ${JSON.stringify((await c.get('/v0/ready')).body)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function assertAcked(c: ReturnType<typeof client>, topic: string, acked: number[], what: string): Promise<void> {
  const got: number[] = [];
  for (let from = 0; ;) {
    const d = await c.post(`/v0/topics/${topic}/diff`, { from_seq: from, limit: 1000 });
    assert.equal(d.status, 200, `${what}: diff ${JSON.stringify(d.body)}`);
    for (const r of d.body.records) got.push(r.data.i);
    if (d.body.caught_up) break;
    from = d.body.next_from_seq;
  }
  assert.deepEqual(got, acked, `${what}: exactly the acknowledged records`);
}

test(
  'a restart after the disk filled up takes writes again within seconds (covered WAL files give way)',
  { skip: tmpfsSkip, timeout: 180_000 },
  async () => {
    // The shape of the report: a volume of five WAL files, checkpoints every 2 s.
    const { inside, start } = await tmpfsServer(40 * MiB, { SERVICE_WAL_FILE_BYTES: String(4 * MiB), SERVICE_CHECKPOINT_MS: '2000' });
    let srv: Server = await start();
    let c = client(srv.url);
    assert.equal((await c.put('/v0/topics/t', { durability: 'disk' })).status, 201);
    const acked: number[] = [];

    // Full with a filler, then space back, then full again by appends alone.
    const filler = fill(inside, 'filler');
    await appendUntilFull(c, 't', acked, 'full by a filler', rec);
    const ready = await c.get('/v0/ready');
    assert.equal(ready.body.storage, 'disk_full');
    // Whichever ran out first (the WAL's next file, or its frames' segment writes), ready and the
    // log say so, with the space a WAL file needs and what is free.
    const disk = ready.body.disk;
    assert.ok(['wal_file', 'segment_writes'].includes(disk.waits_for), JSON.stringify(ready.body));
    assert.equal(disk.wal_file_bytes, 4 * MiB, `ready says what a WAL file needs: ${JSON.stringify(ready.body)}`);
    assert.ok(disk.free_bytes < 4 * MiB, `and what is free: ${JSON.stringify(ready.body)}`);
    if (disk.waits_for === 'wal_file')
      assert.match(
        srv.stderr(),
        /cannot (pre-allocate|create) WAL file \d+: needs 4\.0 MiB for a WAL file, \d+\.\d MiB free/,
        'the log says the shortfall',
      );
    else assert.match(srv.stderr(), /segment writes wait for space; writes are refused/, 'the log says segment writes wait');
    fs.unlinkSync(filler);
    await writableWithin(c, 't', acked, 5000, 'space returned');
    await appendUntilFull(c, 't', acked, 'full by appends', rec);

    // Clean restart, an append (refused or not), SIGKILL, restart: writable again within seconds.
    assert.equal(await srv.stop(), 0);
    srv = await start();
    c = client(srv.url);
    const r = await c.post('/v0/topics/t', { records: [rec(acked.length)] });
    if (r.status === 200) acked.push(acked.length);
    await srv.kill();
    srv = await start();
    c = client(srv.url);
    const tookMs = await writableWithin(c, 't', acked, 5000, 'after the SIGKILL restart');
    assert.equal((await c.get('/v0/ready')).body.storage, 'ok', `writable in ${tookMs} ms`);
    await assertAcked(c, 't', acked, 'after the restarts');
    assert.equal(await srv.stop(), 0);
  },
);

test(
  'a fresh server on a volume too small for two WAL files starts with smaller ones and takes writes',
  { skip: tmpfsSkip, timeout: 120_000 },
  async () => {
    // 12 MiB of volume, 8 MiB WAL files configured: the file and its reserve do not fit.
    const { start } = await tmpfsServer(12 * MiB, { SERVICE_WAL_FILE_BYTES: String(8 * MiB), SERVICE_CHECKPOINT_MS: '1000' });
    let srv = await start();
    let c = client(srv.url);
    assert.match(
      srv.stderr(),
      /only \d+\.\d MiB free in .*: WAL files of 1\.0 MiB this run instead of 8\.0 MiB \(SERVICE_WAL_FILE_BYTES\)/,
    );
    assert.equal((await c.get('/v0/ready')).body.writable, true, 'an empty server on a small volume is writable');
    assert.equal((await c.put('/v0/topics/t', { durability: 'fsync' })).status, 201);
    const acked: number[] = [];
    // More than a WAL file's worth: rotations and checkpoints at the smaller size.
    for (let i = 0; i < 600; i++) {
      const r = await c.post('/v0/topics/t', { records: [rec(acked.length)] });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      acked.push(acked.length);
    }
    await srv.kill();
    srv = await start();
    c = client(srv.url);
    await assertAcked(c, 't', acked, 'after a SIGKILL restart on the small volume');
    await writableWithin(c, 't', acked, 5000, 'after the restart');
    assert.equal(await srv.stop(), 0);
  },
);

test('with no usable snapshot and the WAL start gone, recovery refuses to start instead of rebuilding a part', async () => {
  const srv = await startServer({ env: { SERVICE_WAL_FILE_BYTES: String(MiB), SERVICE_CHECKPOINT_MS: '500' } });
  const c = client(srv.url);
  assert.equal((await c.put('/v0/topics/t', {})).status, 201);
  // Enough to rotate past the first files; checkpoints then unlink them.
  for (let i = 0; i < 800; i++) assert.equal((await c.post('/v0/topics/t', { records: [rec(i)] })).status, 200);
  const deadline = Date.now() + 30_000;
  while ((listWalFiles(nodeFs, srv.dataDir)[0] ?? 1) === 1) {
    assert.ok(Date.now() < deadline, 'checkpoints unlinked the first WAL file');
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(await srv.stop(), 0);
  for (const n of fs.readdirSync(metaDir(srv.dataDir))) if (n.endsWith('.snap')) fs.unlinkSync(path.join(metaDir(srv.dataDir), n));
  const r = spawnSync(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, SERVICE_DATA_DIR: srv.dataDir, SERVICE_PORT: '0' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /recovery failed: \S+\/wal: no usable snapshot .* the WAL starts at file \d+/);
  assert.ok(fs.readdirSync(walDir(srv.dataDir)).length > 0, 'nothing was removed');
});
