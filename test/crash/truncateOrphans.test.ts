// SERVICE_RECOVERY_TRUNCATE through a real server (docs/ARCHITECTURE.md "Checkpoints and
// recovery"; docs/OPERATIONS.md "A damaged WAL"): topics created after the last checkpoint, a
// SIGKILL, the header of the first WAL file after the snapshot's cut overwritten, and a start
// with SERVICE_RECOVERY_TRUNCATE=1. The WAL from the damage on is dropped (moved to
// wal/quarantine/), and with it the only record that those topics exist; their own segment files
// and the pack holding their frames are the only other copy of their acknowledged records. That
// start used to remove the topic's directory as an orphan and, at its first checkpoint, unlink
// the pack (nothing live in it); now both are kept under quarantine/boot-<epoch>/, byte for byte,
// and one warn line says what went where. The next, normal, start leaves them alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { CLI, client, killServersAfterFile, startServer, tempDir } from '../helpers/server.js';
import { until } from '../helpers/until.js';

killServersAfterFile();

// One worker; topics stay packed below 4 KiB, so `big` (10 KB in one batch) has its own file.
const env = { SERVICE_WORKERS: '1', SERVICE_PACK_BYTES: '4096' };

const ls = (dir: string): string[] => (fs.existsSync(dir) ? fs.readdirSync(dir).sort() : []);
const snapshots = (dataDir: string) => ls(path.join(dataDir, 'meta')).filter((n) => n.endsWith('.snap'));

test(
  'SERVICE_RECOVERY_TRUNCATE keeps the segments and packs of topics only the dropped WAL created, in quarantine/',
  { timeout: 120_000 },
  async () => {
    const dataDir = tempDir('spool-trunc-orphans-');
    let srv = await startServer({ dataDir, env });
    let c = client(srv.url);
    assert.equal((await c.post('/v0/topics/old', { records: [{ data: 'kept' }] })).status, 201);
    assert.equal(await srv.stop(), 0); // its final checkpoint covers `old`
    const afterStop = snapshots(dataDir).at(-1)!;

    srv = await startServer({ dataDir, env });
    c = client(srv.url);
    // The checkpoint after recovery (in the background): its cut is before what follows.
    await until('the checkpoint after recovery', () => snapshots(dataDir).at(-1)! > afterStop);
    const cut = snapshots(dataDir).at(-1)!;
    const packsBefore = ls(path.join(dataDir, 'packs'));
    assert.equal((await c.post('/v0/topics/small', { records: [{ data: 's1' }, { data: 's2' }] })).status, 201);
    const big = { records: Array.from({ length: 10 }, (_, i) => ({ data: `${i}`.repeat(1000) })) };
    assert.equal((await c.post('/v0/topics/big', big)).status, 201);
    // Their frames reach their segment file and the pack after the WAL's ack.
    const topics = path.join(dataDir, 'topics');
    await until("big's own segment file", () => ls(topics).length === 1 && ls(path.join(topics, ls(topics)[0]!)).length > 0);
    const newPacks = () => ls(path.join(dataDir, 'packs')).filter((p) => !packsBefore.includes(p));
    await until("small's pack", () => newPacks().length === 1 && fs.statSync(path.join(dataDir, 'packs', newPacks()[0]!)).size > 0);
    await new Promise((r) => setTimeout(r, 200));
    await srv.kill();
    assert.equal(snapshots(dataDir).at(-1), cut, 'no checkpoint after the new topics');

    const bigDir = ls(topics)[0]!;
    const segs = new Map(ls(path.join(topics, bigDir)).map((n) => [n, fs.readFileSync(path.join(topics, bigDir, n))]));
    const pack = newPacks()[0]!;
    const packBytes = fs.readFileSync(path.join(dataDir, 'packs', pack));
    // The first WAL file after the cut: the one the cut is in; its magic overwritten.
    const walFile = path.join(dataDir, 'wal', `${/^snapshot-(\d{20})-/.exec(cut)![1]}.wal`);
    const fd = fs.openSync(walFile, 'r+');
    fs.writeSync(fd, Buffer.from('XXXXXXXX'), 0, 8, 0);
    fs.closeSync(fd);

    srv = await startServer({ dataDir, env: { ...env, SERVICE_RECOVERY_TRUNCATE: '1' } });
    c = client(srv.url);
    assert.equal((await c.post('/v0/topics/old/diff', { from_seq: 0 })).body.records[0].data, 'kept', 'the prefix is served');
    for (const t of ['small', 'big']) assert.equal((await c.get(`/v0/topics/${t}`)).status, 404, `${t} was only in the dropped WAL`);
    // The first checkpoint unlinks the pack: nothing live is in it.
    await until('the checkpoint that unlinks the pack', () => !fs.existsSync(path.join(dataDir, 'packs', pack)));
    assert.deepEqual(ls(topics), [], "big's directory is no topic's");
    const groups = ls(path.join(dataDir, 'quarantine'));
    assert.equal(groups.length, 1, `one group, the pending marker gone: ${groups.join(', ')}`);
    assert.match(groups[0]!, /^boot-\d+$/);
    const group = path.join(dataDir, 'quarantine', groups[0]!);
    assert.deepEqual(ls(path.join(group, 'topics', bigDir)), [...segs.keys()]);
    for (const [n, bytes] of segs)
      assert.deepEqual(fs.readFileSync(path.join(group, 'topics', bigDir, n)), bytes, `big's ${n}, byte for byte`);
    assert.deepEqual(fs.readFileSync(path.join(group, 'packs', pack)), packBytes, "small's pack, byte for byte");
    assert.equal(await srv.stop(), 0);
    const lines = srv.stderr().split('\n');
    const kept = lines.filter((l) => l.includes('removed nothing'));
    assert.equal(kept.length, 1, srv.stderr());
    const line = JSON.parse(kept[0]!) as { level: string; msg: string };
    assert.equal(line.level, 'warn');
    assert.ok(line.msg.includes(`1 topic directory moved to ${group}/topics/, 1 pack file linked into ${group}/packs/`), line.msg);
    assert.ok(!srv.stderr().includes('    at '), 'no stack trace');

    // A normal start leaves the quarantine alone, and the offline check does not trip on it.
    srv = await startServer({ dataDir, env });
    assert.equal(await srv.stop(), 0);
    assert.ok(!srv.stderr().includes('removed nothing'));
    assert.deepEqual(fs.readFileSync(path.join(group, 'packs', pack)), packBytes);
    assert.deepEqual(ls(path.join(group, 'topics')), [bigDir]);
    const v = spawnSync(process.execPath, [CLI, 'verify', dataDir], { encoding: 'utf8' });
    assert.equal(v.status, 0, v.stdout + v.stderr);
  },
);
