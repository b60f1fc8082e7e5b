// A real full disk for crash tests: a small tmpfs in a private mount namespace (held by a `sleep`
// process, so the tmpfs outlives SIGKILL restarts; servers join it with nsenter). Tests fill it
// through /proc/<holder>/root and free it again. Needs root (mount, unshare, nsenter); `tmpfsSkip`
// says why not elsewhere.
import { after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { startServer, tempDir, type client, type Server } from './server.js';

function canMountNamespaces(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (mount in a private mount namespace)';
  for (const bin of ['unshare', 'nsenter', 'mount']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) return `needs ${bin}`;
  }
  const probe = spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', 'mount -t tmpfs -o size=1m tmpfs /mnt && umount /mnt']);
  if (probe.status !== 0) return `cannot mount a tmpfs in a private mount namespace: ${probe.stderr.toString().trim()}`;
  return undefined;
}

/** Why the tmpfs tests cannot run here (undefined: they can). */
export const tmpfsSkip = canMountNamespaces();

/** A tmpfs of `bytes` at `dir`, visible only inside the namespace of a holder process. */
async function holdTmpfs(dir: string, bytes: number): Promise<{ holder: ChildProcess; inside: (p: string) => string }> {
  const holder = spawn(
    'unshare',
    ['-m', '--propagation', 'private', 'sh', '-c', `mount -t tmpfs -o size=${bytes} tmpfs ${dir} && echo ready && exec sleep 3600`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    holder.once('exit', (code) => reject(new Error(`tmpfs holder exited (${code})`)));
  });
  after(() => void holder.kill('SIGKILL'));
  // The holder execs sleep in place (no fork), so its /proc root is the namespace's view.
  return { holder, inside: (p: string) => path.join(`/proc/${holder.pid}/root`, dir, p) };
}

/** Fills the tmpfs with a filler file until it is full (ENOSPC); returns its path. */
export function fill(inside: (p: string) => string, name: string): string {
  const file = inside(name);
  const fd = fs.openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (let off = 0; ; off += chunk.length) fs.writeSync(fd, chunk, 0, chunk.length, off);
  } catch (err) {
    assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC', 'the filler stops at a full disk');
  } finally {
    fs.closeSync(fd);
  }
  return file;
}

/**
 * Keeps the tmpfs full while the server gives space back on its own (segment writes that catch
 * up, checkpoints that trim the WAL): fills it again every `quietMs` until two rounds in a row
 * found nothing freed. Returns the filler files.
 */
export async function fillUntilSettled(inside: (p: string) => string, name: string, quietMs = 2500): Promise<string[]> {
  const files: string[] = [];
  for (let quiet = 0, k = 0; quiet < 2; k++) {
    const f = fill(inside, `${name}-${k}`);
    files.push(f);
    quiet = fs.statSync(f).size === 0 ? quiet + 1 : 0;
    await new Promise((r) => setTimeout(r, quietMs));
  }
  return files;
}

export interface TmpfsServer {
  /** A path inside the tmpfs, as this process sees it. */
  inside: (p: string) => string;
  /** Starts a server on the tmpfs's data dir (again and again, the same dir). */
  start: () => Promise<Server>;
}

/** A data dir on its own tmpfs of `bytes`, and how to start a server on it. */
export async function tmpfsServer(bytes: number, env: Record<string, string> = {}): Promise<TmpfsServer> {
  const mountDir = tempDir('spool-tmpfs-');
  const { holder, inside } = await holdTmpfs(mountDir, bytes);
  const portFile = `${tempDir('spool-port-')}/port`;
  const start = () =>
    startServer({
      dataDir: path.join(mountDir, 'data'),
      portFile,
      prefix: ['nsenter', '-t', String(holder.pid), '-m', '--'],
      env,
    });
  return { inside, start };
}

/**
 * Appends single records (`rec(i)` for the i-th acknowledged one) to `topic` until the server
 * refuses one with 429 disk_space; the acknowledged indexes go into `acked`.
 */
export async function appendUntilFull(
  c: ReturnType<typeof client>,
  topic: string,
  acked: number[],
  what: string,
  rec: (i: number) => unknown,
): Promise<void> {
  for (let i = 0; i < 50_000; i++) {
    const r = await c.post(`/v0/topics/${topic}`, { records: [rec(acked.length)] });
    if (r.status === 200) {
      acked.push(acked.length);
      continue;
    }
    assert.equal(r.status, 429, `${what}: ${JSON.stringify(r.body)}`);
    assert.deepEqual(r.body.error.detail, { limit: 'disk_space' }, what);
    return;
  }
  assert.fail(`${what}: the disk never filled`);
}
