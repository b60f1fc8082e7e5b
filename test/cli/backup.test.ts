// Online backup and restore: a backup taken by `spool backup` while writers keep appending,
// restored by `spool restore` into a fresh directory, verified, served, and compared record by
// record with the live server: the restored topics are exactly a prefix of the live ones (the
// state as of the backup's point), and hold every record acked before the backup began.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, killServersAfterFile, tempDir, CLI } from '../helpers/server.js';

killServersAfterFile();

const JSON_CT = { 'content-type': 'application/json' };
const TOPICS = ['bk.disk', 'bk.fsync'];

interface Rec {
  $seq: number;
  data: unknown;
}

async function readAll(url: string, topic: string): Promise<Rec[]> {
  const out: Rec[] = [];
  let from = 0;
  for (;;) {
    const r = await fetch(`${url}/v0/topics/${topic}/diff`, {
      method: 'POST',
      headers: JSON_CT,
      body: JSON.stringify({ from_seq: from, limit: 1000 }),
    });
    assert.equal(r.status, 200);
    const b = (await r.json()) as { records: Rec[]; next_from_seq: number; caught_up: boolean };
    out.push(...b.records.map((x) => ({ $seq: x.$seq, data: x.data })));
    from = b.next_from_seq;
    if (b.caught_up || b.records.length === 0) return out;
  }
}

function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('exit', (code) => resolve({ code, stderr }));
  });
}

test('a backup under write load restores to exactly the live state as of its point', async () => {
  const live = await startServer({ env: { SERVICE_WORKERS: '2' } });
  await fetch(`${live.url}/v0/topics/bk.disk`, { method: 'PUT', headers: JSON_CT, body: '{"durability":"disk"}' });
  await fetch(`${live.url}/v0/topics/bk.fsync`, { method: 'PUT', headers: JSON_CT, body: '{"durability":"fsync"}' });
  const acked = new Map<string, number>(TOPICS.map((t) => [t, 0]));
  let stop = false;
  let n = 0;
  const writer = async (topic: string) => {
    while (!stop) {
      const i = n++;
      const r = await fetch(`${live.url}/v0/topics/${topic}`, {
        method: 'POST',
        headers: JSON_CT,
        body: JSON.stringify({ records: [{ data: { i, pad: 'x'.repeat(i % 300) } }, { data: { i, second: true } }] }),
      });
      assert.equal(r.status, 200);
      const b = (await r.json()) as { last_seq: number };
      acked.set(topic, Math.max(acked.get(topic)!, b.last_seq));
    }
  };
  const writers = [...TOPICS, ...TOPICS, 'bk.disk'].map((t) => writer(t));
  await new Promise((r) => setTimeout(r, 400));
  const ackedBefore = new Map(acked);
  const tarFile = path.join(tempDir(), 'b.tar');
  const backup = await run(['backup', tarFile, '--url', live.url]);
  assert.equal(backup.code, 0, backup.stderr);
  await new Promise((r) => setTimeout(r, 200));
  stop = true;
  await Promise.all(writers);
  assert.ok(fs.statSync(tarFile).size > 0);

  const dir = path.join(tempDir(), 'restored');
  const restore = spawnSync(process.execPath, [CLI, 'restore', tarFile, dir], { encoding: 'utf8' });
  assert.equal(restore.status, 0, restore.stderr);
  const again = spawnSync(process.execPath, [CLI, 'restore', tarFile, dir], { encoding: 'utf8' });
  assert.equal(again.status, 2, 'a non-empty directory is refused');
  assert.match(again.stderr, /not empty/);
  const locked = spawnSync(process.execPath, [CLI, 'restore', tarFile, live.dataDir], { encoding: 'utf8' });
  assert.equal(locked.status, 2);
  assert.match(locked.stderr, /in use by process/);
  const verify = spawnSync(process.execPath, [CLI, 'verify', dir], { encoding: 'utf8' });
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  // A backup cut short restores nothing: the directory is left new (absent) or empty.
  const cut = path.join(tempDir(), 'cut.tar');
  fs.writeFileSync(cut, fs.readFileSync(tarFile).subarray(0, Math.floor(fs.statSync(tarFile).size / 2)));
  for (const existing of [false, true]) {
    const target = path.join(tempDir(), 'from-cut');
    if (existing) fs.mkdirSync(target);
    const r = spawnSync(process.execPath, [CLI, 'restore', cut, target], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    // Where the cut falls decides which check sees it first: a torn tar entry, or a tar that ends
    // before its BACKUP_POINT entry. Either way the restore says so and makes nothing.
    assert.match(r.stderr, /(damaged or cut short|no BACKUP_POINT entry: it was cut short).*nothing restored/);
    assert.equal(fs.existsSync(target), existing, 'a directory the restore made is gone');
    if (existing) assert.deepEqual(fs.readdirSync(target), [], 'an empty directory is left empty');
  }

  const restored = await startServer({ dataDir: dir });
  try {
    for (const t of TOPICS) {
      const mine = await readAll(restored.url, t);
      const theirs = await readAll(live.url, t);
      assert.ok(mine.length > 0, `${t}: records restored`);
      const last = mine[mine.length - 1]!.$seq;
      assert.ok(last >= ackedBefore.get(t)!, `${t}: every record acked before the backup (${ackedBefore.get(t)}) is in it (last ${last})`);
      assert.ok(last < acked.get(t)!, `${t}: the backup is a point before the end of the load`);
      assert.deepEqual(
        mine,
        theirs.filter((r) => r.$seq <= last),
        `${t}: record by record, the live topic up to seq ${last}`,
      );
    }
  } finally {
    await restored.stop();
    await live.stop();
  }
});

test('a backup stream that ends early is refused: a clean end before BACKUP_POINT, or a dropped connection', async () => {
  const srv = await startServer();
  const dir = tempDir('spool-backup-cut-');
  const whole = path.join(dir, 'whole.tar');
  try {
    await fetch(`${srv.url}/v0/topics/cut.a`, {
      method: 'POST',
      headers: JSON_CT,
      body: JSON.stringify({ records: [{ data: 'x'.repeat(5000) }] }),
    });
    const ok = await run(['backup', whole, '--url', srv.url]);
    assert.equal(ok.code, 0, ok.stderr);
  } finally {
    await srv.stop();
  }
  const tar = fs.readFileSync(whole);
  // A stand-in for the server that sends the first `bytes` of the tar, then ends the response
  // cleanly (`end`) or drops the connection (`drop`).
  let mode: { bytes: number; how: 'end' | 'drop' } = { bytes: tar.length, how: 'end' };
  const http = await import('node:http');
  const fake = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-tar', 'spool-backup-point': '1:0' });
    res.write(tar.subarray(0, mode.bytes));
    if (mode.how === 'end') res.end();
    else setTimeout(() => res.socket?.destroy(), 50);
  });
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(fake.address() as { port: number }).port}`;
  try {
    const copy = path.join(dir, 'copy.tar');
    assert.equal((await run(['backup', copy, '--url', url])).code, 0, 'the whole tar passes');
    assert.deepEqual(fs.readFileSync(copy), tar);

    mode = { bytes: Math.floor(tar.length / 1024) * 512, how: 'end' };
    const short = path.join(dir, 'short.tar');
    const cut = await run(['backup', short, '--url', url]);
    assert.equal(cut.code, 1, cut.stderr);
    assert.match(cut.stderr, /cut short/);
    assert.equal(fs.existsSync(short), false, 'no tar kept');

    mode = { bytes: 4096, how: 'drop' };
    const dropped = await run(['backup', '-', '--url', url]);
    assert.equal(dropped.code, 5, dropped.stderr);
    assert.match(dropped.stderr, /broke off/);
    assert.doesNotMatch(dropped.stderr, /\n\s+at /, 'no stack trace');
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f.endsWith('.tmp')),
      [],
      'no temp file left',
    );
  } finally {
    fake.close();
  }
});
