// FaultFs (test/support/faultFs.ts) over nodeFs on a temp dir: every Fs and FsFile call is
// counted, the chosen call fails with a Node-shaped error without reaching the real disk, sticky
// faults hold per kind until clear(), and a predicate can fail a path's writes (a disk-full
// segment store: the failure surfaces at flushAll with isDiskFull, the other topic unharmed).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isDiskFull, nodeFs } from '../../src/storage/fs.js';
import { SegmentStore } from '../../src/storage/segmentStore.js';
import { segmentFileName, topicDir } from '../../src/format/layout.js';
import { encodeJsonFrame } from '../../src/format/frame.js';
import { FrameType } from '../../src/format/constants.js';
import { FaultFs } from '../support/faultFs.js';

const dirs: string[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-faultfs-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

test('every Fs and FsFile call is counted; the n-th fails like Node and reaches nothing', async () => {
  const dir = tmp();
  const file = path.join(dir, 'f');
  const ffs = new FaultFs(nodeFs);
  ffs.writeFileSync(file, Buffer.from('hello'));
  const fh = await ffs.open(file, 'r+');
  await fh.writev([Buffer.from('J')], 0);
  await fh.sync();
  await fh.close();
  assert.equal(ffs.calls, 5);
  assert.deepEqual(
    ffs.callLog().map((r) => r.op),
    ['writeFileSync', 'open', 'file.writev', 'file.sync', 'file.close'],
  );

  const fd = ffs.openSync(file, 'r+');
  ffs.failAt(ffs.calls + 1, 'ENOSPC');
  assert.throws(
    () => ffs.writeSync(fd, Buffer.from('XX'), 0),
    (err: NodeJS.ErrnoException) => {
      assert.equal(err.message, `ENOSPC: no space left on device, write '${file}'`);
      assert.deepEqual([err.code, err.errno, err.syscall, err.path], ['ENOSPC', -28, 'write', file]);
      return true;
    },
  );
  assert.equal(fs.readFileSync(file, 'utf8'), 'Jello', 'nothing written');
  ffs.writeSync(fd, Buffer.from('Y'), 0); // once: the next call goes through
  ffs.closeSync(fd);
  assert.equal(fs.readFileSync(file, 'utf8'), 'Yello');

  ffs.failAt(ffs.calls + 1, 'EDQUOT');
  await assert.rejects(ffs.rename(file, path.join(dir, 'g')), { code: 'EDQUOT', errno: -122, syscall: 'rename' });
  assert.deepEqual(fs.readdirSync(dir), ['f']);
  assert.equal(ffs.callLog().at(-1)?.error, 'EDQUOT');
});

test('once:false: every later call of the same kind fails until clear(); fd calls carry their path', async () => {
  const dir = tmp();
  const file = path.join(dir, 'wal');
  const ffs = new FaultFs(nodeFs);
  const fd = ffs.openSync(file, 'wx');
  const fh = await ffs.open(file, 'r');
  ffs.failAt(ffs.calls + 1, 'EIO', { once: false });
  assert.throws(() => ffs.fdatasyncSync(fd), { code: 'EIO', syscall: 'fdatasync', path: file });
  await assert.rejects(fh.sync(), { code: 'EIO' });
  await assert.rejects(ffs.fdatasync(fd), { code: 'EIO' });
  assert.equal(ffs.writeSync(fd, Buffer.from('ok'), 0), 2, 'writes are another kind');
  ffs.clear();
  ffs.fdatasyncSync(fd);
  await fh.close();
  ffs.closeSync(fd);

  ffs.failWhen((c) => c.op === 'existsSync' || (c.op === 'fsyncSync' && c.path === file), 'EIO');
  assert.equal(ffs.existsSync(file), false, 'existsSync never throws');
  const fd2 = ffs.openSync(file, 'r');
  assert.throws(() => ffs.fsyncSync(fd2), { code: 'EIO', path: file });
  ffs.closeSync(fd2);
  ffs.clear();
  assert.equal(ffs.existsSync(file), true);
});

test('a natural error passes through unchanged and is logged', async () => {
  const ffs = new FaultFs(nodeFs);
  const missing = path.join(tmp(), 'missing');
  assert.throws(() => ffs.openSync(missing, 'r'), { code: 'ENOENT' });
  await assert.rejects(ffs.readFile(missing), { code: 'ENOENT' });
  assert.deepEqual(
    ffs.callLog().map((r) => r.error),
    ['ENOENT', 'ENOENT'],
  );
});

test('SegmentStore with one topic out of space: flushAll reports disk full, the other topic is written', async () => {
  const dataDir = tmp();
  const ffs = new FaultFs(nodeFs);
  const [full, fine] = [0x01_000001, 0x01_000002];
  const fullDir = topicDir(dataDir, full);
  ffs.failWhen((c) => c.op === 'file.writev' && c.path!.startsWith(fullDir), 'ENOSPC');
  const store = new SegmentStore(ffs, dataDir);
  const frame = (topicId: number) => encodeJsonFrame(FrameType.APPEND, topicId, { hello: 'world' });
  const written: number[] = [];
  store.append({ topicId: full, segFirstSeq: 1, offset: 0 }, frame(full), () => written.push(full));
  store.append({ topicId: fine, segFirstSeq: 1, offset: 0 }, frame(fine), () => written.push(fine));
  await assert.rejects(store.flushAll(), (err) => isDiskFull(err));
  assert.deepEqual(written, [fine]);
  assert.equal(fs.statSync(path.join(fullDir, segmentFileName(1))).size, 0, 'nothing of the failed writev landed');
  assert.deepEqual(fs.readFileSync(path.join(topicDir(dataDir, fine), segmentFileName(1))), frame(fine));
  await store.close();
});
