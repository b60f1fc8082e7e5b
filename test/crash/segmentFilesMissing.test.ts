// Own segment files that are gone or cut short (docs/FORMAT.md "Snapshots", `files`;
// docs/OPERATIONS.md "Checking a data directory"), with the real server. A checkpoint lists the
// files of each topic that hold live records; a start that finds one missing, or with fewer
// bytes of whole frames, refuses in one line naming the file (reads used to skip its records
// without a word), and `spool verify` reports it. Files that really went (reclaimed below the
// first live seq, a deleted topic's directory) start as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CLI, client, killServersAfterFile, startServer, tempDir, type Server } from '../helpers/server.js';
import { probeFrame } from '../../src/format/frame.js';

killServersAfterFile();

const BASE = {
  SERVICE_WORKERS: '1',
  SERVICE_PACK_BYTES: '0',
  SERVICE_SEGMENT_BYTES: '65536',
  SERVICE_CHECKPOINT_MS: '3600000',
  SERVICE_COMPACT_LIVE_PERCENT: '0',
};
const PAD = 'x'.repeat(1000);
const BATCHES = 30;

function spool(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
}

/** The segment files of the data dir's only topic, oldest first. */
function segments(dataDir: string): string[] {
  const topics = path.join(dataDir, 'topics');
  const dirs = fs.readdirSync(topics);
  assert.equal(dirs.length, 1, dirs.join(', '));
  const dir = path.join(topics, dirs[0]!);
  return fs
    .readdirSync(dir)
    .sort()
    .map((n) => path.join(dir, n));
}

/** Where the frames of a segment file start. */
function frameOffsets(file: string): number[] {
  const buf = fs.readFileSync(file);
  const offs: number[] = [];
  for (let off = 0; off < buf.length;) {
    const p = probeFrame(buf, off, buf.length);
    if (!p.ok) break;
    offs.push(off);
    off += p.frame.size;
  }
  return offs;
}

let filledOnce: Promise<string> | undefined;

/**
 * A copy of one data dir: topic `t` with BATCHES batches of ten ~1 KB records in several own
 * segment files, cleanly stopped (made once per file, copied for each test).
 */
async function filled(): Promise<{ dataDir: string }> {
  filledOnce ??= (async () => {
    const s = await startServer({ env: BASE });
    const c = client(s.url);
    assert.equal((await c.put('/v0/topics/t', {})).status, 201);
    for (let b = 1; b <= BATCHES; b++) {
      const r = await c.post('/v0/topics/t', { records: Array.from({ length: 10 }, (_, n) => ({ data: { b, n, pad: PAD } })) });
      assert.equal(r.status, 200, r.text);
    }
    assert.equal(await s.stop(), 0, 'a clean stop: its final checkpoint lists the files');
    assert.ok(segments(s.dataDir).length >= 4, 'several segment files');
    return s.dataDir;
  })();
  const dataDir = tempDir();
  fs.cpSync(await filledOnce, dataDir, { recursive: true });
  return { dataDir };
}

/** A start on the data dir: refused with one error line (returned), no stack. */
function refusedStart(dataDir: string): string {
  const r = spool(['serve'], { ...BASE, SERVICE_DATA_DIR: dataDir, SERVICE_PORT: '0', SERVICE_ALLOW_INSECURE_NO_AUTH: '1' });
  assert.equal(r.status, 1, r.stderr);
  const errors = r.stderr.split('\n').filter((l) => l.includes('"level":"error"'));
  assert.equal(errors.length, 1, r.stderr);
  const line = JSON.parse(errors[0]!) as { msg: string; err?: unknown };
  assert.equal(line.err, undefined, 'no stack');
  return line.msg;
}

function verify(dataDir: string): { status: number | null; stdout: string } {
  const r = spool(['verify', dataDir]);
  return { status: r.status, stdout: r.stdout };
}

const esc = (s: string) => s.replace(/[.]/g, '\\.');

/** Every record of `t` reads back in order. */
async function readsAll(s: Server, want: number): Promise<void> {
  const c = client(s.url);
  let from = 0;
  let n = 0;
  for (;;) {
    const r = await c.post('/v0/topics/t/diff', { from_seq: from, limit: 1000 });
    assert.equal(r.status, 200, r.text);
    const recs = r.body.records as { $seq: number }[];
    for (const rec of recs) assert.equal(rec.$seq, ++n);
    if (recs.length === 0) break;
    from = r.body.next_from_seq;
  }
  assert.equal(n, want);
}

test('the files as written start, and every record reads back (control)', async () => {
  const s = await filled();
  assert.equal(verify(s.dataDir).status, 0);
  const s2 = await startServer({ dataDir: s.dataDir, env: BASE });
  await readsAll(s2, BATCHES * 10);
  await s2.stop();
});

test('a missing sealed segment file refuses the start, naming it, and verify reports it', async () => {
  const s = await filled();
  const segs = segments(s.dataDir);
  const gone = segs[1]!;
  fs.rmSync(gone);
  const v = verify(s.dataDir);
  assert.equal(v.status, 1, v.stdout);
  assert.match(v.stdout, new RegExp(`DAMAGE: segment \\w+/${esc(path.basename(gone))}: missing`));
  assert.match(refusedStart(s.dataDir), new RegExp(`^refused to start: recovery failed: ${esc(gone)}: missing: the snapshot lists it`));
  assert.equal(fs.existsSync(gone), false);
  assert.equal(segments(s.dataDir).length, segs.length - 1, 'nothing else touched');
});

test('a sealed segment file cut at a frame boundary refuses the start', async () => {
  const s = await filled();
  const seg = segments(s.dataDir)[0]!;
  const offs = frameOffsets(seg);
  fs.truncateSync(seg, offs[offs.length - 1]!); // its last frame gone, whole frames before it
  const before = fs.readFileSync(seg);
  const v = verify(s.dataDir);
  assert.equal(v.status, 1, v.stdout);
  assert.match(v.stdout, /cut short/);
  assert.match(
    refusedStart(s.dataDir),
    new RegExp(`^refused to start: recovery failed: ${esc(seg)} at offset \\d+: its whole frames end below`),
  );
  assert.deepEqual(fs.readFileSync(seg), before, 'nothing cut or rewritten');
});

test('the newest segment file missing refuses the start', async () => {
  const s = await filled();
  const segs = segments(s.dataDir);
  fs.rmSync(segs[segs.length - 1]!);
  assert.equal(verify(s.dataDir).status, 1);
  assert.match(refusedStart(s.dataDir), /missing: the snapshot lists it/);
});

test("a live topic's whole directory missing refuses the start", async () => {
  const s = await filled();
  const dir = path.dirname(segments(s.dataDir)[0]!);
  fs.rmSync(dir, { recursive: true });
  assert.equal(verify(s.dataDir).status, 1);
  assert.match(refusedStart(s.dataDir), /missing with its whole directory/);
});

/** A quiet topic `t` with two records in its one own segment file, cleanly stopped. */
async function quiet(): Promise<Server> {
  const s = await startServer({ env: BASE });
  const c = client(s.url);
  assert.equal((await c.put('/v0/topics/t', {})).status, 201);
  assert.equal((await c.post('/v0/topics/t', { records: [{ data: { a: 1 } }, { data: { a: 2 } }] })).status, 200);
  assert.equal(await s.stop(), 0);
  assert.equal(segments(s.dataDir).length, 1);
  return s;
}

test("a quiet topic's one own file missing, or its directory, refuses the start (it is not restored asleep without it)", async () => {
  let s = await quiet();
  fs.rmSync(segments(s.dataDir)[0]!);
  assert.match(refusedStart(s.dataDir), /missing: the snapshot lists it/);
  s = await quiet();
  fs.rmSync(path.dirname(segments(s.dataDir)[0]!), { recursive: true });
  assert.equal(verify(s.dataDir).status, 1);
  assert.match(refusedStart(s.dataDir), /missing with its whole directory/);
});

test('segments reclaimed below the first live seq, and a topic deleted before a SIGKILL, start as before', async () => {
  const s = await filled();
  const s2 = await startServer({ dataDir: s.dataDir, env: { ...BASE, SERVICE_CHECKPOINT_MS: '200' } });
  const c = client(s2.url);
  // Everything but the last batch deleted: the sealed files below it are reclaimed.
  const del = await c.post('/v0/topics/t/delete', { before_seq: (BATCHES - 1) * 10 + 1 });
  assert.equal(del.status, 200, del.text);
  const before = segments(s.dataDir).length;
  for (let i = 0; i < 100 && segments(s.dataDir).length === before; i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(segments(s.dataDir).length < before, 'reclaimed');
  await s2.kill();
  const s3 = await startServer({ dataDir: s.dataDir, env: BASE });
  const d = await client(s3.url).post('/v0/topics/t/diff', { from_seq: 0, limit: 1000 });
  assert.equal(d.status, 200, d.text);
  assert.equal(d.body.records.length, 10);
  // A delete of the topic after the last checkpoint, then a SIGKILL while its directory goes.
  assert.equal((await client(s3.url).del('/v0/topics/t')).status, 200);
  await s3.kill();
  const s4 = await startServer({ dataDir: s.dataDir, env: BASE });
  assert.equal((await client(s4.url).get('/v0/topics/t')).status, 404);
  await s4.stop();
  assert.deepEqual(fs.readdirSync(path.join(s.dataDir, 'topics')), [], 'no directory or leftover of it');
});

test('a start that falls back to an older snapshot does not ask for the files it lists (a later checkpoint reclaimed them)', async () => {
  const s = await filled();
  const meta = path.join(s.dataDir, 'meta');
  const snaps = () => fs.readdirSync(meta).filter((n) => n.startsWith('snapshot-') && n.endsWith('.snap'));
  const s2 = await startServer({ dataDir: s.dataDir, env: { ...BASE, SERVICE_CHECKPOINT_MS: '200' } });
  const c = client(s2.url);
  // A checkpoint of this run that lists every file (the one of the clean stop went with its WAL).
  const first = new Set(snaps());
  assert.equal((await c.post('/v0/topics/t', { records: [{ data: { last: true } }] })).status, 200);
  for (let i = 0; i < 100 && snaps().every((n) => first.has(n)); i++) await new Promise((r) => setTimeout(r, 100));
  const older = snaps().find((n) => !first.has(n));
  assert.ok(older, 'a checkpoint after the append');
  const del = await c.post('/v0/topics/t/delete', { before_seq: (BATCHES - 1) * 10 + 1 });
  assert.equal(del.status, 200, del.text);
  const before = segments(s.dataDir).length;
  for (let i = 0; i < 100 && segments(s.dataDir).length === before; i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(segments(s.dataDir).length < before, 'reclaimed: files the older snapshot lists are gone');
  assert.equal(await s2.stop(), 0);
  const newer = snaps().filter((n) => n > older);
  assert.ok(snaps().includes(older) && newer.length > 0, `the older snapshot kept beside newer ones: ${snaps().join(', ')}`);
  // Every newer snapshot damaged: recovery takes the older one and replays the WAL since it.
  for (const n of newer) {
    const f = path.join(meta, n);
    const buf = fs.readFileSync(f);
    buf[buf.length - 3]! ^= 0xff;
    fs.writeFileSync(f, buf);
  }
  const v = verify(s.dataDir);
  assert.doesNotMatch(v.stdout, /DAMAGE: segment/, v.stdout);
  const s3 = await startServer({ dataDir: s.dataDir, env: BASE });
  assert.match(s3.stderr(), /is damaged; trying an older one/);
  const d = await client(s3.url).post('/v0/topics/t/diff', { from_seq: 0, limit: 1000 });
  assert.equal(d.status, 200, d.text);
  assert.deepEqual(
    (d.body.records as { $seq: number }[]).map((r) => r.$seq),
    Array.from({ length: 11 }, (_, i) => (BATCHES - 1) * 10 + 1 + i),
    'the delete replayed from the WAL',
  );
  await s3.stop();
});

test("a deleted topic's directory left renamed by a crash goes at the next start, even when the replay writes the topic again", async () => {
  const s = await startServer({ env: BASE });
  const c = client(s.url);
  assert.equal((await c.put('/v0/topics/t', {})).status, 201);
  for (let b = 1; b <= 3; b++)
    assert.equal(
      (await c.post('/v0/topics/t', { records: Array.from({ length: 10 }, (_, n) => ({ data: { b, n, pad: PAD } })) })).status,
      200,
    );
  const dir = path.dirname(segments(s.dataDir)[0]!);
  const copy = `${dir}.copy`;
  fs.cpSync(dir, copy, { recursive: true });
  assert.equal((await c.del('/v0/topics/t')).status, 200);
  for (let i = 0; i < 100 && (fs.existsSync(dir) || fs.existsSync(`${dir}.deleted`)); i++) await new Promise((r) => setTimeout(r, 50));
  await s.kill();
  // What a SIGKILL between the rename and the removal leaves (the files still in it).
  fs.renameSync(copy, `${dir}.deleted`);
  // No checkpoint since the start: the replay writes the topic's records again, then deletes it.
  const s2 = await startServer({ dataDir: s.dataDir, env: BASE });
  assert.equal((await client(s2.url).get('/v0/topics/t')).status, 404);
  for (let i = 0; i < 100 && fs.readdirSync(path.join(s.dataDir, 'topics')).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(fs.readdirSync(path.join(s.dataDir, 'topics')), [], 'neither the directory nor its leftover');
  assert.equal(await s2.stop(), 0);
  assert.equal(verify(s.dataDir).status, 0);
});
