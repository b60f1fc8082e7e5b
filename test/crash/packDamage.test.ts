// The pack being written at a checkpoint's cut: the snapshot records how many of its bytes the
// checkpoint fsynced (the section's `tail`, docs/FORMAT.md "Snapshots"), with the real server.
// Once the WAL files of its early frames are unlinked, those bytes are their only copy. Recovery
// that scans every pack (SERVICE_LAZY_RECOVERY=0) refuses a flipped byte there with one line
// naming the pack and offset, and cuts nothing (before, it read it as the pack's torn tail, cut
// the pack there and served fewer records than were acknowledged, saying nothing); `spool
// verify` reports it. A torn tail past those bytes (a SIGKILL mid-write) is still cut and the
// WAL's copy replayed, and the recorded bytes never exceed what was written: a SIGKILL during
// heavy appends, again and again, always restarts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CLI, client, killServersAfterFile, startServer, type Server } from '../helpers/server.js';
import { appenders } from '../support/appenders.js';
import { probeFrame, readAppendHead } from '../../src/format/frame.js';
import { WAL_HEADER_BYTES } from '../../src/format/constants.js';
import { decodeSnapshot } from '../../src/storage/snapshot.js';

killServersAfterFile();

// Topics small enough to stay in the packs, one pack file, small WAL files and frequent
// checkpoints: the WAL of the early frames is unlinked while the pack is still being written.
const BASE = {
  SERVICE_WORKERS: '1',
  SERVICE_CHECKPOINT_MS: '150',
  SERVICE_WAL_FILE_BYTES: String(1 << 20),
  SERVICE_WAL_PREALLOCATE: '0',
};
const EAGER = { ...BASE, SERVICE_LAZY_RECOVERY: '0' };
// Enough topics that none holds the 64 frames after which it would roll to an own file: a topic
// that rolls has its packed frames fsynced then, past what the snapshot records.
const TOPICS = Array.from({ length: 200 }, (_, i) => `p${i}`);

interface Frame {
  off: number;
  end: number;
  topicId: number;
  first: number;
  last: number;
}

/** The whole frames of a buffer from `from` on (a pack, or a WAL file after its header). */
function framesOf(buf: Buffer, from = 0): Frame[] {
  const out: Frame[] = [];
  for (let off = from; off < buf.length;) {
    const p = probeFrame(buf, off, buf.length);
    if (!p.ok) break;
    const h = p.frame.type === 5 ? readAppendHead(buf, p.frame) : undefined; // APPEND
    if (h) out.push({ off, end: off + p.frame.size, topicId: p.frame.topicId, first: h.firstSeq, last: h.firstSeq + h.count - 1 });
    off += p.frame.size;
  }
  return out;
}

/** Per topic id, the lowest seq any WAL file still holds. */
function lowestWalSeqs(dataDir: string): Map<number, number> {
  const low = new Map<number, number>();
  const dir = path.join(dataDir, 'wal');
  for (const n of fs.readdirSync(dir).filter((x) => x.endsWith('.wal')))
    for (const f of framesOf(fs.readFileSync(path.join(dir, n)), WAL_HEADER_BYTES))
      low.set(f.topicId, Math.min(low.get(f.topicId) ?? Infinity, f.first));
  return low;
}

function walFileNos(dataDir: string): number[] {
  return fs
    .readdirSync(path.join(dataDir, 'wal'))
    .filter((x) => x.endsWith('.wal'))
    .map((x) => Number(x.slice(0, -4)));
}

async function total(s: Server): Promise<number> {
  let n = 0;
  for (const t of TOPICS) n += ((await client(s.url).get(`/v0/topics/${t}?touch=false`)).body as { count: number }).count;
  return n;
}

test('the pack being written: damage below the bytes the checkpoint fsynced refuses an eager start; a torn tail past them recovers', async (t) => {
  const s = await startServer({ env: BASE });
  for (const t of TOPICS) assert.equal((await client(s.url).put(`/v0/topics/${t}`, { durability: 'disk' })).status, 201);
  const load = appenders(s, 4, (w, b) => TOPICS[(b * 4 + w) % TOPICS.length]!, 100, 'y');
  const deadline = Date.now() + 60_000;
  // Until the first two WAL files are gone (the early frames live only in the pack now).
  while (!(walFileNos(s.dataDir).length > 0 && Math.min(...walFileNos(s.dataDir)) > 2)) {
    assert.ok(Date.now() < deadline, 'the early WAL files were unlinked in time');
    await new Promise((r) => setTimeout(r, 100));
  }
  await s.kill(); // mid-append
  await load.stop();
  const acked = load.acked();

  const packs = fs.readdirSync(path.join(s.dataDir, 'packs'));
  assert.equal(packs.length, 1, `one pack: ${packs.join(', ')}`);
  assert.ok(!fs.existsSync(path.join(s.dataDir, 'topics')), 'no topic rolled to an own file');
  const pack = path.join(s.dataDir, 'packs', packs[0]!);
  const frames = framesOf(fs.readFileSync(pack));
  const low = lowestWalSeqs(s.dataDir);
  // A frame in the first quarter of the pack whose topic's WAL no longer holds it.
  const victim = frames.slice(0, frames.length >> 2).find((f) => f.last < (low.get(f.topicId) ?? Infinity) && f.off > 0);
  assert.ok(victim, 'an early frame only the pack holds');
  const tornAt = frames.at(-1)!;
  const copy = `${s.dataDir}-torn`;
  fs.cpSync(s.dataDir, copy, { recursive: true });

  try {
    const buf = fs.readFileSync(pack);
    buf[victim.off + 40] = buf[victim.off + 40]! ^ 0xff;
    fs.writeFileSync(pack, buf);
    let started: Server | undefined;
    let refusal = '';
    try {
      started = await startServer({ dataDir: s.dataDir, env: EAGER });
    } catch (err) {
      refusal = (err as Error).message;
    }
    if (started) {
      const n = await total(started);
      await started.kill();
      assert.fail(`the server started, serving ${n} records of ${acked} acknowledged: the damage was cut as a torn tail`);
    }
    assert.deepEqual(fs.readFileSync(pack), buf, 'recovery cut nothing');
    // What made it damage: the newest snapshot records the pack's fsynced bytes, past the victim.
    const meta = path.join(s.dataDir, 'meta');
    const newest = fs
      .readdirSync(meta)
      .filter((n) => n.endsWith('.snap'))
      .sort()
      .at(-1)!;
    const tail = decodeSnapshot(fs.readFileSync(path.join(meta, newest)))?.packs?.[0]?.tail;
    assert.ok(tail && tail[0] === packs[0] && tail[2] !== undefined, `the pack's fsynced bytes recorded: ${JSON.stringify(tail)}`);
    const fsynced = tail[2];
    assert.ok(victim.end <= fsynced, `victim at ${victim.off}, fsynced ${fsynced}`);
    const errors = refusal.split('\n').filter((l) => l.includes('"level":"error"'));
    assert.equal(errors.length, 1, refusal);
    assert.match(
      (JSON.parse(errors[0]!) as { msg: string }).msg,
      new RegExp(
        `^refused to start: recovery failed: ${pack.replace(/[.]/g, '\\.')} at offset ${victim.off}: damaged frame \\(crc\\) below the ${fsynced} bytes`,
      ),
    );
    const v = spawnSync(process.execPath, [CLI, 'verify', s.dataDir], { encoding: 'utf8' });
    assert.equal(v.status, 1, v.stdout);
    assert.match(v.stdout, new RegExp(`DAMAGE: pack ${packs[0]}: damaged at offset ${victim.off} \\(crc\\), below the ${fsynced} bytes`));

    // The same crash with a torn tail past the fsynced bytes instead: cut, every record back. (A
    // SIGKILL right after a checkpoint's flush leaves no frame past them: nothing to tear then.)
    if (tornAt.off < fsynced) {
      t.diagnostic(`the last frame (at ${tornAt.off}) is below the fsynced ${fsynced} bytes: no torn tail to try`);
      return;
    }
    fs.truncateSync(path.join(copy, 'packs', packs[0]!), tornAt.off + Math.floor((tornAt.end - tornAt.off) / 2));
    for (const env of [EAGER, BASE]) {
      const s2 = await startServer({ dataDir: copy, env });
      const n = await total(s2);
      assert.ok(n >= acked, `${n} records, ${acked} acknowledged`);
      assert.equal(await s2.stop(), 0);
    }
  } finally {
    fs.rmSync(copy, { recursive: true, force: true });
  }
});

test('SIGKILL during heavy appends to packed topics, again and again: every restart (eager and lazy by turns) recovers every acknowledged record', async () => {
  let s = await startServer({ env: BASE });
  for (const t of TOPICS) assert.equal((await client(s.url).put(`/v0/topics/${t}`, { durability: 'disk' })).status, 201);
  let acked = 0;
  for (let round = 0; round < 8; round++) {
    const load = appenders(s, 4, (w, b) => TOPICS[(b * 4 + w) % TOPICS.length]!, 100, 'y');
    await new Promise((r) => setTimeout(r, 300 + ((round * 379) % 700)));
    await s.kill();
    await load.stop();
    acked += load.acked();
    // A refused start (a recorded fsynced size past what the crash left) throws here.
    s = await startServer({ dataDir: s.dataDir, env: round % 2 ? BASE : EAGER });
    const n = await total(s);
    assert.ok(n >= acked, `round ${round}: ${n} records, ${acked} acknowledged`);
  }
  assert.equal(await s.stop(), 0);
});
