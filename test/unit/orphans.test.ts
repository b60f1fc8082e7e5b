// Recovery step 6 (src/supervisor/orphans.ts; docs/ARCHITECTURE.md "Checkpoints and recovery"):
// what a start does with the topic directories no live topic holds, and with the packs holding
// frames no topic claimed. A normal start removes the directories (and a checkpoint later
// unlinks the packs nothing live is in). A start whose WAL scan dropped frames
// (SERVICE_RECOVERY_TRUNCATE, a damaged tail) cannot tell those from the records of topics only
// the dropped frames created, so it removes nothing: the directories move, the packs are
// hard-linked, into quarantine/boot-<epoch>/, and one warn line says so. First the functions on a
// real directory, then the decision through the whole server in this process on a simulated disk
// (test/support/crashWorld.ts): topics made after the last checkpoint, a crash, a damaged header
// of the first WAL file after the cut, and a start with SERVICE_RECOVERY_TRUNCATE=1. Before the
// quarantine, that start removed the topic's segment directory and the first checkpoint
// unlinked the pack holding the other topic's records.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nodeFs, type Fs } from '../../src/storage/fs.js';
import { clearPendingOrphans, keepOrphans, pendingOrphans, removeOrphanTopicDirs } from '../../src/supervisor/orphans.js';
import { listTopicDirs } from '../../src/storage/segmentLoad.js';
import { metaDir, packsDir, quarantineDir, quarantinePendingFile, topicsDir, walDir, walFileName } from '../../src/format/layout.js';
import { SimDisk } from '../support/simDisk.js';
import { CrashWorld, diffRequest, replyBody, sweepSettings, SWEEP_DATA_DIR } from '../support/crashWorld.js';
import type { TopicRequest } from '../../src/protocol/messages/rpc.js';
import { until } from '../helpers/until.js';

const dirs: string[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-orphans-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const LIVE = 0x02_000001;
const ORPHAN = 0x03_000002;
const hex = (id: number) => id.toString(16).padStart(12, '0');
const PACK = 'pack-00000000000000000007-0-1.log';

/** topics/ with a live topic's directory, an orphan's and a stray entry; packs/ with one pack. */
function dataDir(): string {
  const d = tmp();
  for (const id of [LIVE, ORPHAN]) {
    fs.mkdirSync(path.join(topicsDir(d), hex(id)), { recursive: true });
    fs.writeFileSync(path.join(topicsDir(d), hex(id), 'seg-00000000000000000001.log'), `records of ${hex(id)}`);
  }
  fs.mkdirSync(path.join(topicsDir(d), 'not-a-topic'));
  fs.mkdirSync(packsDir(d));
  fs.writeFileSync(path.join(packsDir(d), PACK), 'packed frames');
  return d;
}

test('a normal start removes every entry of topics/ that is not a live topic directory, and keeps nothing', async () => {
  const d = dataDir();
  const removed = await removeOrphanTopicDirs(nodeFs, d, await listTopicDirs(nodeFs, d), new Set([LIVE]));
  assert.equal(removed, 2);
  assert.deepEqual(fs.readdirSync(topicsDir(d)), [hex(LIVE)]);
  assert.equal(fs.existsSync(quarantineDir(d)), false);
});

test('after dropped WAL frames the orphans move to quarantine/<group>/topics/ and the packs are linked into its packs/', async () => {
  const d = dataDir();
  const entries = await listTopicDirs(nodeFs, d);
  const kept = await keepOrphans(nodeFs, d, entries, new Set([LIVE]), [PACK], 'boot-4');
  const group = path.join(quarantineDir(d), 'boot-4');
  assert.deepEqual(kept, { dir: group, topicDirs: 2, packs: 1 });
  assert.deepEqual(fs.readdirSync(topicsDir(d)), [hex(LIVE)], 'the live topic keeps its directory');
  assert.deepEqual(fs.readdirSync(path.join(group, 'topics')).sort(), [hex(ORPHAN), 'not-a-topic']);
  assert.equal(
    fs.readFileSync(path.join(group, 'topics', hex(ORPHAN), 'seg-00000000000000000001.log'), 'utf8'),
    `records of ${hex(ORPHAN)}`,
  );
  // A link, not a move: the pack may still hold live frames of other topics.
  assert.equal(fs.readFileSync(path.join(packsDir(d), PACK), 'utf8'), 'packed frames');
  const q = path.join(group, 'packs', PACK);
  assert.equal(fs.statSync(q).ino, fs.statSync(path.join(packsDir(d), PACK)).ino);
  // Its bytes stay once a checkpoint unlinks the original (nothing live left in it).
  fs.rmSync(path.join(packsDir(d), PACK));
  assert.equal(fs.readFileSync(q, 'utf8'), 'packed frames');

  // A later start of the same name (one that died after moving) gets a group of its own; a
  // pack gone meanwhile is skipped.
  fs.mkdirSync(path.join(topicsDir(d), hex(ORPHAN)));
  const again = await keepOrphans(nodeFs, d, await listTopicDirs(nodeFs, d), new Set([LIVE]), [PACK], 'boot-4');
  assert.deepEqual(again, { dir: `${group}.2`, topicDirs: 1, packs: 0 });
  // Nothing to keep: no group at all.
  assert.equal(await keepOrphans(nodeFs, d, await listTopicDirs(nodeFs, d), new Set([LIVE]), [], 'boot-5'), undefined);
  assert.deepEqual(fs.readdirSync(quarantineDir(d)).sort(), ['boot-4', 'boot-4.2']);
});

test('the pending marker is seen and cleared', async () => {
  const d = tmp();
  assert.equal(pendingOrphans(nodeFs, d), false);
  await clearPendingOrphans(nodeFs, d); // absent: nothing to do
  fs.mkdirSync(quarantineDir(d));
  fs.writeFileSync(quarantinePendingFile(d), 'why\n');
  assert.equal(pendingOrphans(nodeFs, d), true);
  await clearPendingOrphans(nodeFs, d);
  assert.equal(pendingOrphans(nodeFs, d), false);
  assert.deepEqual(fs.readdirSync(quarantineDir(d)), []);
});

// ---- through the server, on a simulated disk ---------------------------------------------------

// Topics stay packed below 4 KiB; `big` (its first batch larger) has its own segment file.
const settings = sweepSettings({ workers: 1, packBytes: 4096, packFileBytes: 1 << 20, segmentBytes: 1 << 20 });
const D = SWEEP_DATA_DIR;

async function append(world: CrashWorld, topic: string, n: number, pad: number): Promise<void> {
  const recs = Array.from({ length: n }, (_, i) => `{"data":{"i":${i},"pad":"${'p'.repeat(pad)}"}}`).join(',');
  const body = new TextEncoder().encode(`{"records":[${recs}],"create":true,"config":{"durability":"fsync"}}`);
  const req: TopicRequest = { op: 'append', topic, body, returnSeqs: true, headerIdemKey: undefined };
  replyBody(await world.request(req));
}

async function count(world: CrashWorld, topic: string): Promise<number | undefined> {
  const r = await world.request(diffRequest(topic));
  if (!r.ok) return undefined;
  return (replyBody(r) as { records: unknown[] }).records.length;
}

function files(fsx: Fs, dir: string): string[] {
  return fsx.existsSync(dir) ? fsx.readdirSync(dir).sort() : [];
}

/** The newest snapshot's cut: its WAL file number. */
function cutFileNo(fsx: Fs): number {
  const newest = files(fsx, metaDir(D))
    .filter((n) => n.endsWith('.snap'))
    .at(-1)!;
  return Number(/^snapshot-(\d{20})-/.exec(newest)![1]);
}

/**
 * A world that checkpointed after `old`, restarted after a crash (a new boot: new packs), made
 * `small` (packed only) and `big` (an own segment file) after that boot's checkpoint and was
 * killed. Returns the disk and what those two topics hold on it.
 */
async function crashedAfterNewTopics(): Promise<{
  disk: SimDisk;
  bigDir: string;
  segs: Map<string, Buffer>;
  pack: string;
  packBytes: Buffer;
}> {
  const disk = new SimDisk();
  let world = new CrashWorld(disk, settings);
  await world.boot();
  await append(world, 'old', 2, 10);
  await world.checkpoint();
  world.halt();
  disk.crash('process');
  world = new CrashWorld(disk, settings);
  await world.boot();
  await world.checkpoint(); // the cut: everything after it is in the WAL only, and in segments and packs
  const fsx = disk.fs();
  const packsBefore = files(fsx, packsDir(D));
  try {
    await append(world, 'small', 3, 10);
    await append(world, 'big', 4, 2000);
    // Segment and pack writes follow the WAL's ack on their own.
    await until('the own segment file', () => files(fsx, topicsDir(D)).length === 1);
    await until('the pack', () =>
      files(fsx, packsDir(D)).some((p) => !packsBefore.includes(p) && fsx.statSync(path.join(packsDir(D), p)).size > 0),
    );
    await new Promise((r) => setTimeout(r, 20));
  } finally {
    world.halt();
  }
  const bigDir = files(fsx, topicsDir(D))[0]!;
  disk.crash('process');
  const segs = new Map(files(disk.fs(), path.join(topicsDir(D), bigDir)).map((n) => [n, disk.peek(path.join(topicsDir(D), bigDir, n))!]));
  assert.ok(segs.size > 0 && [...segs.values()].every((b) => b.length > 0), 'big has its own segment bytes');
  const pack = files(disk.fs(), packsDir(D)).find((p) => !packsBefore.includes(p))!;
  return { disk, bigDir, segs, pack, packBytes: disk.peek(path.join(packsDir(D), pack))! };
}

/** Overwrites the magic of the newest snapshot's cut file: a bad header of the first WAL file after the cut. */
function damageFirstWalAfterCut(disk: SimDisk): void {
  const fsx = disk.fs();
  const fd = fsx.openSync(path.join(walDir(D), walFileName(cutFileNo(fsx))), 'r+');
  fsx.writeSync(fd, Buffer.from('XXXXXXXX'), 0);
  fsx.closeSync(fd);
}

test("SERVICE_RECOVERY_TRUNCATE after a bad header of the first WAL file after the cut keeps the new topics' segments and packs in quarantine/", async (t) => {
  const { disk, bigDir, segs, pack, packBytes } = await crashedAfterNewTopics();
  damageFirstWalAfterCut(disk);
  const world = new CrashWorld(disk, { ...settings, recoveryTruncate: true });
  t.after(() => world.halt()); // also when an assertion fails: a live world keeps the process up
  await world.boot();
  await world.checkpoint(); // unlinks the packs nothing live is in
  const fsx = disk.fs();
  assert.equal(await count(world, 'old'), 2, 'the prefix is served');
  assert.equal(await count(world, 'small'), undefined, 'the dropped WAL created small');
  assert.equal(await count(world, 'big'), undefined, 'the dropped WAL created big');
  assert.deepEqual(files(fsx, topicsDir(D)), [], 'big has no directory under topics/');
  const groups = files(fsx, quarantineDir(D));
  assert.equal(groups.length, 1, `one group, no pending marker left: ${groups.join(', ')}`);
  const group = path.join(quarantineDir(D), groups[0]!);
  assert.match(groups[0]!, /^boot-\d+$/);
  for (const [n, bytes] of segs) assert.deepEqual(disk.peek(path.join(group, 'topics', bigDir, n)), bytes, `big's ${n}, byte for byte`);
  assert.ok(!files(fsx, packsDir(D)).includes(pack), 'the checkpoint unlinked the pack (no live frame in it)');
  assert.deepEqual(disk.peek(path.join(group, 'packs', pack)), packBytes, "small's pack, byte for byte");
  const warns = world.logs.filter((l) => l.includes('removed nothing'));
  assert.equal(warns.length, 1, world.logs.join('\n'));
  assert.match(warns[0]!, new RegExp(`1 topic directory moved to ${group}/topics/, 1 pack file linked into ${group}/packs/`));
});

test('a normal start after the same crash replays the new topics and quarantines nothing', async (t) => {
  const { disk, bigDir } = await crashedAfterNewTopics();
  const world = new CrashWorld(disk, { ...settings, recoveryTruncate: true });
  t.after(() => world.halt());
  await world.boot();
  await world.checkpoint();
  assert.equal(await count(world, 'small'), 3);
  assert.equal(await count(world, 'big'), 4);
  assert.deepEqual(files(disk.fs(), topicsDir(D)), [bigDir]);
  assert.equal(disk.fs().existsSync(quarantineDir(D)), false);
  assert.equal(world.logs.filter((l) => l.includes('removed nothing')).length, 0);
});

test('a start that finds the pending marker (the dropping start died before keeping) keeps the orphans too', async (t) => {
  const disk = new SimDisk();
  let world = new CrashWorld(disk, settings);
  t.after(() => world.halt());
  await world.boot();
  await append(world, 'old', 1, 10);
  await world.checkpoint();
  world.halt();
  disk.crash('process');
  // What the dropping start left: the marker, and a directory no live topic holds.
  const fsx = disk.fs();
  const stray = path.join(topicsDir(D), hex(ORPHAN));
  fsx.mkdirSync(stray);
  fsx.writeFileSync(path.join(stray, 'seg-00000000000000000001.log'), Buffer.from('records'));
  fsx.mkdirSync(quarantineDir(D));
  fsx.writeFileSync(quarantinePendingFile(D), Buffer.from('why\n'));
  world = new CrashWorld(disk, settings);
  await world.boot();
  assert.equal(fsx.existsSync(stray), false);
  const groups = files(fsx, quarantineDir(D));
  assert.equal(groups.length, 1, `the marker is gone once kept: ${groups.join(', ')}`);
  assert.deepEqual(
    disk.peek(path.join(quarantineDir(D), groups[0]!, 'topics', hex(ORPHAN), 'seg-00000000000000000001.log')),
    Buffer.from('records'),
  );
  // The orphan's boot epoch is never handed out again: a new topic's id is past it.
  await append(world, 'fresh', 1, 5000);
  await until("fresh's own segment file", () => files(fsx, topicsDir(D)).length === 1);
  const fresh = files(fsx, topicsDir(D))[0]!;
  assert.equal(Math.floor(parseInt(fresh, 16) / 0x100_0000), 4, `${fresh}: the id of the boot after the orphan's (3)`);
});

test("a truncating start that dropped a later boot never hands out that boot's topic ids again", async (t) => {
  // The newest snapshot damaged or gone, so the start falls back on the one before and replays
  // the WAL after it, whose first file is damaged: the BOOT frame of the boot since is dropped
  // too. Its topic `small` shares a pack with live frames of `old`, so the pack stays; a new
  // topic given small's id again (the same boot epoch) took small's frames from that pack at the
  // next recovery that reads every pack, in place of its own.
  const eager = { ...settings, lazyRecovery: false };
  const disk = new SimDisk();
  let world = new CrashWorld(disk, eager);
  t.after(() => world.halt());
  await world.boot();
  await world.checkpoint(); // the one recovery started (a checkpoint called meanwhile shares it)
  await append(world, 'old', 1, 10);
  await world.checkpoint();
  world.halt();
  disk.crash('process');
  const fsx = disk.fs();
  const fallback = files(fsx, metaDir(D)).at(-1)!;
  world = new CrashWorld(disk, eager);
  await world.boot();
  await world.checkpoint(); // shares the one recovery started
  assert.equal(files(fsx, metaDir(D)).length, 2);
  const packed = () => files(fsx, packsDir(D)).reduce((n, p) => n + fsx.statSync(path.join(packsDir(D), p)).size, 0);
  const before = packed();
  await append(world, 'small', 2, 10);
  await append(world, 'old', 1, 10); // after small's frames, in the same pack
  await until('the pack writes', () => packed() > before + 200);
  world.halt();
  disk.crash('process');
  for (const n of files(disk.fs(), metaDir(D))) if (n !== fallback) disk.fs().unlinkSync(path.join(metaDir(D), n));
  damageFirstWalAfterCut(disk);
  world = new CrashWorld(disk, { ...eager, recoveryTruncate: true });
  await world.boot();
  await append(world, 'victim', 1, 3);
  await world.checkpoint();
  world.halt();
  disk.crash('process');
  world = new CrashWorld(disk, eager);
  await world.boot();
  assert.equal(await count(world, 'victim'), 1, "the new topic holds its own record, not small's two");
  assert.equal(await count(world, 'old'), 2);
});
