// Single-writer guard of a data directory (src/storage/lock.ts, docs/ARCHITECTURE.md "Other decisions"): LOCK holds
// "pid start-ms pid-namespace identity"; a lock naming a dead process is taken over (as is one
// whose pid a later process has: a reboot, a reused pid), one naming a live process refuses
// with DataDirLockedError, and release removes only our own lock.
import { after, test } from 'node:test';
import { nodeFs } from '../../src/storage/fs.js';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { acquireLock, DataDirLockedError, liveLockHolder, processIdentity } from '../../src/storage/lock.js';

const dirs: string[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-lock-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

/** A pid that belonged to a process which has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  const pid = child.pid!;
  await exited(child);
  return pid;
}

test('acquireLock creates LOCK with "pid start-ms pid-namespace identity"; release marks it free (pid 0) and keeps the file', () => {
  const dir = path.join(tmp(), 'data'); // created if missing
  const release = acquireLock(nodeFs, dir);
  const file = path.join(dir, 'LOCK');
  const content = fs.readFileSync(file, 'utf8');
  assert.match(content, /^\d+ \d+ pid:\[\d+\] [0-9a-f-]+\/\d+\n$/);
  assert.equal(content.trim().split(' ')[3], processIdentity('self'));
  assert.equal(Number(content.split(' ')[0]), process.pid);
  release();
  // Kept (a restart on a full disk takes it over without needing new space), naming no one.
  assert.equal(Number(fs.readFileSync(file, 'utf8').split(' ')[0]), 0);
  release(); // idempotent
  const again = acquireLock(nodeFs, dir); // a released lock is free
  assert.equal(Number(fs.readFileSync(file, 'utf8').split(' ')[0]), process.pid);
  again();
});

test('a LOCK of another PID namespace holds while it is touched, and is stale once it is not', () => {
  const dir = tmp();
  const file = path.join(dir, 'LOCK');
  fs.writeFileSync(file, `1 ${Date.now()} pid:[1]\n`); // pid 1 of a container
  assert.equal(liveLockHolder(nodeFs, dir), 1, 'touched just now: held');
  const old = new Date(Date.now() - 60_000);
  fs.utimesSync(file, old, old);
  assert.equal(liveLockHolder(nodeFs, dir), undefined, 'untouched for a minute: stale');
  acquireLock(nodeFs, dir)(); // taken over
});

test('a LOCK naming a dead pid is taken over', async () => {
  const dir = tmp();
  const file = path.join(dir, 'LOCK');
  const pid = await deadPid();
  fs.writeFileSync(file, `${pid} ${Date.now() - 5000}\n`);
  const release = acquireLock(nodeFs, dir);
  assert.equal(Number(fs.readFileSync(file, 'utf8').split(' ')[0]), process.pid, 'the lock now names this process');
  release();
  assert.equal(Number(fs.readFileSync(file, 'utf8').split(' ')[0]), 0, 'released');
});

test('a LOCK with unreadable content is taken over', () => {
  const dir = tmp();
  const file = path.join(dir, 'LOCK');
  for (const junk of ['', 'garbage', '-5 1', '0 0\n']) {
    fs.writeFileSync(file, junk);
    const release = acquireLock(nodeFs, dir);
    assert.equal(Number(fs.readFileSync(file, 'utf8').split(' ')[0]), process.pid, `content ${JSON.stringify(junk)}`);
    release();
  }
});

test('a torn LOCK line (a start that crashed while writing it) is taken over at once', () => {
  const dir = tmp();
  const file = path.join(dir, 'LOCK');
  // Half a line, touched just now, naming a live pid (1) of what reads as another namespace: a
  // whole line like it would hold for 10 s (above); a torn one never held anything.
  fs.writeFileSync(file, `1 ${Date.now()} pid:[40`);
  const t0 = Date.now();
  const release = acquireLock(nodeFs, dir);
  assert.ok(Date.now() - t0 < 2000, `took ${Date.now() - t0} ms`);
  assert.equal(Number(fs.readFileSync(file, 'utf8').split(' ')[0]), process.pid);
  release();
});

test('the offline tools read a torn LOCK line as no holder, a whole one as its live holder', () => {
  const dir = tmp();
  const file = path.join(dir, 'LOCK');
  // The torn line names this very process in this namespace: whole, it would be a live holder.
  const ns = fs.readlinkSync('/proc/self/ns/pid');
  const line = `${process.ppid} ${Date.now()} ${ns}\n`;
  fs.writeFileSync(file, line.slice(0, -3));
  assert.equal(liveLockHolder(nodeFs, dir), undefined);
  fs.writeFileSync(file, line);
  assert.equal(liveLockHolder(nodeFs, dir), process.ppid);
});

test('a LOCK naming a live other process throws DataDirLockedError and is left alone', async () => {
  const dir = tmp();
  const file = path.join(dir, 'LOCK');
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  try {
    const pid = child.pid!;
    const content = `${pid} ${Date.now()}\n`;
    fs.writeFileSync(file, content);
    assert.throws(
      () => acquireLock(nodeFs, dir),
      (err: unknown) => {
        assert.ok(err instanceof DataDirLockedError, `got ${String(err)}`);
        assert.match(err.message, /in use/);
        assert.ok(err.message.includes(String(pid)), err.message);
        assert.ok(err.message.includes(dir), err.message);
        return true;
      },
    );
    assert.equal(fs.readFileSync(file, 'utf8'), content, 'the holder keeps its lock');
    // Once the holder is gone, the lock is taken over.
    child.kill('SIGKILL');
    await exited(child);
    const release = acquireLock(nodeFs, dir);
    assert.equal(Number(fs.readFileSync(file, 'utf8').split(' ')[0]), process.pid);
    release();
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited(child);
  }
});

test('a LOCK whose pid is now another process (reused after a crash or a reboot) is taken over; its own holder is not', async () => {
  const dir = tmp();
  const file = path.join(dir, 'LOCK');
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  try {
    const pid = child.pid!;
    const ns = fs.readlinkSync('/proc/self/ns/pid');
    const ident = processIdentity(pid);
    assert.match(ident, /\//);
    // The live process that wrote it: held.
    fs.writeFileSync(file, `${pid} ${Date.now()} ${ns} ${ident}\n`);
    assert.equal(liveLockHolder(nodeFs, dir), pid);
    assert.throws(() => acquireLock(nodeFs, dir), DataDirLockedError);
    // Written by an earlier process with that pid (another start time), or in another boot.
    const [boot, start] = ident.split('/');
    for (const other of [`${boot}/${Number(start) - 1}`, `00000000-0000-0000-0000-000000000000/${start}`]) {
      fs.writeFileSync(file, `${pid} ${Date.now()} ${ns} ${other}\n`);
      assert.equal(liveLockHolder(nodeFs, dir), undefined, other);
      const release = acquireLock(nodeFs, dir);
      assert.equal(Number(fs.readFileSync(file, 'utf8').split(' ')[0]), process.pid);
      release({ remove: true });
    }
  } finally {
    child.kill('SIGKILL');
    await exited(child);
  }
});

test('release does not remove a LOCK that now belongs to someone else', () => {
  const dir = tmp();
  const file = path.join(dir, 'LOCK');
  const release = acquireLock(nodeFs, dir);
  const other = `${process.pid} ${Date.now() + 1}\nother\n`;
  fs.writeFileSync(file, other);
  release();
  assert.equal(fs.readFileSync(file, 'utf8'), other);
});

test('release({ remove: true }) unlinks our own LOCK (a failed restore), never one that is someone else now', () => {
  const dir = tmp();
  const file = path.join(dir, 'LOCK');
  acquireLock(nodeFs, dir)({ remove: true });
  assert.equal(fs.existsSync(file), false);
  const release = acquireLock(nodeFs, dir);
  const other = `${process.pid} ${Date.now() + 1}\nother\n`;
  fs.writeFileSync(file, other);
  release({ remove: true });
  assert.equal(fs.readFileSync(file, 'utf8'), other);
});
