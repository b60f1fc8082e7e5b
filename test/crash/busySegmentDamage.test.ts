// A topic busy at a checkpoint's cut (frames in flight) has its newest own segment file recorded
// in the snapshot too (`own`: its first seq and the bytes of it the checkpoint fsynced,
// docs/FORMAT.md "Snapshots"), with the real server. Once the WAL files holding the early frames
// are unlinked, those bytes are their only copy: a flipped byte there refuses the start with one
// line naming the file and offset, and nothing is cut (before, recovery read it as a torn tail,
// cut the file there and served fewer records than were acknowledged, saying nothing). A torn
// tail past the recorded bytes (a SIGKILL mid-write) is still cut and rewritten from the WAL, and
// a recorded size never exceeds what was written: a SIGKILL during heavy appends, again and
// again, always restarts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CLI, client, killServersAfterFile, startServer, type Server } from '../helpers/server.js';
import { appenders } from '../support/appenders.js';
import { probeFrame, readAppendHead } from '../../src/format/frame.js';
import { FrameType, WAL_HEADER_BYTES } from '../../src/format/constants.js';
import { decodeSnapshot } from '../../src/storage/snapshot.js';
import type { SectionPart } from '../../src/storage/snapshotSectionFormat.js';

killServersAfterFile();

// Own segment files from the first frame, small WAL files and frequent checkpoints: the WAL of
// the early frames is unlinked two checkpoints after they were written.
const BASE = {
  SERVICE_WORKERS: '1',
  SERVICE_PACK_BYTES: '0',
  SERVICE_CHECKPOINT_MS: '150',
  SERVICE_WAL_FILE_BYTES: String(1 << 20),
  SERVICE_WAL_PREALLOCATE: '0',
};
const EAGER = { ...BASE, SERVICE_LAZY_RECOVERY: '0' };

function spool(args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
}

interface Frame {
  off: number;
  end: number;
  first: number;
  last: number;
}

/** The whole APPEND frames of a buffer from `from` on (a segment file, or a WAL file after its header). */
function framesOf(buf: Buffer, from = 0): (Frame & { topicId: number })[] {
  const out: (Frame & { topicId: number })[] = [];
  for (let off = from; off < buf.length;) {
    const p = probeFrame(buf, off, buf.length);
    if (!p.ok) break;
    if (p.frame.type === FrameType.APPEND) {
      const h = readAppendHead(buf, p.frame);
      out.push({ off, end: off + p.frame.size, first: h.firstSeq, last: h.firstSeq + h.count - 1, topicId: p.frame.topicId });
    }
    off += p.frame.size;
  }
  return out;
}

/** The topic's directory (its id in hex) and its only segment file. */
function segmentOf(dataDir: string): { id: number; file: string } {
  const topics = path.join(dataDir, 'topics');
  const [dir, ...more] = fs.readdirSync(topics);
  assert.ok(dir !== undefined && more.length === 0, 'one topic directory');
  const files = fs.readdirSync(path.join(topics, dir));
  assert.equal(files.length, 1, `one segment file: ${files.join(', ')}`);
  return { id: parseInt(dir, 16), file: path.join(topics, dir, files[0]!) };
}

/** The lowest seq of the topic that any WAL file still holds (Infinity: none). */
function lowestWalSeq(dataDir: string, topicId: number): number {
  let low = Infinity;
  const dir = path.join(dataDir, 'wal');
  for (const n of fs.readdirSync(dir).filter((x) => x.endsWith('.wal'))) {
    for (const f of framesOf(fs.readFileSync(path.join(dir, n)), WAL_HEADER_BYTES)) if (f.topicId === topicId) low = Math.min(low, f.first);
  }
  return low;
}

/** The topic's part in the newest snapshot. */
function newestPart(dataDir: string, name: string): SectionPart | undefined {
  const dir = path.join(dataDir, 'meta');
  const newest = fs
    .readdirSync(dir)
    .filter((n) => /^snapshot-.*\.snap$/.test(n))
    .sort()
    .at(-1);
  if (newest === undefined) return undefined;
  return decodeSnapshot(fs.readFileSync(path.join(dir, newest)))?.topics.find((t) => t.name === name) as SectionPart | undefined;
}

/**
 * Starts a server on `dataDir`. Resolves with the refused start's stderr when it exits; a server
 * that comes up instead (a cut it should have refused) fails the test with what it serves.
 */
async function refusedStart(dataDir: string, env: Record<string, string>, acked: number): Promise<string> {
  let s: Server;
  try {
    s = await startServer({ dataDir, env });
  } catch (err) {
    return (err as Error).message;
  }
  const t = (await client(s.url).get('/v0/topics/t?touch=false')).body as { count: number };
  await s.kill();
  assert.fail(`the server started, serving ${t.count} records of ${acked} acknowledged: the damage was cut as a torn tail`);
}

test('a busy topic: damage in its newest segment below the bytes the checkpoint fsynced refuses the start; a torn tail past them recovers', async () => {
  const s = await startServer({ env: BASE });
  assert.equal((await client(s.url).put('/v0/topics/t', { durability: 'disk' })).status, 201);
  const load = appenders(s, 4, () => 't', 400);
  // Until the WAL no longer holds the first few hundred records and a checkpoint recorded the
  // file while records were in flight.
  const deadline = Date.now() + 60_000;
  for (;;) {
    assert.ok(Date.now() < deadline, 'the WAL of the early frames was unlinked in time');
    await new Promise((r) => setTimeout(r, 100));
    if (!fs.existsSync(path.join(s.dataDir, 'topics'))) continue;
    const low = lowestWalSeq(s.dataDir, segmentOf(s.dataDir).id);
    if (Number.isFinite(low) && low > 500) break;
  }
  await s.kill(); // mid-append: the last checkpoint cut through frames in flight
  await load.stop();
  const acked = load.acked();

  const { id, file } = segmentOf(s.dataDir);
  const frames = framesOf(fs.readFileSync(file));
  const walLow = lowestWalSeq(s.dataDir, id);
  // Frames only the segment holds now: the WAL before the snapshot's cut is gone.
  const onlyHere = frames.filter((f) => f.last < walLow);
  assert.ok(onlyHere.length >= 10, `frames below the WAL's lowest seq ${walLow}: ${onlyHere.length}`);
  const victim = onlyHere[Math.floor(onlyHere.length / 2)]!;
  const tornAt = frames.at(-1)!; // written after the last cut (the WAL has it)
  const copy = `${s.dataDir}-torn`;
  fs.cpSync(s.dataDir, copy, { recursive: true });

  try {
    // A byte flipped in a frame whose WAL is gone: refused, nothing cut.
    const buf = fs.readFileSync(file);
    buf[victim.off + 40] = buf[victim.off + 40]! ^ 0xff;
    fs.writeFileSync(file, buf);
    const refusals = [];
    for (const env of [EAGER, BASE]) {
      refusals.push(await refusedStart(s.dataDir, env, acked));
      assert.deepEqual(fs.readFileSync(file), buf, 'recovery cut nothing');
    }
    // What made it damage: the newest snapshot records the file's fsynced bytes, past the victim.
    const part = newestPart(s.dataDir, 't');
    assert.ok(part, 'the newest snapshot has the topic');
    assert.equal(part.wm, undefined, 'busy at the cut: no watermarks');
    assert.ok(part.own, `the newest snapshot records the segment file's fsynced bytes: ${JSON.stringify(part)}`);
    const [ownFirst, ownBytes] = part.own;
    assert.equal(path.basename(file), `seg-${String(ownFirst).padStart(20, '0')}.log`);
    assert.ok(
      frames.some((f) => f.end === ownBytes),
      `${ownBytes} ends a whole frame`,
    );
    assert.ok(victim.end <= ownBytes && tornAt.off >= ownBytes, `victim at ${victim.off}, last frame at ${tornAt.off}, own ${ownBytes}`);
    for (const msg of refusals) {
      assert.match(msg, /exited (early|before ready) \(code 1,/, msg);
      const errors = msg.split('\n').filter((l) => l.includes('"level":"error"'));
      assert.equal(errors.length, 1, msg);
      const line = JSON.parse(errors[0]!) as { msg: string; err?: unknown };
      assert.equal(line.err, undefined, 'no stack');
      assert.match(
        line.msg,
        new RegExp(
          `^refused to start: recovery failed: ${file.replace(/[.]/g, '\\.')} at offset ${victim.off}: damaged frame below the ${ownBytes} bytes`,
        ),
      );
    }
    const v = spool(['verify', s.dataDir]);
    assert.equal(v.status, 1, v.stdout);
    assert.match(
      v.stdout,
      new RegExp(`DAMAGE: segment \\w+/seg-\\d+\\.log: damaged frame at offset ${victim.off} \\(crc\\), below the ${ownBytes} bytes`),
    );

    // The same crash with a torn tail past the recorded bytes instead: cut, and every
    // acknowledged record is back.
    const tornFile = path.join(copy, path.relative(s.dataDir, file));
    fs.truncateSync(tornFile, tornAt.off + Math.floor((tornAt.end - tornAt.off) / 2));
    const vt = spool(['verify', copy]);
    assert.equal(vt.status, 0, vt.stdout);
    assert.match(vt.stdout, new RegExp(`torn tail at offset ${tornAt.off} `));
    for (const env of [EAGER, BASE]) {
      const s2 = await startServer({ dataDir: copy, env });
      const t = (await client(s2.url).get('/v0/topics/t?touch=false')).body as { count: number };
      assert.ok(t.count >= acked, `${t.count} records, ${acked} acknowledged`);
      assert.equal(await s2.stop(), 0);
    }
  } finally {
    fs.rmSync(copy, { recursive: true, force: true });
  }
});

test('SIGKILL during heavy appends, again and again: every restart recovers every acknowledged record', async () => {
  let s = await startServer({ env: BASE });
  assert.equal((await client(s.url).put('/v0/topics/t', { durability: 'disk' })).status, 201);
  let acked = 0;
  for (let round = 0; round < 12; round++) {
    const load = appenders(s, 4, () => 't', 400);
    await new Promise((r) => setTimeout(r, 300 + ((round * 379) % 900)));
    await s.kill();
    await load.stop();
    acked += load.acked();
    const v = spool(['verify', s.dataDir]);
    assert.equal(v.status, 0, `round ${round}: ${v.stdout}`);
    // Eager and lazy recovery by turns; a refused start throws here.
    s = await startServer({ dataDir: s.dataDir, env: round % 2 ? EAGER : BASE });
    const t = (await client(s.url).get('/v0/topics/t?touch=false')).body as { count: number };
    assert.ok(t.count >= acked, `round ${round}: ${t.count} records, ${acked} acknowledged`);
  }
  assert.equal(await s.stop(), 0);
});
