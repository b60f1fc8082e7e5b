// SimDisk's model (test/support/simDisk.ts): what a crash keeps (fsynced bytes, fsynced directory
// entries, nothing else), the random mode's outcome space (in-order subsets of the unsynced
// operations, the last write torn) with every outcome reachable, fault injection (failAt,
// sticky faults), freezing (dead views inert: sync calls harmless, async calls never settle),
// the space limit, Node-like misuse errors, and determinism from the seed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { fsyncDirSync, type Fs } from '../../src/storage/fs.js';
import { SimDisk } from '../support/simDisk.js';
import { PENDING_OPS_MAX } from '../support/simDiskNodes.js';

const D = '/d';
const F = '/d/f';

/** A disk with a durable directory /d (and, with `content`, a durable file /d/f). */
function setup(content?: string, opts: ConstructorParameters<typeof SimDisk>[0] = {}): { disk: SimDisk; fsx: Fs } {
  const disk = new SimDisk(opts);
  const fsx = disk.fs();
  fsx.mkdirSync(D);
  if (content !== undefined) fsx.writeFileSync(F, Buffer.from(content));
  disk.syncAll();
  return { disk, fsx };
}

function text(fsx: Fs, p: string): string {
  return fsx.readFileSync(p).toString('latin1');
}

/** create + write + fsync of /d/f; the directory is fsynced only when asked. */
function createSynced(fsx: Fs, content: string, syncDir: boolean): number {
  const fd = fsx.openSync(F, 'wx');
  fsx.writeSync(fd, Buffer.from(content), 0);
  fsx.fsyncSync(fd);
  if (syncDir) fsyncDirSync(fsx, D);
  return fd;
}

// ---- what a crash keeps ----------------------------------------------------------------------

test('a file fsynced but whose directory never was vanishes in a crash', () => {
  const { disk, fsx } = setup();
  createSynced(fsx, 'hello', false);
  disk.crash('durable-only');
  const after = disk.fs();
  assert.equal(after.existsSync(F), false);
  assert.deepEqual(after.readdirSync(D), []);
  assert.equal(disk.crashes, 1);
  assert.equal(disk.generation, 2);
});

test('with the directory fsynced the file survives, with its synced bytes only', () => {
  const { disk, fsx } = setup();
  const fd = createSynced(fsx, 'hello', true);
  fsx.writeSync(fd, Buffer.from(' world'), 5); // never synced
  assert.equal(text(fsx, F), 'hello world');
  disk.crash('durable-only');
  assert.equal(text(disk.fs(), F), 'hello');
});

test('a durable directory entry of a never-synced file keeps an empty file', () => {
  const { disk, fsx } = setup();
  const fd = fsx.openSync(F, 'w');
  fsx.writeSync(fd, Buffer.from('lost'), 0);
  fsyncDirSync(fsx, D);
  disk.crash('durable-only');
  assert.equal(disk.fs().statSync(F).size, 0);
});

test('a rename without a directory fsync is undone; with one it stays', () => {
  for (const syncDir of [false, true]) {
    const { disk, fsx } = setup('data');
    fsx.renameSync(F, '/d/g');
    if (syncDir) fsyncDirSync(fsx, D);
    disk.crash('durable-only');
    const after = disk.fs();
    assert.deepEqual(after.readdirSync(D), syncDir ? ['g'] : ['f']);
    assert.equal(text(after, syncDir ? '/d/g' : F), 'data');
  }
});

test('a rename across directories with only the target fsynced leaves both names', () => {
  const { disk, fsx } = setup('data');
  fsx.mkdirSync('/e');
  fsyncDirSync(fsx, '/');
  fsx.renameSync(F, '/e/g');
  fsyncDirSync(fsx, '/e');
  disk.crash('durable-only');
  const after = disk.fs();
  assert.equal(text(after, F), 'data');
  assert.equal(text(after, '/e/g'), 'data');
});

test('an unlink (or rm) without a directory fsync is undone; with one it stays', () => {
  for (const syncDir of [false, true]) {
    for (const remove of ['unlink', 'rm'] as const) {
      const { disk, fsx } = setup('data');
      if (remove === 'unlink') fsx.unlinkSync(F);
      else void fsx.rm(F);
      assert.equal(fsx.existsSync(F), false);
      if (syncDir) fsyncDirSync(fsx, D);
      disk.crash('durable-only');
      assert.equal(disk.fs().existsSync(F), !syncDir, `${remove}, dir synced: ${syncDir}`);
    }
  }
});

test('unsynced writes and truncates are lost in durable-only mode', () => {
  const { disk, fsx } = setup('0123456789');
  const fd = fsx.openSync(F, 'r+');
  fsx.writeSync(fd, Buffer.from('ab'), 3);
  fsx.ftruncateSync(fd, 6);
  fsx.writeSync(fd, Buffer.from('z'), 9); // sparse: 6..8 are zeros
  assert.deepEqual(fsx.readFileSync(F), Buffer.from('012ab5\0\0\0z', 'latin1'));
  disk.crash('durable-only');
  assert.equal(text(disk.fs(), F), '0123456789');
});

test("open 'w' truncates, and the truncate is undone by a crash before fsync", () => {
  const { disk, fsx } = setup('old');
  fsx.closeSync(fsx.openSync(F, 'w'));
  assert.equal(fsx.statSync(F).size, 0);
  disk.crash('durable-only');
  assert.equal(text(disk.fs(), F), 'old');
});

test('a directory made by mkdir is durable only once its parent is fsynced (or with durableMkdir)', () => {
  for (const how of ['none', 'fsync parent', 'durableMkdir'] as const) {
    const disk = new SimDisk({ durableMkdir: how === 'durableMkdir' });
    const fsx = disk.fs();
    fsx.mkdirSync('/a/b');
    fsyncDirSync(fsx, '/a/b'); // the new directory's own entries: not its name in /a
    if (how === 'fsync parent') {
      fsyncDirSync(fsx, '/');
      fsyncDirSync(fsx, '/a');
    }
    disk.crash('durable-only');
    assert.equal(disk.fs().existsSync('/a/b'), how !== 'none', how);
  }
});

test('unsynced operations past PENDING_OPS_MAX are written back (durable) oldest first', () => {
  const { disk, fsx } = setup();
  const fd = createSynced(fsx, '', true);
  for (let i = 0; i < PENDING_OPS_MAX + 10; i++) fsx.writeSync(fd, Buffer.from([i & 0xff]), i);
  disk.crash('durable-only');
  assert.deepEqual(
    [...disk.fs().readFileSync(F)],
    Array.from({ length: 10 }, (_, i) => i),
  );
});

// ---- random mode ----------------------------------------------------------------------------

type ModelOp = { kind: 'write'; at: number; bytes: string } | { kind: 'truncate'; len: number };

function applyOp(base: string, op: ModelOp, prefix?: number): string {
  if (op.kind === 'truncate') return op.len <= base.length ? base.slice(0, op.len) : base.padEnd(op.len, '\0');
  const bytes = op.bytes.slice(0, prefix ?? op.bytes.length);
  if (bytes.length === 0) return base;
  const padded = base.padEnd(op.at, '\0');
  return padded.slice(0, op.at) + bytes + padded.slice(op.at + bytes.length);
}

/** Every outcome the model allows: an in-order subset applied to the durable bytes, the last write torn. */
function allowedOutcomes(durable: string, ops: ModelOp[]): Set<string> {
  const out = new Set<string>();
  for (let mask = 0; mask < 1 << ops.length; mask++) {
    const kept = ops.filter((_, i) => mask & (1 << i));
    const last = kept.pop();
    const before = kept.reduce((s, op) => applyOp(s, op), durable);
    if (!last) out.add(before);
    else if (last.kind === 'truncate') out.add(applyOp(before, last));
    else for (let t = 0; t <= last.bytes.length; t++) out.add(applyOp(before, last, t));
  }
  return out;
}

test('random crashes: every outcome is an in-order subset of the unsynced ops (last write torn), and every such outcome happens', () => {
  const durable = '0123456789';
  const ops: ModelOp[] = [
    { kind: 'write', at: 8, bytes: 'abcd' }, // overwrites and extends
    { kind: 'truncate', len: 5 },
    { kind: 'write', at: 7, bytes: 'xy' }, // sparse
  ];
  const allowed = allowedOutcomes(durable, ops);
  const seen = new Set<string>();
  for (let i = 0; i < 600; i++) {
    const { disk, fsx } = setup(durable, { seed: `random-${i}` });
    const fd = fsx.openSync(F, 'r+');
    for (const op of ops) {
      if (op.kind === 'write') fsx.writeSync(fd, Buffer.from(op.bytes, 'latin1'), op.at);
      else fsx.ftruncateSync(fd, op.len);
    }
    disk.crash('random');
    const got = text(disk.fs(), F);
    assert.ok(allowed.has(got), `seed random-${i}: ${JSON.stringify(got)} is not an allowed outcome`);
    seen.add(got);
  }
  assert.deepEqual(
    [...allowed].filter((o) => !seen.has(o)),
    [],
    'outcomes never reached',
  );
  assert.ok(allowed.size > 10);
});

test('random crashes keep synced bytes and durable entries exactly', () => {
  for (let i = 0; i < 50; i++) {
    const { disk, fsx } = setup(undefined, { seed: `keep-${i}` });
    const fd = createSynced(fsx, 'synced', true);
    fsx.writeSync(fd, Buffer.from('++'), 6);
    fsx.writeFileSync('/d/new', Buffer.from('never named durably'));
    disk.crash('random');
    const after = disk.fs();
    assert.deepEqual(after.readdirSync(D), ['f']);
    assert.match(text(after, F), /^synced\+{0,2}$/);
  }
});

test('random-dirs crashes land each unsynced name change or not, a rename whole', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 64; i++) {
    const { disk, fsx } = setup('old', { seed: `dirs-${i}` });
    fsx.writeFileSync('/d/gone', Buffer.from('g'));
    fsyncDirSync(fsx, D);
    const fd = fsx.openSync('/d/new', 'wx'); // a new name, its data synced, the directory not
    fsx.writeSync(fd, Buffer.from('n'), 0);
    fsx.fsyncSync(fd);
    fsx.renameSync(F, '/d/g');
    fsx.unlinkSync('/d/gone');
    disk.crash('random-dirs');
    const after = disk.fs();
    const names = after.readdirSync(D);
    assert.equal(names.filter((n) => n === 'f' || n === 'g').length, 1, `seed dirs-${i}: a rename lands whole (${names.join(',')})`);
    assert.equal(text(after, names.includes('g') ? '/d/g' : F), 'old');
    if (names.includes('new')) assert.equal(text(after, '/d/new'), 'n');
    seen.add(names.join(','));
  }
  // Every combination of the three changes landing or not.
  assert.equal(seen.size, 8, [...seen].join(' | '));
});

test('the same seed gives the same crash outcome; different seeds differ', () => {
  const run = (seed: string): string => {
    const { disk, fsx } = setup('base', { seed });
    const fds = ['/d/a', '/d/b', F].map((p) => fsx.openSync(p, 'r+c'));
    fsyncDirSync(fsx, D);
    for (let i = 0; i < 30; i++) fsx.writeSync(fds[i % 3]!, Buffer.from(`w${i};`), (i >> 1) * 3);
    disk.crash('random');
    const after = disk.fs();
    return after
      .readdirSync(D)
      .map((n) => `${n}=${after.readFileSync(`/d/${n}`).toString('hex')}`)
      .join(' ');
  };
  assert.equal(run('same'), run('same'));
  const distinct = new Set(Array.from({ length: 8 }, (_, i) => run(`seed-${i}`)));
  assert.ok(distinct.size > 1);
});

// ---- fault injection ------------------------------------------------------------------------

test('failAt: the n-th call throws a Node-shaped error and applies nothing', async () => {
  const { disk, fsx } = setup('hello');
  const fd = fsx.openSync(F, 'r+');
  disk.failAt(disk.calls + 1, 'ENOSPC');
  assert.throws(
    () => fsx.writeSync(fd, Buffer.from('XX'), 0),
    (err: NodeJS.ErrnoException) => {
      assert.equal(err.code, 'ENOSPC');
      assert.equal(err.errno, -28);
      assert.equal(err.syscall, 'write');
      assert.equal(err.path, F);
      assert.equal(err.message, "ENOSPC: no space left on device, write '/d/f'");
      return true;
    },
  );
  assert.equal(text(fsx, F), 'hello');
  fsx.writeSync(fd, Buffer.from('J'), 0); // once: the next call works
  assert.equal(text(fsx, F), 'Jello');

  disk.failAt(disk.calls + 1, 'EIO');
  assert.throws(() => fsx.openSync('/d/new', 'wx'), { code: 'EIO', errno: -5, syscall: 'open' });
  assert.equal(fsx.existsSync('/d/new'), false);

  disk.failAt(disk.calls + 1, 'EDQUOT');
  await assert.rejects(fsx.rename(F, '/d/g'), { code: 'EDQUOT', errno: -122, syscall: 'rename' });
  assert.deepEqual(fsx.readdirSync(D), ['f']);
  assert.equal(disk.callLog().find((r) => r.op === 'rename')?.error, 'EDQUOT');
});

test('failAt with once:false fails every later call of the same kind until clearFaults()', async () => {
  const { disk, fsx } = setup('x');
  const fd = fsx.openSync(F, 'r+');
  const fh = await fsx.open('/d/g', 'w');
  disk.failAt(disk.calls + 1, 'EIO', { once: false });
  assert.throws(() => fsx.fdatasyncSync(fd), { code: 'EIO', syscall: 'fdatasync' });
  assert.throws(() => fsx.fsyncSync(fd), { code: 'EIO' });
  await assert.rejects(fh.sync(), { code: 'EIO' });
  await assert.rejects(fsx.fdatasync(fd), { code: 'EIO' });
  fsx.writeSync(fd, Buffer.from('y'), 1); // writes are another kind
  assert.equal(text(fsx, F), 'xy');
  disk.clearFaults();
  fsx.fsyncSync(fd);
  disk.crash('durable-only');
  assert.equal(text(disk.fs(), F), 'xy');
});

test('failWhen fails every matching call; existsSync reads a fault as "absent"', () => {
  const { disk, fsx } = setup('x');
  disk.failWhen((c) => c.op === 'existsSync' || (c.kind === 'write' && c.path === '/d/g'), 'EIO');
  assert.equal(fsx.existsSync(F), false);
  assert.throws(() => fsx.writeFileSync('/d/g', Buffer.from('1')), { code: 'EIO' });
  fsx.writeFileSync('/d/h', Buffer.from('1'));
  disk.clearFaults();
  assert.equal(fsx.existsSync(F), true);
  assert.deepEqual(fsx.readdirSync(D), ['f', 'h']);
});

// ---- freezing -------------------------------------------------------------------------------

function settlesWithin(ms: number, promises: Promise<unknown>[]): Promise<boolean> {
  const settled = promises.map((p) =>
    p.then(
      () => true,
      () => true,
    ),
  );
  return Promise.race([...settled, delay(ms).then(() => false)]);
}

test('freezeAt: the n-th call completes, then every view is dead (sync inert, async never settles) and `frozen` resolves', async () => {
  const { disk, fsx } = setup('durable');
  const fd = fsx.openSync(F, 'r+');
  const fh = await fsx.open('/d/g', 'w');
  const n = disk.calls + 1;
  disk.freezeAt(n);
  assert.equal(fsx.writeSync(fd, Buffer.from('D'), 0), 1);
  assert.equal(disk.isFrozen, true);
  assert.deepEqual(await disk.frozen, { call: n, op: 'writeSync', path: F });
  assert.equal(disk.peek(F)?.toString(), 'Durable', 'the n-th call was applied');

  const calls = disk.calls;
  assert.equal(fsx.writeSync(fd, Buffer.from('zz'), 0), 2);
  assert.equal(fsx.writevSync(999, [Buffer.alloc(3), Buffer.alloc(4)], 0), 7);
  assert.equal(fsx.readSync(fd, Buffer.alloc(4), 0), 0);
  assert.equal(fsx.readFileSync(F).length, 0);
  assert.equal(fsx.existsSync(F), false);
  assert.deepEqual(fsx.readdirSync(D), []);
  assert.deepEqual(fsx.statSync('/missing'), { size: 0 });
  const fake = fsx.openSync('/missing/x', 'r');
  assert.ok(Number.isInteger(fake) && fake >= 0);
  fsx.fsyncSync(12345);
  fsx.fdatasyncSync(fd);
  fsx.ftruncateSync(fd, 0);
  fsx.closeSync(fd);
  fsx.closeSync(fd);
  fsx.writeFileSync('/nope/x', Buffer.from('x'));
  fsx.mkdirSync(F);
  fsx.unlinkSync('/missing');
  fsx.renameSync('/missing', '/elsewhere');
  const pending: Promise<unknown>[] = [
    fsx.readFile(F),
    fsx.open(F, 'r'),
    fsx.readdir(D),
    fsx.fdatasync(fd),
    fsx.mkdir('/m'),
    fsx.rm(D),
    fsx.rename(F, '/x'),
    fsx.truncate(F, 0),
  ];
  pending.push(
    fh.sync(),
    fh.writev([Buffer.from('x')], 0),
    fh.read(Buffer.alloc(1), 0, 1, 0),
    fh.writeFile(Buffer.from('x')),
    fh.truncate(0),
    fh.close(),
  );
  assert.equal(await settlesWithin(30, pending), false, 'a dead async call settled');
  assert.equal(disk.calls, calls, 'dead calls are not counted');
  assert.equal(disk.peek(F)?.toString(), 'Durable', 'dead calls touch nothing');
  assert.throws(() => disk.fs(), /frozen/);

  disk.crash('durable-only');
  const after = disk.fs();
  assert.equal(text(after, F), 'durable', 'the frozen write was never synced');
  assert.equal(fsx.writeSync(fd, Buffer.from('zz'), 0), 2, 'views from before the crash stay dead');
  assert.equal(text(after, F), 'durable');
  assert.equal(after.existsSync('/d/g'), false);
});

test('freezeAt on an async call: its effect applies and its promise resolves; crash() without a freeze also works', async () => {
  const { disk, fsx } = setup();
  disk.freezeAt(disk.calls + 1);
  await fsx.mkdir('/d/sub');
  assert.deepEqual(await disk.frozen, { call: disk.calls, op: 'mkdir', path: '/d/sub' });
  disk.crash('random');
  const fsx2 = disk.fs();
  fsx2.mkdirSync('/d/sub2');
  const frozen = disk.frozen;
  disk.crash('durable-only'); // no freeze first
  assert.equal((await frozen).op, 'crash()');
  assert.deepEqual(disk.fs().readdirSync(D), []);
  assert.equal(disk.crashes, 2);
});

// ---- space ----------------------------------------------------------------------------------

test('capacity: a write past it throws ENOSPC and applies nothing; overwrites in place still work; unlink frees', () => {
  const { disk, fsx } = setup(undefined, { capacityBytes: 10 });
  const fd = fsx.openSync(F, 'w');
  fsx.writeSync(fd, Buffer.from('12345678'), 0);
  assert.throws(() => fsx.writeSync(fd, Buffer.from('abcd'), 8), { code: 'ENOSPC', errno: -28, syscall: 'write' });
  assert.equal(text(fsx, F), '12345678');
  fsx.writeSync(fd, Buffer.from('AB'), 0); // no growth
  assert.throws(() => fsx.writeFileSync('/d/g', Buffer.from('xyz')), { code: 'ENOSPC' });
  assert.equal(fsx.existsSync('/d/g'), false, 'writeFileSync is all or nothing');
  assert.equal(disk.usedBytes(), 8);
  fsx.unlinkSync(F);
  assert.equal(disk.usedBytes(), 8, 'an unlinked file still open holds its space');
  fsx.closeSync(fd);
  assert.equal(disk.usedBytes(), 0);
  fsx.writeFileSync('/d/g', Buffer.from('0123456789'));
  assert.equal(disk.usedBytes(), 10);
});

test('capacity with partialWrites: as on Linux, a write takes the bytes that fit and returns that short count; ENOSPC only when nothing fits; writeFile throws after the prefix', async () => {
  const { disk, fsx } = setup('12345678', { capacityBytes: 10, partialWrites: true });
  const fd = fsx.openSync(F, 'r+');
  assert.equal(fsx.writevSync(fd, [Buffer.from('abc'), Buffer.from('def')], 8), 2, 'a short count, no error');
  assert.equal(text(fsx, F), '12345678ab');
  assert.throws(() => fsx.writevSync(fd, [Buffer.from('cdef')], 10), { code: 'ENOSPC', syscall: 'writev' });
  assert.throws(() => fsx.writeSync(fd, Buffer.from('cdef'), 10), { code: 'ENOSPC', syscall: 'write' });
  assert.equal(text(fsx, F), '12345678ab');
  fsx.ftruncateSync(fd, 4);
  const fh = await fsx.open('/d/g', 'w');
  assert.equal(await fh.writev([Buffer.from('0123456789')], 0), 6);
  assert.equal(disk.peek('/d/g')?.toString(), '012345');
  await assert.rejects(fh.writev([Buffer.from('6789')], 6), { code: 'ENOSPC' });
  fsx.unlinkSync('/d/g');
  await fh.close();
  const fw = await fsx.open('/d/h', 'w');
  await assert.rejects(fw.writeFile(Buffer.from('0123456789')), { code: 'ENOSPC' }, 'writeFile loops over short writes, so it fails');
  assert.equal(disk.peek('/d/h')?.toString(), '012345', 'after landing the prefix');
  await fw.close();
  fsx.unlinkSync('/d/h');
  assert.throws(() => fsx.writeFileSync('/d/i', Buffer.from('0123456789')), { code: 'ENOSPC' });
  assert.equal(disk.peek('/d/i')?.toString(), '012345');
});

// ---- Node-like misuse errors ----------------------------------------------------------------

test('misuse fails like Node: ENOENT, EEXIST, EISDIR, ENOTDIR, EBADF; rm is silent when absent', async () => {
  const { fsx } = setup('x');
  assert.throws(() => fsx.openSync('/d/missing', 'r'), { code: 'ENOENT', syscall: 'open', path: '/d/missing' });
  assert.throws(() => fsx.openSync('/nodir/x', 'w'), { code: 'ENOENT' });
  assert.throws(() => fsx.readdirSync('/nodir'), { code: 'ENOENT', syscall: 'scandir' });
  assert.throws(() => fsx.statSync('/nodir'), { code: 'ENOENT', syscall: 'stat' });
  await assert.rejects(fsx.readFile('/nodir'), { code: 'ENOENT' });
  assert.throws(() => fsx.openSync(F, 'wx'), { code: 'EEXIST' });
  assert.throws(() => fsx.openSync(D, 'r+'), { code: 'EISDIR' });
  assert.throws(() => fsx.readFileSync(D), { code: 'EISDIR' });
  assert.throws(() => fsx.unlinkSync(D), { code: 'EISDIR' });
  assert.throws(() => fsx.readdirSync(F), { code: 'ENOTDIR' });
  assert.throws(() => fsx.mkdirSync(`${F}/sub`), { code: 'ENOTDIR' });
  assert.throws(() => fsx.mkdirSync(F), { code: 'EEXIST' });
  const fd = fsx.openSync(F, 'r');
  assert.throws(() => fsx.writeSync(fd, Buffer.from('y'), 0), { code: 'EBADF' });
  fsx.closeSync(fd);
  assert.throws(() => fsx.closeSync(fd), { code: 'EBADF' });
  assert.throws(() => fsx.readSync(fd, Buffer.alloc(1), 0), { code: 'EBADF' });
  const fh = await fsx.open(F, 'r');
  await fh.close();
  await assert.rejects(fh.read(Buffer.alloc(1), 0, 1, 0), { code: 'EBADF' });
  await fsx.rm('/d/missing');
  await fsx.rm('/nodir/deeper');
});

test("flags and paths: 'r+c' creates without truncating, writes past the end are sparse, relative paths resolve from /, rm removes trees", async () => {
  const { fsx } = setup('abc');
  const fd = fsx.openSync('d/./f', 'r+c');
  assert.equal(text(fsx, F), 'abc');
  fsx.writeSync(fd, Buffer.from('Z'), 5);
  assert.deepEqual(fsx.readFileSync(F), Buffer.from('abc\0\0Z', 'latin1'));
  const buf = Buffer.alloc(4);
  assert.equal(fsx.readSync(fd, buf, 4), 2);
  const created = fsx.openSync('/d/new/../g', 'r+c');
  assert.equal(fsx.statSync('/d/g').size, 0);
  fsx.closeSync(created);
  fsx.mkdirSync('/d/tree/a/b');
  fsx.writeFileSync('/d/tree/a/b/leaf', Buffer.from('1'));
  await fsx.rm('/d/tree');
  assert.deepEqual(fsx.readdirSync(D), ['f', 'g']);
  const fh = await fsx.open('/d/h', 'w');
  await fh.writeFile(Buffer.from('one'));
  await fh.writeFile(Buffer.from('two')); // continues at the file position, like Node's
  assert.equal(text(fsx, '/d/h'), 'onetwo');
  assert.equal(await fh.read(buf, 0, 4, 0).catch((e: NodeJS.ErrnoException) => e.code), 'EBADF', "'w' is write-only");
});
