// Damage inside the bytes of a topic's newest segment file that the snapshot records as durable
// (docs/OPERATIONS.md "Checking a data directory"; docs/ARCHITECTURE.md "Storage faults"), with
// the real server: those bytes were fsynced before the snapshot was written, and the WAL before
// its cut may be gone, so damage there is never a torn tail. Recovery refuses to start with one
// line naming the file and offset, as for a sealed segment, and cuts nothing (`spool verify`
// still reports it); a sleeping topic restored asleep fails its wake with an answer that names
// its segment file. A torn tail past those bytes (a SIGKILL after more appends) is still cut
// and the WAL's copy rewritten.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CLI, client, killServersAfterFile, startServer, type Server } from '../helpers/server.js';
import { probeFrame } from '../../src/format/frame.js';

killServersAfterFile();

const BASE = { SERVICE_WORKERS: '1', SERVICE_PACK_BYTES: '0', SERVICE_CHECKPOINT_MS: '3600000' };
const EAGER = { ...BASE, SERVICE_LAZY_RECOVERY: '0' };

function spool(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
}

/** The topic's only segment file. */
function segmentOf(dataDir: string): string {
  const topics = path.join(dataDir, 'topics');
  const files = fs.readdirSync(topics).flatMap((d) => fs.readdirSync(path.join(topics, d)).map((n) => path.join(topics, d, n)));
  assert.equal(files.length, 1, `one segment file: ${files.join(', ')}`);
  return files[0]!;
}

/** Offsets of the whole frames of a segment file, and where they end. */
function frames(file: string): { offs: number[]; end: number } {
  const buf = fs.readFileSync(file);
  const offs: number[] = [];
  let off = 0;
  while (off < buf.length) {
    const p = probeFrame(buf, off, buf.length);
    if (!p.ok) break;
    offs.push(off);
    off += p.frame.size;
  }
  return { offs, end: off };
}

function flip(file: string, at: number): void {
  const buf = fs.readFileSync(file);
  buf[at] = buf[at]! ^ 0xff;
  fs.writeFileSync(file, buf);
}

/** An fsync topic `t` with ten batches of ten records in one own segment file, cleanly stopped. */
async function tenBatches(): Promise<Server> {
  const s = await startServer({ env: BASE });
  const c = client(s.url);
  assert.equal((await c.put('/v0/topics/t', { durability: 'fsync' })).status, 201);
  for (let b = 1; b <= 10; b++) {
    const r = await c.post('/v0/topics/t', { records: Array.from({ length: 10 }, (_, n) => ({ data: { b, n: n + 1 } })) });
    assert.equal(r.status, 200, r.text);
  }
  assert.equal(await s.stop(), 0, 'a clean stop: its final checkpoint records the file');
  return s;
}

function verify(dataDir: string): { status: number | null; stdout: string } {
  const r = spool(['verify', dataDir]);
  return { status: r.status, stdout: r.stdout };
}

test('damage the snapshot covers in the newest segment refuses the start (every topic loaded) and nothing is cut', async () => {
  const s = await tenBatches();
  const seg = segmentOf(s.dataDir);
  const { offs } = frames(seg);
  assert.equal(offs.length, 10);
  flip(seg, offs[1]! + 40); // inside the second of ten frames: nine after it
  const before = fs.readFileSync(seg);
  let v = verify(s.dataDir);
  assert.equal(v.status, 1, v.stdout);
  assert.match(
    v.stdout,
    new RegExp(`DAMAGE: segment \\w+/seg-\\d+\\.log: damaged frame at offset ${offs[1]} \\(crc\\), below the \\d+ bytes`),
  );

  const r = spool(['serve'], { ...EAGER, SERVICE_DATA_DIR: s.dataDir, SERVICE_PORT: '0', SERVICE_ALLOW_INSECURE_NO_AUTH: '1' });
  assert.equal(r.status, 1, r.stderr);
  const errors = r.stderr.split('\n').filter((l) => l.includes('"level":"error"'));
  assert.equal(errors.length, 1, r.stderr);
  const line = JSON.parse(errors[0]!) as { msg: string; err?: unknown };
  assert.equal(line.err, undefined, 'no stack');
  assert.match(
    line.msg,
    new RegExp(`^refused to start: recovery failed: ${seg.replace(/[.]/g, '\\.')} at offset ${offs[1]}: damaged frame below`),
  );
  assert.deepEqual(fs.readFileSync(seg), before, 'recovery cut nothing');
  v = verify(s.dataDir);
  assert.equal(v.status, 1, `still reported: ${v.stdout}`);
});

test('damage in the only frame of the newest segment is damage, not a torn tail; a woken topic names its segment file', async () => {
  const s = await tenBatches();
  const seg = segmentOf(s.dataDir);
  const { offs, end } = frames(seg);
  flip(seg, offs[9]! + 40); // the last frame: no valid frame after it
  const before = fs.readFileSync(seg);
  let v = verify(s.dataDir);
  assert.equal(v.status, 1, v.stdout);
  assert.doesNotMatch(v.stdout, /torn tail/);
  assert.match(
    v.stdout,
    new RegExp(`damaged frame at offset ${offs[9]} \\(crc\\), below the ${end} bytes the newest snapshot records as durable`),
  );

  // Lazy recovery restores the quiet topic asleep (its file as at the cut); the wake fails.
  const s2 = await startServer({ dataDir: s.dataDir, env: BASE });
  const got = await client(s2.url).get('/v0/topics/t?touch=false');
  assert.equal(got.status, 500, got.text);
  assert.doesNotMatch(got.body.error.message, /pack/);
  assert.match(
    got.body.error.message,
    new RegExp(`^topic t could not be read back from its segment file: .*seg-\\d+\\.log at offset ${offs[9]}:`),
  );
  assert.equal(await s2.stop(), 0);
  assert.match(s2.stderr(), /"level":"error".*"msg":"topic t could not be read back from its segment file/);
  assert.deepEqual(fs.readFileSync(seg), before, 'nothing was cut');
  v = verify(s.dataDir);
  assert.equal(v.status, 1, v.stdout);

  // Every topic loaded: refused.
  const r = spool(['serve'], { ...EAGER, SERVICE_DATA_DIR: s.dataDir, SERVICE_PORT: '0', SERVICE_ALLOW_INSECURE_NO_AUTH: '1' });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /refused to start: recovery failed: .*seg-\d+\.log at offset \d+: damaged frame below/);
  assert.deepEqual(fs.readFileSync(seg), before);
});

test('after more appends and SIGKILL: a torn tail past the covered bytes is cut and replayed, damage below them refuses', async () => {
  for (const lazy of [true, false]) {
    const s = await tenBatches();
    const seg = segmentOf(s.dataDir);
    const covered = frames(seg).end;
    const s2 = await startServer({ dataDir: s.dataDir, env: lazy ? BASE : EAGER });
    const c = client(s2.url);
    const r = await c.post('/v0/topics/t', { records: Array.from({ length: 10 }, (_, n) => ({ data: { b: 11, n: n + 1 } })) });
    assert.equal(r.status, 200, r.text);
    const deadline = Date.now() + 10_000;
    while (fs.statSync(seg).size <= covered) {
      assert.ok(Date.now() < deadline, 'the append reached the segment file');
      await new Promise((res) => setTimeout(res, 20));
    }
    await s2.kill();
    const grown = fs.readFileSync(seg);
    const dir = `${s.dataDir}-copy`;
    fs.cpSync(s.dataDir, dir, { recursive: true });
    try {
      // A torn tail: the new frame cut halfway, as a crash mid-write leaves it (past the covered bytes).
      fs.writeFileSync(seg, grown.subarray(0, covered + Math.floor((grown.length - covered) / 2)));
      let v = verify(s.dataDir);
      assert.equal(v.status, 0, v.stdout);
      assert.match(v.stdout, new RegExp(`torn tail at offset ${covered} `));
      const s3 = await startServer({ dataDir: s.dataDir, env: lazy ? BASE : EAGER });
      const t = (await client(s3.url).get('/v0/topics/t?touch=false')).body;
      assert.equal(t.count, 110, `every acked record is back (${lazy ? 'lazy' : 'eager'}): ${JSON.stringify(t)}`);
      const all = (await client(s3.url).post('/v0/topics/t/diff', { from_seq: 0, limit: 1000 })).body;
      assert.equal(all.records.length, 110);
      assert.equal(all.tombstone, null);
      assert.equal(await s3.stop(), 0);
      v = verify(s.dataDir);
      assert.equal(v.status, 0, v.stdout);

      // The same crash, but a byte flipped below what the snapshot covers: refused, nothing cut.
      const seg2 = path.join(dir, path.relative(s.dataDir, seg));
      flip(seg2, frames(seg2).offs[3]! + 40);
      const damaged = fs.readFileSync(seg2);
      const env = { ...(lazy ? BASE : EAGER), SERVICE_DATA_DIR: dir, SERVICE_PORT: '0', SERVICE_ALLOW_INSECURE_NO_AUTH: '1' };
      const refused = spool(['serve'], env);
      assert.equal(refused.status, 1, `${lazy ? 'lazy' : 'eager'}: ${refused.stderr}`);
      assert.match(refused.stderr, /refused to start: recovery failed: .*seg-\d+\.log at offset \d+: damaged frame below/);
      assert.deepEqual(fs.readFileSync(seg2), damaged, 'recovery cut nothing');
      v = verify(dir);
      assert.equal(v.status, 1, v.stdout);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
});
