// A disk that fails writes with EIO, for real (docs/ARCHITECTURE.md "Storage faults"): the data
// dir is an ext4 filesystem on a loop device, mounted in a private mount namespace. The test
// copies the image aside (everything acknowledged so far is in it) and then cuts the backing
// file short under the mounted filesystem: its blocks past the cut are "beyond the end of the
// device", and writing them back fails with EIO on fdatasync. The server's FAILED path, over HTTP:
// - the write that meets EIO answers 500 internal in the spec's error body; later writes are
//   refused the same way; the server stays up: health 200, ready says storage "failed",
//   reads and metrics keep working;
// - after a SIGKILL and the volume put back (the copy, e2fsck), a restart serves every
//   acknowledged record and takes writes.
// Needs root, losetup, mkfs.ext4, e2fsck, unshare and nsenter; skipped with a message elsewhere.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { client, killServersAfterFile, startServer, tempDir, type Server } from '../helpers/server.js';

killServersAfterFile();

const RECORD_BYTES = 4000;

function canRun(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (loop device, mount)';
  for (const bin of ['unshare', 'nsenter', 'losetup', 'mkfs.ext4', 'e2fsck']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) return `needs ${bin}`;
  }
  if (spawnSync('losetup', ['-f']).status !== 0) return 'no free loop device';
  return undefined;
}
const skip = canRun();

/** An ext4 image on a loop device, mounted at `<dir>/mnt` in the namespace of a holder process. */
async function loopVolume(): Promise<{ dir: string; ns: string[]; inNs: (cmd: string) => void; sh: (cmd: string) => string }> {
  const dir = tempDir('spool-eio-');
  const loops = new Set<string>();
  const sh = (cmd: string, prefix: string[] = []) => {
    const r = spawnSync(prefix[0] ?? 'sh', [...prefix.slice(1), ...(prefix.length ? ['sh'] : []), '-c', cmd], { encoding: 'utf8' });
    // e2fsck exits 1 when it fixed something
    assert.ok(r.status === 0 || (cmd.startsWith('e2fsck') && r.status === 1), `${cmd}: ${r.status} ${r.stderr}`);
    return r.stdout.trim();
  };
  sh(`truncate -s 64M ${dir}/img && mkfs.ext4 -q -F -E nodiscard ${dir}/img && mkdir ${dir}/mnt`);
  const loop = sh(`losetup -f --show ${dir}/img`);
  loops.add(loop);
  const holder: ChildProcess = spawn(
    'unshare',
    ['-m', '--propagation', 'private', 'sh', '-c', `mount -t ext4 ${loop} ${dir}/mnt && echo ready && exec sleep 3600`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    holder.once('exit', (code) => reject(new Error(`volume holder exited (${code})`)));
  });
  const ns = ['nsenter', '-t', String(holder.pid), '-m', '--'];
  after(() => {
    // The namespace (and the mount in it) goes with the holder; loop devices are global.
    holder.kill('SIGKILL');
    for (const l of loops) for (let i = 0; i < 20 && spawnSync('losetup', ['-d', l]).status !== 0; i++) spawnSync('sleep', ['0.1']);
  });
  return {
    dir,
    ns,
    inNs: (cmd) => void sh(cmd, ns),
    sh: (cmd) => {
      const out = sh(cmd);
      for (const l of out.split('\n')) if (l.startsWith('/dev/loop')) loops.add(l);
      return out;
    },
  };
}

test(
  'EIO from the disk: the write that meets it answers 500, the server stays up read-only, and a restart keeps every ack',
  { skip, timeout: 180_000 },
  async () => {
    const vol = await loopVolume();
    const dataDir = path.join(vol.dir, 'mnt', 'data');
    const portFile = `${tempDir('spool-port-')}/port`;
    const env = { SERVICE_WAL_FILE_BYTES: String(4 * 1024 * 1024), SERVICE_CHECKPOINT_MS: '1000' };
    let srv: Server = await startServer({ dataDir, portFile, prefix: vol.ns, env });
    let c = client(srv.url);
    assert.equal((await c.put('/v0/topics/dur', { durability: 'fsync' })).status, 201);
    const acked: number[] = [];
    const append = (i: number) => c.post('/v0/topics/dur', { records: [{ data: { i, pad: 'e'.repeat(RECORD_BYTES) } }] });
    for (let i = 0; i < 100; i++) {
      assert.equal((await append(i)).status, 200);
      acked.push(i);
    }
    // Every ack so far is fsynced, so in the copy; then the device loses all but its first MiB.
    const loop = vol.sh(`losetup -j ${vol.dir}/img | cut -d: -f1`);
    vol.sh(`cp --sparse=always ${vol.dir}/img ${vol.dir}/img.good && truncate -s 1M ${vol.dir}/img && losetup -c ${loop}`);
    let failed: Awaited<ReturnType<typeof c.post>> | undefined;
    // An append after the cut can still succeed, fsync and all, when its WAL blocks lie in the
    // device's surviving first MiB; the first one that reaches the lost part fails, and nothing
    // is acknowledged after that (the loop stops there; `again` below is refused).
    const ackedBeforeCut = acked.length;
    for (let i = 100; i < 1100 && !failed; i++) {
      const r = await append(i);
      if (r.status === 200) acked.push(i);
      else failed = r;
    }
    assert.ok(failed, 'a write met the failing device');
    assert.equal(failed.status, 500, JSON.stringify(failed.body));
    assert.equal(failed.body.error.code, 'internal', JSON.stringify(failed.body));
    // The log line comes from the WAL thread and may reach stderr just after the 500 is sent.
    for (let waited = 0; !/EIO/.test(srv.stderr()) && waited < 5000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    assert.match(srv.stderr(), /EIO/, 'the log names the error');

    // Up, read-only, saying why.
    assert.equal((await c.get('/v0/health')).status, 200);
    const ready = await c.get('/v0/ready');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.storage, 'failed');
    assert.equal(ready.body.writable, false);
    const again = await append(-1);
    assert.equal(again.status, 500, JSON.stringify(again.body));
    assert.equal(again.body.error.code, 'internal');
    assert.equal((await c.put('/v0/topics/other', {})).status, 500, 'a create is refused too');
    assert.match((await c.get('/v0/metrics')).text, /^spool_storage_state 2$/m);
    const read = await c.post('/v0/topics/dur/diff', { from_seq: 0, limit: 10 });
    assert.equal(read.status, 200, 'reads go on');
    assert.equal(read.body.records[0].data.i, 0);

    // SIGKILL; the volume comes back from the copy (as a disk replaced from what it last held),
    // checked by e2fsck; a restart serves every record acknowledged before the copy, and none of
    // those acknowledged on the cut device after it (the copy never held them).
    await srv.kill();
    assert.equal(ackedBeforeCut, 100);
    vol.inNs(`umount ${vol.dir}/mnt`);
    vol.sh(`losetup -d ${loop} && mv ${vol.dir}/img.good ${vol.dir}/img`);
    vol.sh(`e2fsck -fy ${vol.dir}/img`);
    const loop2 = vol.sh(`losetup -f --show ${vol.dir}/img`);
    vol.inNs(`mount -t ext4 ${loop2} ${vol.dir}/mnt`);
    srv = await startServer({ dataDir, portFile, prefix: vol.ns, env });
    c = client(srv.url);
    const got: number[] = [];
    for (let from = 0; ;) {
      const d = await c.post('/v0/topics/dur/diff', { from_seq: from, limit: 1000 });
      assert.equal(d.status, 200, JSON.stringify(d.body));
      for (const r of d.body.records) got.push(r.data.i);
      if (d.body.caught_up) break;
      from = d.body.next_from_seq;
    }
    assert.deepEqual(got, acked.slice(0, ackedBeforeCut), 'every record acknowledged before the copy, nothing else');
    assert.equal((await append(1000)).status, 200, 'writable again');
    assert.equal(await srv.stop(), 0);
  },
);
