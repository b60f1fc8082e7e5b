// `spool verify`, `spool inspect` and the live-directory guard of the offline tools: a clean
// directory verifies, a flipped byte in a WAL frame, a segment frame, a sealed pack or a snapshot
// is found and reported with exit 1 (in the pack being written: a torn tail, a note, unless the
// newest snapshot placed frames there; in the newest segment the same, below the size the newest
// snapshot records of it), so is a
// routers file that is damaged, missing or older than the router progress in the data, and a
// directory a running server holds is refused unless --force.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { startServer, killServersAfterFile, tempDir, client, CLI } from '../helpers/server.js';
import { probeFrame } from '../../src/format/frame.js';
import { FrameType, WAL_HEADER_BYTES } from '../../src/format/constants.js';

killServersAfterFile();

function spool(args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
}

let clean = '';

before(async () => {
  // Small topics stay in packs; v.big's first batch alone is past the pack threshold, so it has
  // segment files of its own. Two boots: the first one's pack is sealed.
  const env = { SERVICE_WORKERS: '1', SERVICE_PACK_BYTES: '2900' };
  const first = await startServer({ env });
  let c = client(first.url);
  await c.put('/v0/topics/v.disk', { durability: 'disk' });
  await c.put('/v0/topics/v.fsync', { durability: 'fsync' });
  for (let i = 0; i < 20; i++) {
    await c.post('/v0/topics/v.disk', { records: [{ data: { i } }, { data: { i, x: 'y' } }] });
    await c.post('/v0/topics/v.fsync', { records: [{ data: i }] });
    await c.post('/v0/topics/v.big', { records: Array.from({ length: 50 }, (_, k) => ({ data: { i, k, pad: 'b'.repeat(40) } })) });
  }
  assert.equal(await first.stop(), 0);
  const srv = await startServer({ env, dataDir: first.dataDir });
  c = client(srv.url);
  for (let i = 20; i < 45; i++) {
    await c.post('/v0/topics/v.disk', { records: [{ data: { i } }] });
    await c.post('/v0/topics/v.fsync', { records: [{ data: i }] });
  }
  // While it runs: the offline tools refuse the directory, unless --force.
  for (const cmd of ['verify', 'inspect', 'wal-dump']) {
    const r = spool([cmd, srv.dataDir]);
    assert.equal(r.status, 2, `${cmd} on a live dir: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, /in use by process \d+.*--force/);
  }
  assert.equal(spool(['verify', srv.dataDir, '--force']).status, 0);
  assert.equal(await srv.stop(), 0);
  clean = srv.dataDir;
});

function copy(): string {
  const d = tempDir();
  fs.cpSync(clean, d, { recursive: true });
  return d;
}

/** Offsets of the APPEND frames in a file of frames starting at `start`. */
function appendFrames(buf: Buffer, start: number): { off: number; bodyOff: number }[] {
  const out: { off: number; bodyOff: number }[] = [];
  for (let off = start; off < buf.length;) {
    const p = probeFrame(buf, off, buf.length);
    if (!p.ok) break;
    if (p.frame.type === FrameType.APPEND) out.push({ off, bodyOff: p.frame.bodyOff });
    off += p.frame.size;
  }
  return out;
}

function flip(file: string, at: number): void {
  const buf = fs.readFileSync(file);
  buf[at] = buf[at]! ^ 0x40;
  fs.writeFileSync(file, buf);
}

test('a clean directory verifies, and inspect lists its topics', () => {
  const r = spool(['verify', clean]);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^ok$/m);
  const j = JSON.parse(spool(['verify', clean, '--json']).stdout) as {
    ok: boolean;
    walFrames: number;
    segmentFrames: number;
    packs: number;
    packFrames: number;
  };
  assert.equal(j.ok, true);
  assert.ok(j.walFrames > 40 && j.segmentFrames >= 20 && j.packs === 2 && j.packFrames >= 60, JSON.stringify(j));
  const ins = spool(['inspect', clean, '--json']);
  assert.equal(ins.status, 0, ins.stderr);
  const info = JSON.parse(ins.stdout) as {
    topics: { name: string; durability: string; segments: unknown[]; packed_bytes: number; bytes_on_disk: number }[];
    packs: { live_bytes: number }[];
  };
  assert.deepEqual(
    info.topics.map((t) => [t.name, t.durability]),
    [
      ['v.big', 'disk'],
      ['v.disk', 'disk'],
      ['v.fsync', 'fsync'],
    ],
  );
  assert.ok(info.topics.every((t) => t.bytes_on_disk > 0));
  const [big, disk, fsync] = info.topics;
  assert.ok(big!.segments.length > 0 && big!.packed_bytes === 0, 'a first batch past the threshold: own files only');
  assert.ok(disk!.segments.length > 0 && disk!.packed_bytes > 0, 'grew past the threshold: packed, then own files');
  assert.ok(fsync!.segments.length === 0 && fsync!.packed_bytes > 0, 'small: packed only');
  assert.equal(info.packs.length, 2);
  const one = spool(['inspect', clean, 'v.disk']);
  assert.equal(one.status, 0);
  assert.match(one.stdout, /v\.disk \(id [0-9a-f]+\) log disk/);
  assert.equal(spool(['inspect', clean, 'v.absent']).status, 4);
  assert.match(spool(['inspect', clean]).stdout, /v\.fsync +log +fsync/);
});

test('a flipped byte in a WAL frame is damage', () => {
  const d = copy();
  const walDir = path.join(d, 'wal');
  const file = fs
    .readdirSync(walDir)
    .map((n) => path.join(walDir, n))
    .find((f) => appendFrames(fs.readFileSync(f), WAL_HEADER_BYTES).length > 10)!;
  assert.ok(file, 'a WAL file with appends');
  const frames = appendFrames(fs.readFileSync(file), WAL_HEADER_BYTES);
  flip(file, frames[3]!.bodyOff + 30);
  const r = spool(['verify', d]);
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stdout, new RegExp(`DAMAGE: wal ${path.basename(file)}: damaged frame at offset ${frames[3]!.off} \\(crc\\)`));
});

test("a stray byte in the newest WAL file's zeros is a torn tail, as recovery takes it", () => {
  const d = copy();
  const walDir = path.join(d, 'wal');
  const file = fs
    .readdirSync(walDir)
    .sort()
    .map((n) => path.join(walDir, n))
    .filter((f) => appendFrames(fs.readFileSync(f), WAL_HEADER_BYTES).length > 0)
    .pop()!;
  const buf = fs.readFileSync(file);
  let end = WAL_HEADER_BYTES;
  for (let p = probeFrame(buf, end, buf.length); p.ok; p = probeFrame(buf, end, buf.length)) end += p.frame.size;
  assert.ok(buf.length > end + 100 && buf.subarray(end).every((b) => b === 0), 'pre-allocated zeros after its frames');
  buf[end + 50] = 0x41;
  fs.writeFileSync(file, buf);
  const r = spool(['verify', d]);
  assert.equal(r.status, 0, r.stdout);
  assert.match(r.stdout, new RegExp(`note: wal ${path.basename(file)}: torn tail at offset ${end} \\(end\\)`));
});

test('a flipped byte in a segment frame is damage', () => {
  const d = copy();
  const topics = path.join(d, 'topics');
  const segs = fs.readdirSync(topics).flatMap((t) => fs.readdirSync(path.join(topics, t)).map((n) => path.join(topics, t, n)));
  const seg = segs.find((f) => appendFrames(fs.readFileSync(f), 0).length >= 20)!;
  const frames = appendFrames(fs.readFileSync(seg), 0);
  flip(seg, frames[2]!.bodyOff + 26);
  const r = spool(['verify', d]);
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stdout, /DAMAGE: segment [0-9a-f]{12}\/seg-\d{20}\.log: damaged frame at offset \d+ \(crc\)/);
});

test('the newest segment: damage or a cut below the size the snapshot records is damage, a tail past it is torn', () => {
  // v.big is quiet at the clean stop with one own file: the snapshot records that file's size
  // (`own`), all of it fsynced before the snapshot was written.
  const d = copy();
  const topics = path.join(d, 'topics');
  const segs = fs.readdirSync(topics).flatMap((t) => fs.readdirSync(path.join(topics, t)).map((n) => path.join(topics, t, n)));
  const seg = segs.find((f) => appendFrames(fs.readFileSync(f), 0).length >= 20)!;
  const original = fs.readFileSync(seg);
  const frames = appendFrames(original, 0);
  const last = frames[frames.length - 1]!;
  const where = `segment ${path.basename(path.dirname(seg))}/${path.basename(seg)}`;
  // Past the recorded size: a torn tail, a note.
  fs.appendFileSync(seg, Buffer.alloc(40, 0xab));
  let r = spool(['verify', d]);
  assert.equal(r.status, 0, r.stdout);
  assert.match(r.stdout, new RegExp(`note: ${where}: torn tail at offset ${original.length} `));
  // In its last frame (no valid frame after it): damage, not a torn tail.
  fs.writeFileSync(seg, original);
  flip(seg, last.bodyOff + 10);
  r = spool(['verify', d]);
  assert.equal(r.status, 1, r.stdout);
  assert.doesNotMatch(r.stdout, /torn tail/);
  assert.match(
    r.stdout,
    new RegExp(
      `DAMAGE: ${where}: damaged frame at offset ${last.off} \\(crc\\), below the ${original.length} bytes the newest snapshot records as durable`,
    ),
  );
  // Cut at a frame boundary below it: whole frames, but fewer bytes than were durable.
  fs.writeFileSync(seg, original.subarray(0, last.off));
  r = spool(['verify', d]);
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stdout, new RegExp(`DAMAGE: ${where}: whole frames end at ${last.off}, below the ${original.length} bytes`));
});

test('packs: a torn tail of the pack being written is a note; a flipped byte where the snapshot placed frames, or in a sealed pack, is damage', () => {
  const d = copy();
  const dir = path.join(d, 'packs');
  const [sealed, newest] = fs.readdirSync(dir).sort();
  const newestFile = path.join(dir, newest!);
  // Part of a frame after the last whole one: what a crash mid-write leaves.
  const whole = fs.statSync(newestFile).size;
  fs.appendFileSync(newestFile, Buffer.alloc(40, 0xab));
  let r = spool(['verify', d, '--json']);
  assert.equal(r.status, 0, r.stdout);
  assert.match(r.stdout, new RegExp(`pack ${newest}: torn tail at offset ${whole} \\(`));
  // The newest snapshot placed this frame in the pack (fsynced before it was written): damage,
  // however the pack's tail looks (a backup cut short, a bad disk).
  flip(newestFile, appendFrames(fs.readFileSync(newestFile), 0)[1]!.bodyOff + 10);
  r = spool(['verify', d]);
  assert.equal(r.status, 1, r.stdout);
  assert.match(
    r.stdout,
    /DAMAGE: snapshot: topic v\.(disk|fsync) has frames at bytes \d+\.\.\d+ of pack \d+, whose whole frames end at \d+/,
  );
  flip(path.join(dir, sealed!), appendFrames(fs.readFileSync(path.join(dir, sealed!)), 0)[2]!.bodyOff + 10);
  r = spool(['verify', d]);
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stdout, new RegExp(`DAMAGE: pack ${sealed}: damaged at offset \\d+ \\(crc\\) in a sealed pack`));
});

test('a pack cut short below what the snapshot placed in it, or missing, is damage', () => {
  const d = copy();
  const dir = path.join(d, 'packs');
  const [sealed, newest] = fs.readdirSync(dir).sort();
  fs.truncateSync(path.join(dir, newest!), 200);
  let r = spool(['verify', d]);
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stdout, /DAMAGE: snapshot: topic v\.\w+ has frames at bytes \d+\.\.\d+ of pack \d+, whose whole frames end at \d+/);
  fs.rmSync(path.join(dir, sealed!));
  r = spool(['verify', d]);
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stdout, /DAMAGE: snapshot: topic v\.\w+ has frames in pack \d+, which is not there/);
});

test('a flipped byte in a snapshot is damage', () => {
  const d = copy();
  const meta = path.join(d, 'meta');
  const snap = fs
    .readdirSync(meta)
    .filter((n) => n.endsWith('.snap'))
    .sort()
    .reverse()[0]!;
  flip(path.join(meta, snap), 40);
  const r = spool(['verify', d, '--json']);
  assert.equal(r.status, 1, r.stdout);
  const j = JSON.parse(r.stdout) as { problems: string[] };
  assert.deepEqual(j.problems, [`snapshot ${snap}: damaged (bad magic, version, length or CRC)`]);
  // inspect reads the newest snapshot that decodes, and says which newer ones it skipped.
  const ins = spool(['inspect', d]);
  assert.equal(ins.status, 0, ins.stderr);
  assert.match(ins.stderr, new RegExp(`damaged snapshot\\(s\\) skipped: ${snap.replace(/\./g, '\\.')}`));
  assert.deepEqual((JSON.parse(spool(['inspect', d, '--json']).stdout) as { damaged_snapshots: string[] }).damaged_snapshots, [snap]);
});

/** A data directory with two routers that forwarded, and the routers file as it was after the first. */
async function routerDir(): Promise<{ dir: string; older: Buffer }> {
  const srv = await startServer({ env: { SERVICE_WORKERS: '1' } });
  const c = client(srv.url);
  const file = path.join(srv.dataDir, 'meta', 'routers.json');
  assert.equal((await c.put('/v0/routers/r1', { source: 'v.rs', dest: 'v.rd' })).status, 201);
  await c.post('/v0/topics/v.rs', { records: [{ data: 1 }, { data: 2 }] });
  const older = fs.readFileSync(file);
  assert.equal((await c.put('/v0/routers/r2', { source: 'v.rs2', dest: 'v.rd2', guarantee: 'exactly_once' })).status, 201);
  await c.post('/v0/topics/v.rs2', { records: [{ data: 3 }] });
  for (const r of ['r1', 'r2']) assert.ok((await c.get(`/v0/routers/${r}`)).body.forwarded_total > 0);
  assert.equal(await srv.stop(), 0);
  return { dir: srv.dataDir, older };
}

/** The routers file with `body` and its CRC (docs/FORMAT.md). */
function routersFile(body: unknown): string {
  const text = JSON.stringify(body);
  return JSON.stringify({ crc: crc32(Buffer.from(text, 'utf8')), body: text });
}

test('the routers file: checked, and against the router progress the data holds', async () => {
  const { dir, older } = await routerDir();
  const file = path.join(dir, 'meta', 'routers.json');
  let r = spool(['verify', dir]);
  assert.equal(r.status, 0, r.stdout);
  assert.doesNotMatch(r.stdout, /router/);
  const current = fs.readFileSync(file);

  fs.rmSync(file);
  r = spool(['verify', dir]);
  assert.equal(r.status, 1, r.stdout);
  assert.match(
    r.stdout,
    /DAMAGE: topic v\.rd holds copies of router id 1, which no meta\/routers\.json describes: the router definitions are missing/,
  );

  fs.writeFileSync(file, older);
  r = spool(['verify', dir]);
  assert.equal(r.status, 1, r.stdout);
  assert.match(
    r.stdout,
    /DAMAGE: topic v\.rd2 holds copies of router id 2, which meta\/routers\.json \(nextId 2\) never handed out: the file is older than the data/,
  );

  const flipped = Buffer.from(current);
  flipped[flipped.indexOf('v.rs2')] = 'w'.charCodeAt(0);
  fs.writeFileSync(file, flipped);
  r = spool(['verify', dir]);
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stdout, /DAMAGE: meta\/routers\.json: checksum mismatch/);

  const body = JSON.parse(JSON.parse(current.toString('utf8')).body);
  body.routers.push({ ...body.routers[0], name: 'r3', id: 1, source: 'v.none', dest: 'v.rd2' });
  fs.writeFileSync(file, routersFile(body));
  r = spool(['verify', dir]);
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stdout, /DAMAGE: meta\/routers\.json: router id 1 appears twice/);
  assert.match(r.stdout, /DAMAGE: meta\/routers\.json: routers r2 and r3 both feed v\.rd2, from v\.rs2 and v\.none/);
  assert.match(r.stdout, /note: meta\/routers\.json: router r3 names v\.none, which does not exist; the server drops the router at start/);

  body.routers.pop();
  body.routers[1].dest = 'v.other';
  fs.writeFileSync(file, routersFile(body));
  r = spool(['verify', dir]);
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stdout, /DAMAGE: topic v\.rd2 holds copies of router r2 \(id 2\), whose dest is v\.other/);
});
