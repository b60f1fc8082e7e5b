// Giving space back through the API on a volume spool filled itself (docs/ARCHITECTURE.md
// "Deleting on a full disk", docs/OPERATIONS.md "A full disk"), on a real small tmpfs:
// - appends fill the volume until writes answer 429 disk_space; a record delete and a topic
//   delete still answer 200, the deleted topic's files go, and writes resume with no restart;
// - SIGKILL while full, every byte spool held back as zeros taken by another file: the restart
//   comes up (its first WAL file made of the spare), refuses appends, deletes a topic (200),
//   then takes writes again; the delete and every acknowledged record of the kept topic survive
//   a further SIGKILL and restart.
// Needs root (mount, unshare, nsenter); skipped with a message elsewhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { client, killServersAfterFile, type Server } from '../helpers/server.js';
import { fill, tmpfsServer, tmpfsSkip, type TmpfsServer } from '../helpers/tmpfs.js';
import { walDir } from '../../src/format/layout.js';
import { FRAME_ALIGN, WAL_HEADER_BYTES } from '../../src/format/constants.js';
import { listWalFiles } from '../../src/wal/files.js';
import { nodeFs } from '../../src/storage/fs.js';

killServersAfterFile();

const MiB = 1024 * 1024;
const RECORD_BYTES = 4000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Client = ReturnType<typeof client>;

function rec(i: number) {
  return { data: { i, pad: 'p'.repeat(RECORD_BYTES) } };
}

function disk(): Promise<TmpfsServer> {
  return tmpfsServer(48 * MiB, {
    SERVICE_WAL_FILE_BYTES: String(4 * MiB),
    SERVICE_CHECKPOINT_MS: '1000',
    SERVICE_SEGMENT_BYTES: String(2 * MiB),
  });
}

function assertDiskFull(r: { status: number; body: any }, what: string): void {
  assert.equal(r.status, 429, `${what}: ${JSON.stringify(r.body)}`);
  assert.deepEqual(r.body.error.detail, { limit: 'disk_space' }, what);
}

/**
 * Fills the volume through the API alone: batches into `big`, single records into `keep` (their
 * indexes into `acked`), until appends answer 429 disk_space; then, while the server gives
 * space back on its own (segment writes catching up, checkpoints trimming the WAL), appends to
 * `keep` take it, until two rounds in a row find the server full.
 */
async function fillThroughApi(c: Client, acked: number[]): Promise<void> {
  let big = 0;
  const appendKeep = async (): Promise<boolean> => {
    const r = await c.post('/v0/topics/keep', { records: [rec(acked.length)] });
    if (r.status !== 200) return (assertDiskFull(r, 'append to keep'), false);
    acked.push(acked.length);
    return true;
  };
  for (let i = 0; ; i++) {
    assert.ok(i < 20_000, 'the volume filled');
    if (i % 4 === 3) {
      if (!(await appendKeep())) break;
      continue;
    }
    const r = await c.post('/v0/topics/big', { records: Array.from({ length: 20 }, (_, k) => rec(big + k)) });
    if (r.status !== 200) {
      assertDiskFull(r, 'append to big');
      break;
    }
    big += 20;
  }
  for (let quiet = 0, k = 0; quiet < 2; k++) {
    assert.ok(k < 60, 'the server stays full once what it gave back is used');
    await sleep(1500);
    let took = 0;
    while (await appendKeep()) took++;
    quiet = took === 0 && (await c.get('/v0/ready')).body.storage === 'disk_full' ? quiet + 1 : 0;
  }
}

/** Appends to `keep` until one is accepted, for at most `ms`. */
async function writableWithin(c: Client, acked: number[], ms: number, what: string, srv: Server): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const r = await c.post('/v0/topics/keep', { records: [rec(acked.length)] });
    if (r.status === 200) {
      acked.push(acked.length);
      return;
    }
    assertDiskFull(r, what);
    if (Date.now() - t0 > ms) {
      const ready = JSON.stringify((await c.get('/v0/ready')).body);
      assert.fail(`${what}: still refused after ${ms} ms (ready: ${ready}; log: ${srv.stderr().slice(-3000)})`);
    }
    await sleep(100);
  }
}

/** Every acknowledged record of `keep` is there, in order and whole; nothing else is. */
async function assertKept(c: Client, acked: number[], what: string): Promise<void> {
  const got: number[] = [];
  for (let from = 0; ;) {
    const d = await c.post('/v0/topics/keep/diff', { from_seq: from, limit: 1000 });
    assert.equal(d.status, 200, `${what}: diff ${JSON.stringify(d.body)}`);
    for (const r of d.body.records) {
      assert.equal(r.data.pad.length, RECORD_BYTES, `${what}: record ${r.$seq} whole`);
      got.push(r.data.i);
    }
    if (d.body.caught_up) break;
    from = d.body.next_from_seq;
  }
  assert.deepEqual(got, acked, `${what}: exactly the acknowledged records of keep`);
}

/** Bytes of the files under `dir`. */
function dirBytes(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += fs.statSync(path.join(e.parentPath, e.name), { throwIfNoEntry: false })?.size ?? 0;
  }
  return n;
}

/**
 * What a killed server left as zeros goes, as recovery would give it back: WAL files after the
 * log's last frame that hold nothing (a prepared reserve), and the zeros after the last frame of
 * the last file that holds some. The spare (not a WAL file) stays.
 */
function dropWalZeros(dataDir: string): void {
  const dir = walDir(dataDir);
  for (const n of listWalFiles(nodeFs, dataDir).reverse()) {
    const file = path.join(dir, `${String(n).padStart(20, '0')}.wal`);
    const buf = fs.readFileSync(file);
    let end = buf.length;
    while (end > WAL_HEADER_BYTES && buf[end - 1] === 0) end--;
    if (end > WAL_HEADER_BYTES) {
      fs.truncateSync(file, Math.min(buf.length, Math.ceil(end / FRAME_ALIGN) * FRAME_ALIGN));
      return;
    }
    fs.unlinkSync(file);
  }
}

test(
  'a volume filled through the API: a record delete and a topic delete answer 200, and writes resume',
  { skip: tmpfsSkip, timeout: 180_000 },
  async () => {
    const { inside, start } = await disk();
    const srv = await start();
    const c = client(srv.url);
    assert.equal((await c.put('/v0/topics/keep', { durability: 'fsync' })).status, 201);
    assert.equal((await c.put('/v0/topics/big', { durability: 'disk' })).status, 201);
    const acked: number[] = [];
    await fillThroughApi(c, acked);
    assert.equal((await c.get('/v0/ready')).body.storage, 'disk_full');
    const bigCount = (await c.get('/v0/topics/big')).body.count as number;
    assert.ok(bigCount > 2000, `big holds most of the volume (${bigCount} records)`);

    // Other writes are still refused, with nothing applied.
    assertDiskFull(await c.put('/v0/topics/other', {}), 'PUT create');
    assertDiskFull(await c.post('/v0/topics/keep', { records: [rec(-1)] }), 'append');

    // A record delete and a topic delete go through.
    const rd = await c.post('/v0/topics/big/delete', { before_seq: 101 });
    assert.equal(rd.status, 200, `record delete on a full disk: ${JSON.stringify(rd.body)}`);
    assert.equal(rd.body.deleted, 100);
    const segments = () => dirBytes(inside('data/topics'));
    const before = segments();
    const del = await c.del('/v0/topics/big');
    assert.equal(del.status, 200, `topic delete on a full disk: ${JSON.stringify(del.body)}`);
    assert.equal(del.body.deleted, true);
    assert.equal((await c.get('/v0/topics/big')).status, 404);

    // Its own segment files are gone at once, and writes resume with no restart.
    for (let t0 = Date.now(); before - segments() < 4 * MiB; await sleep(50)) {
      assert.ok(Date.now() - t0 < 2000, `big's segment files removed (${before} bytes before, ${segments()} now)`);
    }
    await writableWithin(c, acked, 5000, 'writes after the delete', srv);
    assert.equal((await c.get('/v0/ready')).body.storage, 'ok');
    assert.equal((await c.put('/v0/topics/other', {})).status, 201, 'a create too');
    await assertKept(c, acked, 'after the delete');
    assert.equal(await srv.stop(), 0);
  },
);

test(
  'SIGKILL on a full volume: the restart comes up, takes a topic delete, writes again, and keeps it across another SIGKILL',
  { skip: tmpfsSkip, timeout: 180_000 },
  async () => {
    const { inside, start } = await disk();
    let srv = await start();
    let c = client(srv.url);
    assert.equal((await c.put('/v0/topics/keep', { durability: 'fsync' })).status, 201);
    assert.equal((await c.put('/v0/topics/big', { durability: 'disk' })).status, 201);
    const acked: number[] = [];
    await fillThroughApi(c, acked);
    await srv.kill();

    // Nothing left for the restart: the zeros spool held back are taken by another file.
    dropWalZeros(inside('data'));
    fill(inside, 'filler');

    srv = await start();
    c = client(srv.url);
    assert.equal((await c.get('/v0/ready')).status, 200, 'recovered on a full volume');
    assert.equal((await c.get('/v0/ready')).body.storage, 'disk_full');
    await assertKept(c, acked, 'after the restart on a full volume');
    assertDiskFull(await c.post('/v0/topics/keep', { records: [rec(-1)] }), 'append after the restart');

    const del = await c.del('/v0/topics/big');
    assert.equal(del.status, 200, `topic delete after the restart: ${JSON.stringify(del.body)}`);
    assert.equal(del.body.deleted, true);
    assert.match(srv.stderr(), /WAL file \d+ is a small one \(64 KiB, made of the spare\)/, 'the first WAL file of the run was the spare');
    await writableWithin(c, acked, 5000, 'writes after the delete', srv);

    // The acknowledged delete and every acknowledged record survive another SIGKILL.
    await srv.kill();
    srv = await start();
    c = client(srv.url);
    assert.equal((await c.get('/v0/topics/big')).status, 404, 'the delete held');
    await assertKept(c, acked, 'after the second restart');
    await writableWithin(c, acked, 5000, 'writes after the second restart', srv);
    assert.equal(await srv.stop(), 0);
  },
);
