// The PostgreSQL peer of catchup-diff (docs/PERFORMANCE.md "Catch-up reads"): a private, throw-away PostgreSQL cluster in a temp
// dir and a minimal client of its wire protocol (v3), so a keyset-paginated read can be compared
// with spool's diff pages on the same machine, in the same run.
//
// Why a hand-written client: the spool reader never parses a page (it reads next_from_seq from the
// tail), so the peer's reader must not build row objects either; the `pg` package would (a JS
// object and a string per row, on the same two cores as the server). This client walks the
// message lengths of each result, counts DataRows and keeps the last row's seq: the same work.
//
// Finding PostgreSQL: PG_BIN, else the newest /usr/lib/postgresql/<v>/bin (Debian's
// `apt-get install postgresql`). Absent → `startPostgres` returns null and the caller skips the
// peer with a message. initdb refuses to run as root; as root the cluster runs as the `postgres`
// user (runuser), in a temp dir handed to that user.
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { log, onCleanup, readCpuSeconds, sleep, tempDir, removeDir } from './lib.js';

const PG_USER = 'postgres';

function findBin(): string | null {
  const explicit = process.env.PG_BIN;
  if (explicit) return fs.existsSync(path.join(explicit, 'postgres')) ? explicit : null;
  const root = '/usr/lib/postgresql';
  let versions: string[] = [];
  try {
    versions = fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, 'bin', 'postgres')));
  } catch {
    return null;
  }
  versions.sort((a, b) => Number(b) - Number(a));
  return versions.length ? path.join(root, versions[0]!, 'bin') : null;
}

const isRoot = () => process.getuid?.() === 0;

/** argv run as the cluster's owner: ourselves, or `postgres` when we are root. */
function asOwner(argv: string[]): string[] {
  return isRoot() ? ['runuser', '-u', PG_USER, '--', ...argv] : argv;
}

export class PgServer {
  private stopped = false;
  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly proc: ChildProcess,
    /** The postmaster's pid (not runuser's). */
    readonly pid: number,
  ) {}

  /** CPU seconds of the postmaster and every process it forked (backends, background workers). */
  cpuSeconds(): number {
    let sum = readCpuSeconds(this.pid) ?? 0;
    for (const d of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      try {
        const s = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
        const ppid = Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === this.pid) sum += readCpuSeconds(Number(d)) ?? 0;
      } catch {
        /* exited meanwhile */
      }
    }
    return sum;
  }

  /** Fast shutdown (SIGINT), then the temp dir goes. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    try {
      process.kill(this.pid, 'SIGINT');
    } catch {
      /* gone */
    }
    for (let i = 0; i < 200 && this.proc.exitCode === null && this.proc.signalCode === null; i++) await sleep(25);
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.killNow();
    removeDir(this.dir);
  }

  killNow(): void {
    for (const pid of [this.pid, this.proc.pid]) {
      try {
        if (pid) process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }

  /**
   * initdb + postgres on 127.0.0.1:`port` (trust auth, fsync off: durability is not what the
   * peer is measured on), shared_buffers large enough to hold the table. Null when PostgreSQL is
   * not installed or cannot start here (the reason is logged).
   */
  static async start(port: number): Promise<PgServer | null> {
    const bin = findBin();
    if (!bin) {
      log('PostgreSQL peer skipped: no postgres binary (set PG_BIN, or apt-get install postgresql)');
      return null;
    }
    const dir = tempDir('spool-bench-pg-');
    fs.chmodSync(dir, 0o777); // the `postgres` user creates data/ inside it
    const data = path.join(dir, 'data');
    const initArgv = asOwner([
      path.join(bin, 'initdb'),
      '-D',
      data,
      '--auth=trust',
      '-U',
      PG_USER,
      '--no-sync',
      '-E',
      'UTF8',
      '--locale=C',
    ]);
    const init = spawnSync(initArgv[0]!, initArgv.slice(1), { encoding: 'utf8' });
    if (init.status !== 0) {
      log(`PostgreSQL peer skipped: initdb failed (${init.error?.message ?? init.stderr.trim().slice(-500)})`);
      removeDir(dir);
      return null;
    }
    const args = [
      path.join(bin, 'postgres'),
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'shared_buffers=256MB',
      '-c',
      'autovacuum=off',
      '-c',
      'logging_collector=off',
    ];
    const argv = asOwner(args);
    const proc = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    let tail = '';
    proc.stderr!.on('data', (d: Buffer) => (tail = (tail + d.toString()).slice(-8192)));
    const deadline = Date.now() + 30_000;
    let pid = 0;
    while (!pid) {
      if (proc.exitCode !== null || Date.now() > deadline) {
        log(`PostgreSQL peer skipped: postgres did not start (${tail.trim().slice(-500)})`);
        if (proc.exitCode === null) proc.kill('SIGKILL');
        removeDir(dir);
        return null;
      }
      try {
        const c = await PgConn.connect(port);
        c.close();
        pid = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      } catch {
        await sleep(50);
      }
    }
    const srv = new PgServer(port, dir, proc, pid);
    onCleanup(() => srv.killNow());
    return srv;
  }
}

// ---- the wire protocol (frontend/backend protocol 3.0) ------------------------------------------

function msg(type: string, body: Buffer): Buffer {
  const head = Buffer.allocUnsafe(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}
const cstr = (s: string) => Buffer.from(`${s}\0`, 'utf8');
const i16 = (n: number) => {
  const b = Buffer.allocUnsafe(2);
  b.writeInt16BE(n);
  return b;
};
const i32 = (n: number) => {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32BE(n);
  return b;
};

/** What one query returned: row count, the first column of the last row, and the bytes read. */
export interface PgResult {
  rows: number;
  lastFirstCol: string | null;
  bytes: number;
}

export class PgConn {
  private acc: Buffer = Buffer.alloc(0);
  private waiter: { resolve: (r: PgResult) => void; reject: (e: Error) => void } | null = null;
  private rows = 0;
  private last: string | null = null;
  private bytes = 0;
  private err: string | null = null;

  private constructor(private readonly sock: net.Socket) {
    sock.setNoDelay(true);
    sock.on('data', (d: Buffer) => this.onData(d));
    sock.on('error', (e) => this.fail(e));
    sock.on('close', () => this.fail(new Error('postgres connection closed')));
  }

  static connect(port: number): Promise<PgConn> {
    return new Promise((resolve, reject) => {
      const sock = net.connect(port, '127.0.0.1');
      sock.once('error', reject);
      sock.once('connect', () => {
        const c = new PgConn(sock);
        const body = Buffer.concat([i32(196608), cstr('user'), cstr(PG_USER), cstr('database'), cstr('postgres'), Buffer.from([0])]);
        sock.write(Buffer.concat([i32(body.length + 4), body]));
        c.wait().then(() => resolve(c), reject);
      });
    });
  }

  /** A simple-protocol query (setup: DDL, inserts). */
  query(sql: string): Promise<PgResult> {
    this.sock.write(msg('Q', cstr(sql)));
    return this.wait();
  }

  /** Prepares `sql` as the unnamed-portal statement `name` (one text parameter). */
  prepare(name: string, sql: string): Promise<PgResult> {
    this.sock.write(Buffer.concat([msg('P', Buffer.concat([cstr(name), cstr(sql), i16(0)])), msg('S', Buffer.alloc(0))]));
    return this.wait();
  }

  /** Bind + Execute + Sync of a prepared statement, text parameters and results, one write. */
  execute(name: string, params: string[]): Promise<PgResult> {
    const ps = params.map((p) => {
      const b = Buffer.from(p, 'utf8');
      return Buffer.concat([i32(b.length), b]);
    });
    const bind = msg('B', Buffer.concat([cstr(''), cstr(name), i16(0), i16(params.length), ...ps, i16(0)]));
    const exec = msg('E', Buffer.concat([cstr(''), i32(0)]));
    this.sock.write(Buffer.concat([bind, exec, msg('S', Buffer.alloc(0))]));
    return this.wait();
  }

  close(): void {
    this.waiter = null;
    this.sock.end(msg('X', Buffer.alloc(0)));
    this.sock.destroy();
  }

  private wait(): Promise<PgResult> {
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  private fail(e: Error): void {
    const w = this.waiter;
    this.waiter = null;
    w?.reject(e);
  }

  private onData(d: Buffer): void {
    this.bytes += d.length;
    const b = this.acc.length ? Buffer.concat([this.acc, d]) : d;
    let p = 0;
    while (p + 5 <= b.length) {
      const len = b.readInt32BE(p + 1);
      if (p + 1 + len > b.length) break;
      const type = b[p]!;
      if (type === 0x44 /* D DataRow */) {
        this.rows++;
        const n = b.readInt32BE(p + 7); // first column's length (after the int16 column count)
        this.last = n < 0 ? null : b.toString('latin1', p + 11, p + 11 + n);
      } else if (type === 0x45 /* E ErrorResponse */) {
        this.err = b
          .toString('utf8', p + 5, p + 1 + len)
          .replace(/\0/g, ' ')
          .trim();
      } else if (type === 0x5a /* Z ReadyForQuery */) {
        const w = this.waiter;
        const r = { rows: this.rows, lastFirstCol: this.last, bytes: this.bytes };
        const err = this.err;
        this.waiter = null;
        this.rows = 0;
        this.last = null;
        this.bytes = 0;
        this.err = null;
        if (w && err) w.reject(new Error(`postgres: ${err}`));
        else if (w) w.resolve(r);
      } else if (type === 0x52 /* R auth */ && b.readInt32BE(p + 5) !== 0) {
        this.fail(new Error('postgres wants a password: the peer cluster is made with --auth=trust'));
      }
      p += 1 + len;
    }
    this.acc = p < b.length ? b.subarray(p) : Buffer.alloc(0);
  }
}
