// `spool wal-dump` names the LEASES events a real server wrote (docs/QUEUES.md "Durability and
// restarts"): claimed with node and deadline, extended, released with a ready-at time, and the
// /work flag on a stream's claim and release. The frame codec itself: test/unit/leasesFrame.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, client, CLI } from '../helpers/server.js';
import { openWork } from '../helpers/workStream.js';

test('spool wal-dump names the LEASES events a server wrote', async () => {
  const srv = await startServer({ env: { SERVICE_WORKERS: '1' } });
  const c = client(srv.url);
  try {
    const q = 'dump.jobs';
    assert.equal((await c.put(`/v0/topics/${q}`, { type: 'queue', durability: 'disk', lease_ms: 60_000 })).status, 201);
    assert.equal((await c.post(`/v0/topics/${q}`, { records: [{ data: 1 }, { data: 2 }, { data: 3 }] })).status, 200);
    const cl = await c.post(`/v0/topics/${q}/claim`, { node: 'wörker-1', max: 2 });
    assert.equal(cl.status, 200, cl.text);
    assert.deepEqual(
      cl.body.claimed.map((j: any) => j.$seq),
      [1, 2],
    );
    assert.equal((await c.post(`/v0/topics/${q}/extend`, { node: 'wörker-1', seqs: [1], lease_ms: 120_000 })).body.extended, 1);
    assert.equal((await c.post(`/v0/topics/${q}/nack`, { node: 'wörker-1', seqs: [2], delay_ms: 5000 })).body.nacked, 1);
    // a /work stream takes job 3 and gives it back when it closes
    const s = await openWork(srv.url, q, { query: { node: 'pusher', max: '1' } });
    assert.equal(s.status, 200);
    const job = await s.nextJob(5000);
    assert.equal((job.data as any).$seq, 3);
    await s.close();
    const deadline = Date.now() + 5000;
    while ((await c.get(`/v0/topics/${q}?touch=false`)).body.queue.in_flight !== 1) {
      assert.ok(Date.now() < deadline, 'the /work lease was released');
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  const out = spawnSync(process.execPath, [CLI, 'wal-dump', srv.dataDir], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  const leases = out.stdout.split('\n').filter((l) => / LEASES /.test(l));
  assert.ok(leases.length >= 4, `at least 4 LEASES frames (claim, extend, nack, work claim, work release):\n${out.stdout}`);
  const all = leases.join('\n');
  assert.match(
    all,
    /claimed 1 by "wörker-1" at \d{13}, claimed 2 by "wörker-1" at \d{13}/,
    'one frame for the claim pass, both jobs with node and deadline',
  );
  assert.match(all, /extended 1 at \d{13}/);
  assert.match(all, /released 2 at \d{13}/, 'a nack with a delay names its ready-at time');
  assert.match(all, /claimed 3 by "pusher" \(work\) at \d{13}/);
  assert.match(all, /released 3 \(work\)(?! at)/, 'a /work release is ready at once (no time)');
});

/** Runs `spool wal-dump` on `dir`: its status and the lines of the WAL's part (the packs' follow it). */
function walDump(dir: string): { status: number | null; lines: string[]; stderr: string } {
  const out = spawnSync(process.execPath, [CLI, 'wal-dump', dir], { encoding: 'utf8' });
  const lines = out.stdout.split('\n');
  const packs = lines.findIndex((l) => l.startsWith('packs/'));
  return { status: out.status, lines: packs < 0 ? lines : lines.slice(0, packs), stderr: out.stderr };
}

test('spool wal-dump tells damage (whole frames after it) from a torn tail, as verify does', async () => {
  const srv = await startServer({ env: { SERVICE_WORKERS: '1' } });
  const c = client(srv.url);
  assert.equal((await c.put('/v0/topics/dumped', { durability: 'disk' })).status, 201);
  for (let i = 0; i < 3; i++)
    assert.equal((await c.post('/v0/topics/dumped', { records: [{ data: { i, pad: 'x'.repeat(100) } }] })).status, 200);
  await srv.kill(); // the frames stay in the WAL, no checkpoint after them
  const before = walDump(srv.dataDir);
  assert.equal(before.status, 0, before.stderr);
  const appends = before.lines.filter((l) => / APPEND topic /.test(l)).map((l) => Number(/@(\d+)/.exec(l)![1]));
  assert.equal(appends.length, 3, before.lines.join('\n'));
  const walFile = path.join(srv.dataDir, 'wal', before.lines.find((l) => /^\S+: \d+ bytes/.test(l))!.split(':')[0]!);
  const bytes = fs.readFileSync(walFile);

  // A byte flipped in the first record's frame: the two after it are whole, so it is damage.
  const damaged = Buffer.from(bytes);
  damaged[appends[0]! + 40]! ^= 0xff;
  fs.writeFileSync(walFile, damaged);
  const d = walDump(srv.dataDir);
  assert.equal(d.status, 1, 'damage is exit 1');
  const next = before.lines.map((l) => Number(/^ {2}@(\d+)/.exec(l)?.[1] ?? -1)).find((o) => o > appends[0]!);
  assert.match(d.lines.join('\n'), new RegExp(`@${appends[0]} DAMAGE \\(crc\\): whole frames follow from @${next}\n`));
  assert.equal(d.lines.filter((l) => / APPEND topic /.test(l)).length, 2, 'the listing goes on after the damage');
  assert.match(d.stderr, /1 damaged place/);
  // A start on that damage takes it as a torn tail (a power loss can leave one), but says so at
  // warn with the file and offset, and keeps the bytes after it in wal/quarantine/.
  const copy = `${srv.dataDir}-started`;
  fs.cpSync(srv.dataDir, copy, { recursive: true });
  const started = await startServer({ dataDir: copy });
  assert.equal(await started.stop(), 0);
  const warn = started
    .stderr()
    .split('\n')
    .find((l) => l.includes('"level":"warn"') && l.includes('a frame did not check'));
  assert.ok(warn, started.stderr());
  assert.ok(warn.includes(`${path.basename(walFile)} at offset ${appends[0]}`), warn);
  assert.ok(fs.readdirSync(path.join(copy, 'wal', 'quarantine')).includes(`${path.basename(walFile)}.${appends[0]}`));
  fs.rmSync(copy, { recursive: true, force: true });

  // The last frame cut short (its second half zeroed, as a crash mid-write leaves it): a torn tail.
  const torn = Buffer.from(bytes);
  const lastSize = Number(/ (\d+)B /.exec(before.lines.find((l) => l.includes(`@${appends[2]} `))!)![1]);
  torn.fill(0, appends[2]! + lastSize / 2, appends[2]! + lastSize);
  fs.writeFileSync(walFile, torn);
  const t = walDump(srv.dataDir);
  assert.equal(t.status, 0, t.stderr);
  assert.match(t.lines.join('\n'), new RegExp(`@${appends[2]} torn tail \\(crc\\): \\d+ bytes to the end, no whole frame after it`));
  assert.doesNotMatch(t.lines.join('\n'), /DAMAGE/);
  // verify applies the same rule: the WAL's pre-created next file (zeros) is no sign of damage.
  const v = spawnSync(process.execPath, [CLI, 'verify', srv.dataDir], { encoding: 'utf8' });
  assert.equal(v.status, 0, v.stdout + v.stderr);
  assert.match(v.stdout, /torn tail at offset/);

  // A damaged header in front of frames: the file cannot be read, damage (exit 1), as for verify.
  const header = Buffer.from(bytes);
  header[20]! ^= 0xff;
  fs.writeFileSync(walFile, header);
  const h = walDump(srv.dataDir);
  assert.equal(h.status, 1, 'a damaged header is exit 1');
  assert.match(h.lines.join('\n'), /\(header: [^)]+\)\n {2}@0 DAMAGE \(header: /);
});
