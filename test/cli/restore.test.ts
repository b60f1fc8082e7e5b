// `spool restore` refuses what it must not leave behind (docs/CLI.md, docs/OPERATIONS.md "Backup
// and restore"): a backup whose contents are damaged (a flipped byte in a segment, in the WAL, in
// BACKUP_POINT) is exit 1 with the damaged file named and nothing at the target, where the
// unpacking alone would have succeeded; and the target is locked while the restore runs, so a
// server started on it meanwhile refuses to start, and the restore then completes.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, killServersAfterFile, tempDir, CLI } from '../helpers/server.js';
import { spawnServer } from '../support/serverProcess.js';
import { WAL_HEADER_BYTES } from '../../src/format/constants.js';

killServersAfterFile();

const JSON_CT = { 'content-type': 'application/json' };
const RECORDS = 60;

/** A backup tar of a real server holding `RECORDS` records of topic rs.a, in its own segment file. */
async function makeBackup(): Promise<string> {
  const live = await startServer({ env: { SERVICE_PACK_BYTES: '0' } }); // segments, not packs
  try {
    await fetch(`${live.url}/v0/topics/rs.a`, { method: 'PUT', headers: JSON_CT, body: '{"durability":"disk"}' });
    for (let i = 0; i < RECORDS; i++) {
      const r = await fetch(`${live.url}/v0/topics/rs.a`, {
        method: 'POST',
        headers: JSON_CT,
        body: JSON.stringify({ records: [{ data: { i, pad: 'x'.repeat(200) } }] }),
      });
      assert.equal(r.status, 200);
    }
    const tar = path.join(tempDir(), 'b.tar');
    const b = spawnSync(process.execPath, [CLI, 'backup', tar, '--url', live.url], { encoding: 'utf8' });
    assert.equal(b.status, 0, b.stderr);
    return tar;
  } finally {
    await live.stop();
  }
}

/** The tar's entries: name, where the contents start in the file, and their size. */
function entries(tar: Buffer): { name: string; data: number; size: number }[] {
  const out: { name: string; data: number; size: number }[] = [];
  for (let off = 0; off + 512 <= tar.length;) {
    const h = tar.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const name = h.toString('utf8', 0, 100).replace(/\0.*$/s, '');
    const size = parseInt(h.toString('utf8', 124, 136).replace(/\0.*$/s, '').trim(), 8);
    out.push({ name, data: off + 512, size });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

/** A copy of the tar with one bit (`mask`) of `entry`'s contents flipped, at `at(size)`. */
function flipped(tarFile: string, entry: RegExp, at: (size: number) => number, mask = 0x04): string {
  const tar = fs.readFileSync(tarFile);
  const e = entries(tar).find((x) => entry.test(x.name));
  assert.ok(e, `the backup has an entry ${entry}`);
  const copy = Buffer.from(tar);
  copy[e.data + at(e.size)]! ^= mask;
  const out = path.join(tempDir(), 'flipped.tar');
  fs.writeFileSync(out, copy);
  return out;
}

/** A server started on the restored `dataDir` serves every record of rs.a. */
async function servesEveryRecord(dataDir: string): Promise<void> {
  const restored = await startServer({ dataDir });
  try {
    const r = await fetch(`${restored.url}/v0/topics/rs.a/diff`, { method: 'POST', headers: JSON_CT, body: '{"from_seq":0,"limit":1000}' });
    assert.equal(((await r.json()) as { records: unknown[] }).records.length, RECORDS);
  } finally {
    await restored.stop();
  }
}

test('restore refuses a backup with a flipped byte in a segment, the WAL or BACKUP_POINT: exit 1, the file named, nothing restored', async () => {
  const tarFile = await makeBackup();
  const names = entries(fs.readFileSync(tarFile)).map((e) => e.name);
  assert.ok(
    names.some((n) => /^topics\/.*\/seg-\d+\.log$/.test(n)),
    `a segment file in the backup: ${names.join(', ')}`,
  );
  const cases: { what: string; tar: string; message: RegExp }[] = [
    // A byte in the middle of the segment: a frame with whole frames after it.
    {
      what: 'segment',
      tar: flipped(tarFile, /^topics\/.*\/seg-\d+\.log$/, (size) => Math.floor(size / 2)),
      message: /damaged.*segment [0-9a-f]{12}\/seg-\d{20}\.log: damaged frame/,
    },
    // A byte in the WAL's first frame (right after its header)...
    {
      what: 'WAL, first frame',
      tar: flipped(tarFile, /^wal\/\d{20}\.wal$/, () => WAL_HEADER_BYTES + 12),
      message: /damaged.*wal \d{20}\.wal: damaged frame/,
    },
    // ... and in its last: the backup's WAL ends whole at its point, so this is no torn tail.
    {
      what: 'WAL, last frame',
      tar: flipped(tarFile, /^wal\/\d{20}\.wal$/, (size) => size - 20),
      message: /damaged.*wal \d{20}\.wal: damaged frame/,
    },
    // The point's offset, one digit off: JSON still, and no longer where the WAL ends.
    {
      what: 'BACKUP_POINT',
      tar: flipped(tarFile, /^BACKUP_POINT$/, (size) => size - 3, 0x01), // the last digit, still a digit
      message: /damaged.*wal \d{20}\.wal: \d+ bytes long, though the WAL ends at/,
    },
  ];
  for (const c of cases) {
    for (const existing of [false, true]) {
      const target = path.join(tempDir(), 'restored');
      if (existing) fs.mkdirSync(target);
      const r = spawnSync(process.execPath, [CLI, 'restore', c.tar, target], { encoding: 'utf8' });
      assert.equal(r.status, 1, `${c.what}: ${r.stderr}`);
      assert.match(r.stderr, c.message, c.what);
      assert.match(r.stderr, /nothing restored/, c.what);
      assert.equal(fs.existsSync(target), existing, `${c.what}: a directory the restore made is gone`);
      if (existing) assert.deepEqual(fs.readdirSync(target), [], `${c.what}: an empty directory is left empty, without a LOCK`);
    }
  }
  // The intact backup restores, and a server on it has every record.
  const dir = path.join(tempDir(), 'intact');
  const ok = spawnSync(process.execPath, [CLI, 'restore', tarFile, dir], { encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stderr);
  await servesEveryRecord(dir);
});

/** `spool restore - <target>` fed by the test; resolves with its exit and stderr. */
function restoreFromStdin(target: string) {
  const p = spawn(process.execPath, [CLI, 'restore', '-', target], { stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  p.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) => p.on('exit', (code) => resolve({ code, stderr })));
  return { proc: p, exited };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; !cond(); await new Promise((r) => setTimeout(r, 20)))
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
}

test('a server started on a directory being restored refuses to start; the restore completes, and one cut short leaves no LOCK', async () => {
  const tar = fs.readFileSync(await makeBackup());
  const half = Math.floor(tar.length / 2);
  const target = path.join(tempDir(), 'restoring');
  const restore = restoreFromStdin(target);
  after(() => void restore.proc.kill('SIGKILL')); // a failed assertion must not leave it waiting for stdin
  restore.proc.stdin!.write(tar.subarray(0, half));
  await until(() => fs.existsSync(path.join(target, 'meta')), 'the restore to unpack its first entries');

  // A server on the half-restored directory: the restore's lock turns it away, as a server's would.
  const server = spawnServer({ argv: [process.execPath, CLI, 'serve'], dataDir: target, portFile: `${target}-port`, label: 'server' });
  after(() => void server.proc.kill('SIGKILL')); // one that did start (no lock) must not outlive the file
  const code = await new Promise<number | null | 'running'>((resolve) => {
    server.proc.on('exit', (c) => resolve(c));
    setTimeout(() => resolve('running'), 20_000).unref();
  });
  assert.equal(code, 1, server.stderr());
  assert.match(server.stderr(), new RegExp(`refused to start: data directory .* is in use by process ${restore.proc.pid}`));
  assert.match(fs.readFileSync(path.join(target, 'LOCK'), 'utf8'), new RegExp(`^${restore.proc.pid} `), 'the restore still holds the lock');

  restore.proc.stdin!.end(tar.subarray(half));
  const done = await restore.exited;
  assert.equal(done.code, 0, done.stderr);
  assert.match(done.stderr, /restored \d+ files/);
  assert.match(fs.readFileSync(path.join(target, 'LOCK'), 'utf8'), /^0 /, 'the lock is released');
  const verify = spawnSync(process.execPath, [CLI, 'verify', target], { encoding: 'utf8' });
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  await servesEveryRecord(target);

  // Cut short while locked: nothing left, the LOCK included (a new directory is removed).
  const cutTarget = path.join(tempDir(), 'cut');
  const cut = restoreFromStdin(cutTarget);
  after(() => void cut.proc.kill('SIGKILL'));
  cut.proc.stdin!.write(tar.subarray(0, half));
  await until(() => fs.existsSync(path.join(cutTarget, 'LOCK')), 'the restore to lock its target');
  cut.proc.stdin!.end();
  const failed = await cut.exited;
  assert.equal(failed.code, 1, failed.stderr);
  assert.match(failed.stderr, /nothing restored/);
  assert.equal(fs.existsSync(cutTarget), false, 'no directory, no LOCK');
});

test('restore into a directory that cannot be made (/proc/x) is exit 2 at once, not a hang', { skip: !fs.existsSync('/proc/self') }, () => {
  const dir = tempDir('spool-restore-proc-');
  const tar = path.join(dir, 'b.tar');
  fs.writeFileSync(tar, Buffer.alloc(1024));
  const out = spawnSync(process.execPath, [CLI, 'restore', tar, '/proc/spool-no-such'], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(out.signal, null, 'it did not hang until the timeout');
  assert.equal(out.status, 2, out.stderr);
  assert.match(out.stderr, /\/proc\/spool-no-such/);
});
