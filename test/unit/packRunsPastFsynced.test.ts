// A checkpoint's snapshot records, for the pack being written, the bytes its flush fsynced (the
// section's `tail`, docs/FORMAT.md "Snapshots"); the topics' `runs` are taken after that flush,
// so a topic appended meanwhile names bytes written after the fsync began (frames after the
// cut, which the WAL holds). Here, through the whole server in this process on a simulated disk
// (test/support/crashWorld.ts): appends run while a checkpoint's flush waits on a slow segment
// fsync, so a quiet topic (recorded with watermarks) and a busy one (frames not yet synced in the
// WAL, no watermarks) both have runs past the fsynced bytes, and more frames follow the pack's
// length at the cut; then a power loss drops the unsynced pack bytes (or leaves them garbled), or
// a SIGKILL leaves them all. Recovery, eager or lazy, must come up and serve every acknowledged
// record exactly once, a later checkpoint, power loss and recovery of the other kind too, and
// `spool verify` must not call it damage. Before runs were clipped at the fsynced bytes, lazy
// recovery refused the start (a loading topic's runs read past the pack's end) or restored the
// quiet topic asleep and failed its wake (500), and verify reported damage; eager recovery,
// which reads no runs, came up. Clipping the runs without starting the scan after the cut at the
// fsynced bytes lost records silently (garbled or kept bytes: a frame after a gap was taken).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import type { Fs, FsFile } from '../../src/storage/fs.js';
import { SimDisk } from '../support/simDisk.js';
import { CrashWorld, diffRequest, replyBody, sweepSettings, SWEEP_DATA_DIR } from '../support/crashWorld.js';
import { metaDir, packsDir } from '../../src/format/layout.js';
import { decodeSnapshot } from '../../src/storage/snapshot.js';
import type { SectionPart } from '../../src/storage/snapshotSectionFormat.js';
import { verifyDataDir } from '../../src/storage/verify.js';
import type { TopicRequest } from '../../src/protocol/messages/rpc.js';

/** A SimDisk whose next fsync of a file under topics/ waits until the test lets it go. */
class SlowSyncDisk extends SimDisk {
  private held: { reached: () => void; go: Promise<void> } | undefined;
  private readonly views = new WeakMap<Fs, Fs>();

  /** The next segment-file fsync waits for `release`; `reached` resolves when it starts waiting. */
  holdNextSegmentSync(): { reached: Promise<void>; release: () => void } {
    let reached!: () => void;
    let release!: () => void;
    const r = new Promise<void>((res) => (reached = res));
    this.held = { reached, go: new Promise<void>((res) => (release = res)) };
    return { reached: r, release };
  }

  override fs(): Fs {
    const inner = super.fs();
    let view = this.views.get(inner);
    if (!view) {
      view = Object.assign(Object.create(inner) as Fs, {
        open: async (p: string, flags: Parameters<Fs['open']>[1]): Promise<FsFile> => {
          const f = await inner.open(p, flags);
          if (!p.includes('/topics/')) return f;
          const sync = f.sync.bind(f);
          return Object.assign(Object.create(f) as FsFile, {
            sync: async () => {
              const h = this.held;
              if (h) {
                this.held = undefined;
                h.reached();
                await h.go;
              }
              return sync();
            },
          });
        },
      });
      this.views.set(inner, view);
    }
    return view;
  }
}

// Topics stay packed below 4 KiB (`big` rolls to an own file: its fsync is the slow one); one
// pack file for the whole test.
const settings = sweepSettings({ workers: 1, packBytes: 4096, packFileBytes: 1 << 20, segmentBytes: 1 << 20 });
const CLASS: Record<string, string> = { a: 'fsync', b: 'disk', c: 'fsync', big: 'fsync' };

/** The data of every acknowledged record, per topic, in seq order. */
type Acked = Map<string, string[]>;

let counter = 0;
async function append(world: CrashWorld, acked: Acked, topic: string, pad = 20): Promise<void> {
  const data = JSON.stringify({ n: counter++, pad: 'p'.repeat(pad) });
  const body = new TextEncoder().encode(`{"records":[{"data":${data}}],"create":true,"config":{"durability":"${CLASS[topic]}"}}`);
  const req: TopicRequest = { op: 'append', topic, body, returnSeqs: true, headerIdemKey: undefined };
  replyBody(await world.request(req));
  const list = acked.get(topic) ?? [];
  list.push(data);
  acked.set(topic, list);
}

async function readAll(world: CrashWorld, topic: string): Promise<string[]> {
  const r = await world.request(diffRequest(topic, { includeMeta: true }));
  const body = replyBody(r) as { records: { $seq: number; data: unknown }[] };
  body.records.forEach((rec, i) => assert.ok(i === 0 || rec.$seq > body.records[i - 1]!.$seq, `${topic}: seqs in order`));
  return body.records.map((rec) => JSON.stringify(rec.data));
}

/**
 * Every acknowledged record is served, in order, and nothing else (nothing was in flight at the
 * crash; a restart after a crash may skip seqs: reservations are padded).
 */
async function checkAll(world: CrashWorld, acked: Acked, what: string): Promise<void> {
  for (const [topic, want] of acked) assert.deepEqual(await readAll(world, topic), want, `${what}: topic ${topic}`);
}

function newestSnapshot(fsx: Fs) {
  const dir = metaDir(SWEEP_DATA_DIR);
  const name = fsx
    .readdirSync(dir)
    .filter((n) => n.endsWith('.snap'))
    .sort()
    .at(-1)!;
  return decodeSnapshot(fsx.readFileSync(path.join(dir, name)))!;
}

/** Where the topic's runs in pack `no` end (0: none there). */
function runsEnd(part: SectionPart, no: number): number {
  let end = 0;
  const r = part.runs ?? [];
  for (let i = 0; i < r.length; i += 3) if (r[i] === no) end = Math.max(end, r[i + 1]! + r[i + 2]!);
  return end;
}

interface Cut {
  disk: SlowSyncDisk;
  acked: Acked;
  pack: string;
  /** The pack's bytes the newest snapshot records as fsynced. */
  fsynced: number;
  /** The pack as the dead process left it (the page cache). */
  before: Buffer;
}

/**
 * A checkpoint whose flush waits on a slow segment fsync while `a` (and, `busy`, `b`) take
 * appends: they land in the pack after its fsync, and the snapshot's runs name them. Then the
 * WAL is fsynced (every ack is durable there) and the world stops, nothing in flight.
 */
async function cutWhileAppending(busy: boolean): Promise<Cut> {
  const disk = new SlowSyncDisk({ seed: 'pack-runs' });
  const acked: Acked = new Map();
  const world = new CrashWorld(disk, settings);
  await world.boot();
  for (let i = 0; i < 5; i++) for (const t of ['a', 'b', 'c']) await append(world, acked, t);
  for (let i = 0; i < 20; i++) await append(world, acked, 'big', 400);
  await world.checkpoint();
  await append(world, acked, 'big', 400); // its own file is dirty: the next flush fsyncs it

  const hold = disk.holdNextSegmentSync();
  const checkpoint = world.checkpoint();
  await hold.reached; // the flush: the pack's fsync runs alongside, the segment's waits
  for (let i = 0; i < 3; i++) await append(world, acked, 'a');
  // `disk` appends are acked once written to the WAL: not synced there, the topic is busy.
  if (busy) for (let i = 0; i < 3; i++) await append(world, acked, 'b');
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  hold.release();
  await checkpoint;
  // Frames after the pack's length at the cut too (the scan after the cut starts below them).
  for (const t of busy ? ['a', 'b'] : ['a']) await append(world, acked, t);
  await append(world, acked, 'big', 400); // an fsync-class ack: the WAL is synced, b's acks with it

  const snap = newestSnapshot(disk.fs());
  const tail = snap.packs![0]!.tail!;
  assert.equal(tail.length, 3, 'the section records the fsynced bytes');
  const [pack, written, fsynced] = tail as [string, number, number];
  assert.ok(fsynced < written, `frames written after the flush's fsync: ${JSON.stringify(tail)}`);
  const no = Number(pack.split('-')[1]);
  const part = (name: string) => snap.topics.find((t) => t.name === name) as SectionPart;
  // The situation under test: runs past the fsynced bytes, of a quiet topic and of a busy one.
  assert.ok(part('a').wm, 'a was quiet at its turn: recorded with watermarks');
  assert.ok(runsEnd(part('a'), no) > fsynced, `a's runs reach past ${fsynced}: ${JSON.stringify(part('a').runs)}`);
  if (busy) {
    assert.equal(part('b').wm, undefined, 'b was busy: no watermarks');
    assert.ok(runsEnd(part('b'), no) > fsynced, `b's runs reach past ${fsynced}: ${JSON.stringify(part('b').runs)}`);
  }
  const before = disk.peek(path.join(packsDir(SWEEP_DATA_DIR), pack))!;
  world.halt();
  return { disk, acked, pack, fsynced, before };
}

/**
 * The crash: a power loss takes the unsynced pack bytes (`dropped`), or leaves them with a frame
 * that fails its CRC (`garbled`); a SIGKILL leaves them all (`kept`: the page cache survives).
 */
type Crash = 'dropped' | 'garbled' | 'kept';

/** Returns what `spool verify` reports as problems then (before recovery mends anything). */
function crash(cut: Cut, how: Crash): string[] {
  const { disk, pack, fsynced, before } = cut;
  disk.crash(how === 'kept' ? 'process' : 'durable-only');
  const file = path.join(packsDir(SWEEP_DATA_DIR), pack);
  const fsx = disk.fs();
  assert.equal(fsx.statSync(file).size, how === 'kept' ? before.length : fsynced, 'the pack as the crash left it');
  if (how === 'garbled') {
    const buf = Buffer.from(before);
    buf[fsynced + 40]! ^= 0xff; // in the first frame past the fsynced bytes
    fsx.writeFileSync(file, buf);
    disk.syncAll();
  }
  return verifyDataDir(fsx, SWEEP_DATA_DIR).problems;
}

async function recover(disk: SimDisk, lazy: boolean): Promise<CrashWorld> {
  const world = new CrashWorld(disk, { ...settings, lazyRecovery: lazy });
  try {
    await world.boot();
  } catch (err) {
    world.halt();
    throw err;
  }
  return world;
}

for (const how of ['dropped', 'garbled', 'kept'] as const) {
  for (const busy of [true, false]) {
    test(`runs past the fsynced pack bytes (${busy ? 'a busy and a quiet topic' : 'a quiet topic'}), ${how === 'kept' ? 'a SIGKILL keeps' : `a power loss ${how === 'garbled' ? 'garbles' : 'drops'}`} them: recovery, eager or lazy, serves every acknowledged record`, async () => {
      for (const lazy of [true, false]) {
        const what = `${lazy ? 'lazy' : 'eager'} recovery`;
        const cut = await cutWhileAppending(busy);
        const problems = crash(cut, how);
        let world = await recover(cut.disk, lazy);
        try {
          await checkAll(world, cut.acked, what);
          assert.deepEqual(problems, [], 'spool verify after the crash: no damage (the runs past the fsynced bytes are not trusted)');
          // Life goes on: more appends, a checkpoint, another power loss, the other recovery.
          for (const t of Object.keys(CLASS)) await append(world, cut.acked, t);
          await world.checkpoint();
        } finally {
          world.halt();
        }
        cut.disk.crash('durable-only');
        const report = verifyDataDir(cut.disk.fs(), SWEEP_DATA_DIR);
        assert.deepEqual(report.problems, [], `verify after the second power loss: ${report.notes.join('; ')}`);
        world = await recover(cut.disk, !lazy);
        try {
          await checkAll(world, cut.acked, `${what}, then a power loss and ${lazy ? 'eager' : 'lazy'} recovery`);
        } finally {
          world.halt();
        }
      }
    });
  }
}

test('a tail pack cut below its fsynced bytes is damage: eager and lazy recovery refuse to start', async () => {
  for (const lazy of [true, false]) {
    const cut = await cutWhileAppending(false);
    crash(cut, 'dropped');
    const file = path.join(packsDir(SWEEP_DATA_DIR), cut.pack);
    const fsx = cut.disk.fs();
    fsx.writeFileSync(file, cut.before.subarray(0, cut.fsynced - 64)); // bytes the snapshot relies on, gone
    cut.disk.syncAll();
    // Before the lazy scan checked the size, lazy recovery came up (the sleeping topics whose runs
    // the cut took failed only at their wake).
    const started = recover(cut.disk, lazy).then((w) => (w.halt(), w));
    await assert.rejects(started, /fsynced/, `${lazy ? 'lazy' : 'eager'} recovery`);
  }
});
