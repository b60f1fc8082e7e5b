// Snapshot writes on a full disk (src/storage/snapshot.ts writeSnapshotBytes), on a SimDisk:
// ENOSPC at EACH call of a write (a FaultFs-style planned fault), and a disk too small for the
// new snapshot, leave the previous snapshot loadable (also after a crash), report a disk-full
// error (so the checkpoint postpones instead of failing storage), and leave no temp file behind
// to hold the space that ran out; a retry once space returns writes the new one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isDiskFull, type Fs } from '../../src/storage/fs.js';
import { encodeSnapshot, loadNewestSnapshot, writeSnapshotBytes, type SnapshotBody } from '../../src/storage/snapshot.js';
import { metaDir } from '../../src/format/layout.js';
import { WAL_HEADER_BYTES } from '../../src/format/constants.js';
import { SimDisk } from '../support/simDisk.js';

const DATA = '/srv/spool';

function body(fileNo: number, pad = 0): SnapshotBody {
  return {
    version: 1,
    epoch: 1,
    cut: { fileNo, offset: WAL_HEADER_BYTES },
    previousCut: null,
    topics: pad > 0 ? [{ id: 0x01_000001, name: 'x'.repeat(pad), config: {} as never, created_ms: 0, reserved: 0 }] : [],
  };
}

function load(fsx: Fs): { snap: SnapshotBody | undefined; warnings: string[] } {
  const warnings: string[] = [];
  return { snap: loadNewestSnapshot(fsx, DATA, (m) => warnings.push(m)), warnings };
}

const write = (fsx: Fs, b: SnapshotBody) => writeSnapshotBytes(fsx, DATA, b.cut, encodeSnapshot(b));

/** A disk holding snapshots OLD and A durably (so writing B also prunes OLD); returns it and its call count. */
async function prepared(): Promise<{ disk: SimDisk; base: number }> {
  const disk = new SimDisk({ seed: 'snapfaults' });
  disk.fs().mkdirSync(metaDir(DATA));
  disk.syncAll();
  await write(disk.fs(), body(2));
  await write(disk.fs(), body(3));
  return { disk, base: disk.calls };
}

const metaNames = (fsx: Fs) => fsx.readdirSync(metaDir(DATA));

test('ENOSPC at each call of a snapshot write: the old snapshot (or, past the rename, the new one) loads, the error is disk full, no temp file is left', async () => {
  const A = body(3);
  const B = body(5);
  const dry = await prepared();
  await write(dry.disk.fs(), B);
  const total = dry.disk.calls - dry.base;
  const calls = dry.disk.callLog().filter((r) => r.call > dry.base);
  const rename = calls.find((r) => r.op === 'rename')!;
  const dirSync = calls.find((r) => r.op === 'file.sync' && r.path === metaDir(DATA))!;
  assert.ok(rename && dirSync && total > 8, `unexpected call sequence:\n${dry.disk.formatCallLog()}`);
  for (let n = 1; n <= total; n++) {
    const { disk, base } = await prepared();
    disk.failAt(base + n, 'ENOSPC');
    const what = `ENOSPC at call ${n} of ${total} (${calls[n - 1]!.op} ${calls[n - 1]!.path ?? ''})`;
    await assert.rejects(write(disk.fs(), B), (err) => isDiskFull(err), what);
    const renamed = base + n > rename.call;
    assert.deepEqual(load(disk.fs()), { snap: renamed ? B : A, warnings: [] }, what);
    assert.deepEqual(
      metaNames(disk.fs()).filter((f) => f.endsWith('.tmp')),
      [],
      `${what}: no temp file left\n${disk.describe()}`,
    );
    disk.crash('durable-only');
    assert.deepEqual(load(disk.fs()), { snap: base + n > dirSync.call ? B : A, warnings: [] }, `${what}, then a crash`);
    // Once space is back, the next checkpoint's write succeeds.
    await write(disk.fs(), B);
    assert.deepEqual(load(disk.fs()).snap, B, what);
  }
});

test('a disk too small for the new snapshot: ENOSPC, the old one loads, and failed attempts do not eat the space', async () => {
  const { disk } = await prepared();
  const A = body(3);
  const big = body(7, 4000);
  disk.capacityBytes = disk.usedBytes() + 1000;
  disk.partialWrites = true; // as a real disk: the part that fits lands, then ENOSPC
  const used = disk.usedBytes();
  for (let attempt = 0; attempt < 3; attempt++) {
    await assert.rejects(write(disk.fs(), big), (err) => isDiskFull(err), `attempt ${attempt}`);
    assert.equal(disk.usedBytes(), used, `attempt ${attempt}: the half-written temp file is removed\n${disk.describe()}`);
    assert.deepEqual(
      metaNames(disk.fs()).filter((f) => f.endsWith('.tmp')),
      [],
    );
    assert.deepEqual(load(disk.fs()), { snap: A, warnings: [] });
  }
  disk.capacityBytes = undefined;
  await write(disk.fs(), big);
  disk.crash('durable-only');
  assert.deepEqual(load(disk.fs()).snap, big);
  assert.deepEqual(
    metaNames(disk.fs()).filter((f) => f.endsWith('.tmp')),
    [],
  );
});
