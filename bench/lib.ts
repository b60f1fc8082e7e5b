// Shared helpers for the benchmark suite (bench/README.md). Benchmarks are not tests: nothing
// here runs under `npm test`. Everything is bounded in count and time, and every child process
// and temp directory created here is registered so it is killed / removed even on error.
//
// Output convention: progress goes to stderr; stdout carries one JSON line per workload
// (starts with `{`) and the final Markdown table (lines start with `|`).
import http from 'node:http';
import net from 'node:net';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnServer, waitForPort, waitForReady, type SpawnSpec } from '../test/support/serverProcess.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** dist/bench → dist/cli.js */
export const CLI = path.resolve(here, '../cli.js');
/** dist/bench/echo-server.js */
export const ECHO_SERVER = path.join(here, 'echo-server.js');

// ---- environment knobs -------------------------------------------------------------------------

export function envNumber(name: string, dflt: number): number {
  const v = process.env[name];
  if (v === undefined || v.trim() === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(v)}`);
  return n;
}

/** Measurement length in ms: BENCH_SECONDS overrides the workload's default. */
export function benchMs(defaultSeconds: number): number {
  return Math.round(envNumber('BENCH_SECONDS', defaultSeconds) * 1000);
}

/** Short unmeasured warm-up before each measured run (JIT, sockets, first segment). */
export function warmupMs(): number {
  return Math.round(envNumber('BENCH_WARMUP_MS', 500));
}

export function log(msg: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---- cleanup registry --------------------------------------------------------------------------

const liveChildren = new Set<ChildProcess>();
const liveDirs = new Set<string>();
const cleanupFns: (() => void)[] = [];

/** Registers a synchronous cleanup (a process not started through ChildServer, e.g. PostgreSQL). */
export function onCleanup(fn: () => void): void {
  cleanupFns.push(fn);
}

function alive(p: ChildProcess): boolean {
  return p.exitCode === null && p.signalCode === null;
}

/** Kills every child still running and removes every temp dir (synchronous; safe in 'exit'). */
export function cleanupAll(): void {
  for (const p of liveChildren) {
    if (alive(p)) {
      try {
        p.kill('SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }
  liveChildren.clear();
  for (const fn of cleanupFns.splice(0)) {
    try {
      fn();
    } catch {
      /* best effort */
    }
  }
  for (const d of liveDirs) removeDir(d);
}

let handlersInstalled = false;
/** Installs exit/signal handlers so an interrupted run leaves no server or data behind. */
export function installCleanupHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', cleanupAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      log(`${sig}: cleaning up`);
      cleanupAll();
      process.exit(130);
    });
  }
}

export function tempDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  liveDirs.add(d);
  return d;
}

export function removeDir(d: string): void {
  try {
    fs.rmSync(d, { recursive: true, force: true });
  } catch (err) {
    log(`could not remove ${d}: ${(err as Error).message}`);
  }
  liveDirs.delete(d);
}

/** Total size in bytes of the regular files directly inside `dir` (0 if absent). */
export function dirBytes(dir: string): number {
  let total = 0;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return 0;
  }
  for (const n of names) {
    try {
      const st = fs.statSync(path.join(dir, n));
      if (st.isFile()) total += st.size;
    } catch {
      /* raced with unlink */
    }
  }
  return total;
}

/** Total size of every regular file under `dir`, recursively. */
export function treeBytes(dir: string): number {
  let total = 0;
  let ents: fs.Dirent[];
  try {
    ents = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of ents) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) total += treeBytes(p);
    else if (e.isFile()) {
      try {
        total += fs.statSync(p).size;
      } catch {
        /* raced */
      }
    }
  }
  return total;
}

// ---- /proc sampling (RSS and CPU of a child) ---------------------------------------------------

function readStatusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(s);
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Bytes the process has read through read()/pread() (files, page cache included, and sockets). */
export function readRchar(pid: number): number | undefined {
  try {
    const m = /^rchar:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

const CLK_TCK = 100; // Linux USER_HZ; /proc/<pid>/stat times are in these ticks

/** utime + stime of the whole process (all threads), seconds. */
export function readCpuSeconds(pid: number): number | undefined {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // fields[0] is state (field 3); utime is field 14, stime field 15.
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return undefined;
  }
}

/**
 * Peak RSS of a process. RSS is per process, so the server's worker threads and WAL thread are
 * included. Two sources, max of both: VmRSS polled every 100 ms, and the kernel's VmHWM read when
 * asked. `reset()` starts a new window (and resets VmHWM through /proc/<pid>/clear_refs when
 * the kernel allows it; otherwise the polled max alone is used after a reset).
 */
/** Resident set size of a process, from /proc (Linux). */
export function vmRss(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/** Median of 5 VmRSS reads 200 ms apart, after `settleMs` of quiet (a memory figure, not a peak). */
export async function settledRss(srv: ChildServer, settleMs: number): Promise<number> {
  await sleep(settleMs);
  const xs: number[] = [];
  for (let i = 0; i < 5; i++) {
    xs.push(vmRss(srv.pid));
    await sleep(200);
  }
  xs.sort((a, b) => a - b);
  return xs[2]!;
}

export class RssSampler {
  private max = 0;
  private hwmUsable = true;
  private readonly timer: NodeJS.Timeout;

  constructor(readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 100);
    this.timer.unref();
    this.sample();
  }

  sample(): void {
    const rss = readStatusKb(this.pid, 'VmRSS');
    if (rss !== undefined && rss > this.max) this.max = rss;
  }

  reset(): void {
    this.sample();
    try {
      fs.writeFileSync(`/proc/${this.pid}/clear_refs`, '5');
    } catch {
      this.hwmUsable = false;
    }
    this.max = readStatusKb(this.pid, 'VmRSS') ?? 0;
  }

  /** Peak RSS in bytes since start / last reset (call while the process is alive). */
  peakBytes(): number {
    this.sample();
    const hwm = this.hwmUsable ? readStatusKb(this.pid, 'VmHWM') : undefined;
    return Math.max(this.max, hwm ?? 0);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** CPU used by a process between `start()` and `stop()`, as % of one core. */
export class CpuMeter {
  private t0 = 0n;
  private c0 = 0;
  constructor(private readonly pid: number | 'self') {}
  private cpu(): number {
    if (this.pid === 'self') {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1e6;
    }
    return readCpuSeconds(this.pid) ?? 0;
  }
  start(): this {
    this.t0 = process.hrtime.bigint();
    this.c0 = this.cpu();
    return this;
  }
  /** % of one core (200 = both cores of a 2-core machine). */
  stop(): number {
    const wall = Number(process.hrtime.bigint() - this.t0) / 1e9;
    return wall > 0 ? ((this.cpu() - this.c0) / wall) * 100 : 0;
  }
}

/** Machine-wide CPU ticks from /proc/stat: process time (user+nice+system), steal, total. */
function readSystemTicks(): { proc: number; steal: number; total: number } | undefined {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
    return { proc: (v[0] ?? 0) + (v[1] ?? 0) + (v[2] ?? 0), steal: v[7] ?? 0, total };
  } catch {
    return undefined;
  }
}

export interface CpuSplit {
  /** % of one core each. */
  server: number;
  client: number;
  /** Every other process on the machine (other people's builds and tests too). */
  other: number;
  /** Time the hypervisor gave to someone else. */
  steal: number;
}

/**
 * CPU of the server, of this process (the load generator) and of everything else on the machine
 * over one phase. The two cores are shared, so `other` (and `steal`) show when a measurement was
 * disturbed. Interrupt/softirq time (loopback networking) is in none of them.
 */
export class CpuSplitMeter {
  private readonly server: CpuMeter;
  private readonly client = new CpuMeter('self');
  private sys0: { proc: number; steal: number; total: number } | undefined;
  constructor(serverPid: number) {
    this.server = new CpuMeter(serverPid);
  }
  start(): this {
    this.server.start();
    this.client.start();
    this.sys0 = readSystemTicks();
    return this;
  }
  stop(): CpuSplit {
    const server = this.server.stop();
    const client = this.client.stop();
    const sys1 = readSystemTicks();
    let other = 0;
    let steal = 0;
    if (this.sys0 && sys1 && sys1.total > this.sys0.total) {
      const cores = os.availableParallelism?.() ?? os.cpus().length;
      const pct = (d: number) => (d / (sys1.total - this.sys0!.total)) * cores * 100;
      other = Math.max(0, pct(sys1.proc - this.sys0.proc) - server - client);
      steal = pct(sys1.steal - this.sys0.steal);
    }
    return { server, client, other, steal };
  }
}

export function cpuNote(c: CpuSplit): string {
  return (
    `CPU server ${Math.round(c.server)}% client ${Math.round(c.client)}% other ${Math.round(c.other)}%` +
    (c.steal >= 5 ? ` steal ${Math.round(c.steal)}%` : '')
  );
}

// ---- child servers -----------------------------------------------------------------------------

export interface ChildOptions {
  /** Script run with the current node binary. */
  script: string;
  /** Node options before the script (e.g. `--cpu-prof`, which NODE_OPTIONS does not allow). */
  nodeArgs?: string[];
  args?: string[];
  /** Data dir; created (and removed on close) when absent. */
  dataDir?: string;
  /** Keep the data dir on close (the caller owns it). */
  keepDir?: boolean;
  env?: Record<string, string>;
  /** GET path that answers 200 once the child is ready. */
  readyPath: string;
  /** Give up waiting for readiness after this long (default 120 s). */
  readyTimeoutMs?: number;
  label: string;
}

export class ChildServer {
  readonly rss: RssSampler;
  /** ms from spawn to the port file appearing / to readyPath answering 200. */
  bindMs = 0;
  readyMs = 0;
  private readonly exited: Promise<void>;
  private closed = false;

  private constructor(
    readonly label: string,
    readonly proc: ChildProcess,
    readonly dataDir: string,
    private readonly ownsDir: boolean,
    readonly port: number,
    private readonly stderrFn: () => string,
  ) {
    this.rss = new RssSampler(proc.pid!);
    this.exited = new Promise((resolve) => {
      if (!alive(proc)) resolve();
      else proc.once('exit', () => resolve());
    });
  }

  get pid(): number {
    return this.proc.pid!;
  }
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  get alive(): boolean {
    return alive(this.proc);
  }
  stderr(): string {
    return this.stderrFn();
  }

  static async start(opts: ChildOptions): Promise<ChildServer> {
    const ownsDir = opts.dataDir === undefined;
    const dataDir = opts.dataDir ?? tempDir(`spool-bench-${opts.label}-`);
    const spec: SpawnSpec = {
      argv: [process.execPath, ...(opts.nodeArgs ?? []), opts.script, ...(opts.args ?? [])],
      dataDir,
      portFile: `${dataDir}.port`,
      env: opts.env,
      label: opts.label,
      stderrTailBytes: 32 * 1024,
    };
    const t0 = process.hrtime.bigint();
    const child = spawnServer(spec);
    const proc = child.proc;
    liveChildren.add(proc);
    const ms = () => Number(process.hrtime.bigint() - t0) / 1e6;
    const deadline = Date.now() + (opts.readyTimeoutMs ?? 120_000);
    try {
      const port = await waitForPort(child, spec, deadline, 5);
      fs.rmSync(spec.portFile, { force: true });
      const srv = new ChildServer(opts.label, proc, dataDir, ownsDir && !opts.keepDir, port, child.stderr);
      srv.bindMs = ms();
      await waitForReady(child, opts.label, port, opts.readyPath, deadline, 10);
      srv.readyMs = ms();
      return srv;
    } catch (err) {
      if (alive(proc)) proc.kill('SIGKILL');
      liveChildren.delete(proc);
      fs.rmSync(spec.portFile, { force: true });
      if (ownsDir) removeDir(dataDir);
      throw err;
    }
  }

  /** Throws (with the child's stderr) if the child died. */
  assertAlive(): void {
    if (!this.alive)
      throw new Error(
        `${this.label} (pid ${this.pid}) died: code ${this.proc.exitCode}, signal ${this.proc.signalCode}; stderr: ${this.stderr().trim().slice(-4000)}`,
      );
  }

  /** SIGKILL and wait for the exit. */
  async kill(): Promise<void> {
    this.rss.stop();
    if (this.alive) this.proc.kill('SIGKILL');
    await this.exited;
    liveChildren.delete(this.proc);
  }

  /** SIGTERM, wait up to `timeoutMs` (then SIGKILL); resolves with ms taken and exit code. */
  async terminate(timeoutMs = 30_000): Promise<{ ms: number; code: number | null; signal: NodeJS.Signals | null }> {
    this.rss.stop();
    const t0 = process.hrtime.bigint();
    if (this.alive) this.proc.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.exited.then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      log(`${this.label}: no exit ${timeoutMs} ms after SIGTERM; SIGKILL`);
      await this.kill();
    }
    liveChildren.delete(this.proc);
    return { ms: Number(process.hrtime.bigint() - t0) / 1e6, code: this.proc.exitCode, signal: this.proc.signalCode };
  }

  /** Kills the child if still running and removes its data dir if this object created it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.kill();
    if (this.ownsDir) removeDir(this.dataDir);
  }
}

/** Starts `node dist/cli.js serve` with SERVICE_PORT=0 in a fresh (or given) data dir. */
export function startSpool(
  opts: {
    label?: string;
    dataDir?: string;
    keepDir?: boolean;
    env?: Record<string, string>;
    nodeArgs?: string[];
    readyTimeoutMs?: number;
    cli?: string;
  } = {},
): Promise<ChildServer> {
  // opts.cli: a given build (a baseline run next to this one in the same workload).
  const cli = opts.cli ?? (process.env.BENCH_SPOOL_CLI ? path.resolve(process.env.BENCH_SPOOL_CLI) : CLI);
  if (!fs.existsSync(cli)) throw new Error(`${cli} not found: run \`npm run build\` first`);
  // BENCH_SERVER_NODE_ARGS: extra node options for every spool server (e.g. --perf-basic-prof
  // for `perf record`); BENCH_SPOOL_CLI: another build's dist/cli.js (a baseline commit).
  const extra = process.env.BENCH_SERVER_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? [];
  return ChildServer.start({
    script: cli,
    args: ['serve'],
    readyPath: '/v0/ready',
    label: opts.label ?? 'spool',
    ...opts,
    nodeArgs: [...extra, ...(opts.nodeArgs ?? [])],
  });
}

/** Starts the bare Fastify echo server (bench/echo-server.ts). */
export function startEcho(): Promise<ChildServer> {
  return ChildServer.start({ script: ECHO_SERVER, readyPath: '/ready', label: 'echo' });
}

// ---- keep-alive HTTP client --------------------------------------------------------------------

export interface Resp {
  status: number;
  body: Buffer;
  /** Request start to last response byte, ns. */
  ns: bigint;
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };

/** A node:http client with a keep-alive Agent (maxSockets = concurrency). */
export class HttpClient {
  readonly agent: http.Agent;
  constructor(
    readonly port: number,
    concurrency: number,
    private readonly timeoutMs = 60_000,
    /** Sent on every request (e.g. an `authorization` bearer). */
    private readonly extraHeaders: Record<string, string> = {},
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency, scheduling: 'fifo' });
  }

  request(method: string, p: string, body?: Buffer | string): Promise<Resp> {
    return new Promise((resolve, reject) => {
      const buf = body === undefined ? undefined : typeof body === 'string' ? Buffer.from(body) : body;
      const t0 = process.hrtime.bigint();
      const req = http.request(
        {
          agent: this.agent,
          host: '127.0.0.1',
          port: this.port,
          method,
          path: p,
          headers: buf ? { ...JSON_HEADERS, ...this.extraHeaders, 'content-length': buf.length } : this.extraHeaders,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
              ns: process.hrtime.bigint() - t0,
            }),
          );
          res.on('error', reject);
        },
      );
      req.setTimeout(this.timeoutMs, () => req.destroy(new Error(`${method} ${p}: no response within ${this.timeoutMs} ms`)));
      req.on('error', reject);
      req.end(buf);
    });
  }

  post(p: string, body: Buffer | string): Promise<Resp> {
    return this.request('POST', p, body);
  }

  /** Request expecting 2xx; returns the parsed JSON body. */
  async json(method: string, p: string, body?: unknown): Promise<any> {
    const r = await this.request(method, p, body === undefined ? undefined : Buffer.from(JSON.stringify(body)));
    const text = r.body.toString('utf8');
    if (r.status < 200 || r.status > 299) throw new Error(`${method} ${p} -> ${r.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text);
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * One keep-alive HTTP/1.1 connection with a hand-written request line and a response parser
 * that only finds the status and Content-Length: the catch-up reader's client (catchup-diff),
 * doing no more per page than its PostgreSQL peer's wire-protocol client does. node:http's
 * parser, IncomingMessage and stream machinery cost as much client CPU per page as the
 * server's own work, on the same two cores. One request at a time; chunked replies are refused
 * (spool answers every diff with a Content-Length).
 */
export class RawHttpConn {
  private sock: net.Socket | undefined;
  private acc: Buffer = Buffer.alloc(0);
  private want = -1; // body bytes still expected (-1: headers not complete)
  private status = 0;
  private chunks: Buffer[] = [];
  private have = 0;
  private waiter: { resolve: (r: Resp) => void; reject: (e: Error) => void; t0: bigint } | null = null;
  constructor(readonly port: number) {}

  private connect(): net.Socket {
    const sock = net.connect({ port: this.port, host: '127.0.0.1', noDelay: true });
    sock.on('data', (d: Buffer) => this.onData(d));
    sock.on('error', (e) => this.fail(e));
    sock.on('close', () => {
      this.sock = undefined;
      this.fail(new Error('connection closed'));
    });
    return sock;
  }

  post(p: string, body: string | Buffer): Promise<Resp> {
    return this.request('POST', p, body);
  }

  /** One request; `body` undefined sends none (a GET). */
  request(method: string, p: string, body?: string | Buffer): Promise<Resp> {
    this.sock ??= this.connect();
    const b = typeof body === 'string' ? Buffer.from(body) : (body ?? Buffer.alloc(0));
    const head =
      body === undefined
        ? `${method} ${p} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`
        : `${method} ${p} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${b.length}\r\n\r\n`;
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject, t0: process.hrtime.bigint() };
      this.sock!.write(Buffer.concat([Buffer.from(head, 'latin1'), b]));
    });
  }

  close(): void {
    this.sock?.destroy();
  }

  private fail(e: Error): void {
    const w = this.waiter;
    this.waiter = null;
    w?.reject(e);
  }

  private onData(d: Buffer): void {
    if (this.want < 0) {
      this.acc = this.acc.length ? Buffer.concat([this.acc, d]) : d;
      const end = this.acc.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = this.acc.toString('latin1', 0, end);
      this.status = Number(head.slice(9, 12));
      const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      if (!m) return this.fail(new Error(`no content-length in reply: ${head.slice(0, 300)}`));
      this.want = Number(m[1]);
      this.chunks = [this.acc.subarray(end + 4)];
      this.have = this.chunks[0]!.length;
      this.acc = Buffer.alloc(0);
    } else {
      this.chunks.push(d);
      this.have += d.length;
    }
    if (this.have < this.want) return;
    // One copy per reply at most (none when it came in one read).
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.have);
    const body = all.subarray(0, this.want);
    if (all.length > this.want) this.acc = Buffer.from(all.subarray(this.want)); // pipelined bytes (not expected)
    this.chunks = [];
    this.have = 0;
    this.want = -1;
    const w = this.waiter;
    this.waiter = null;
    w?.resolve({ status: this.status, body, ns: process.hrtime.bigint() - w.t0 });
  }
}

/**
 * Raw keep-alive sockets for requests that overlap (an open-loop writer): each request takes an
 * idle connection or opens one, and gives it back with its reply.
 */
export class RawConnPool {
  private readonly idle: RawHttpConn[] = [];
  private readonly all: RawHttpConn[] = [];
  constructor(readonly port: number) {}

  async post(p: string, body: string | Buffer): Promise<Resp> {
    let conn = this.idle.pop();
    if (!conn) this.all.push((conn = new RawHttpConn(this.port)));
    try {
      return await conn.post(p, body);
    } finally {
      this.idle.push(conn);
    }
  }

  close(): void {
    for (const c of this.all) c.close();
  }
}

/** A bench client that posts: `serialClient` (one request at a time) or `concurrentClient` (overlapping). */
export interface PostClient {
  post(p: string, body: string | Buffer): Promise<Resp>;
  close(): void;
}

/**
 * A raw socket (RawHttpConn, the default: the lightest client, so the figures are the server's) or,
 * with `kind` 'http', node:http with a keep-alive agent of one socket (~50-70 µs more per request
 * on this machine, in the client's process).
 */
export function serialClient(port: number, kind: 'raw' | 'http'): PostClient {
  return kind === 'http' ? new HttpClient(port, 1) : new RawHttpConn(port);
}

/**
 * A client whose requests may overlap (an open-loop writer, acks in flight together): a pool of
 * raw sockets, or with `kind` 'http' node:http with a keep-alive agent of `sockets` sockets.
 */
export function concurrentClient(port: number, kind: 'raw' | 'http', sockets: number): PostClient {
  return kind === 'http' ? new HttpClient(port, sockets) : new RawConnPool(port);
}

/** The client kind an environment variable asks for: `http`, or the raw socket by default. */
export function clientKindFrom(envVar: string): 'raw' | 'http' {
  return process.env[envVar] === 'http' ? 'http' : 'raw';
}

// ---- payloads ----------------------------------------------------------------------------------

/** `data` of exactly `bytes` bytes of JSON: {"msg":"<filler>"} with the index in front. */
export function makeData(i: number, bytes = 256): string {
  const head = `{"msg":"`;
  const tail = `"}`;
  const id = `r${i.toString(36).padStart(8, '0')}-`;
  const n = Math.max(0, bytes - head.length - tail.length - id.length);
  const filler = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ'.repeat(Math.ceil(n / 62) + 1).slice(0, n);
  return head + id + filler + tail;
}

/** An append body with `count` records of `bytes`-byte data, starting at index `start`. */
export function appendBody(count: number, start = 0, bytes = 256): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < count; i++) parts.push(`{"data":${makeData(start + i, bytes)}}`);
  return Buffer.from(`{"records":[${parts.join(',')}]}`);
}

/** A few distinct prebuilt bodies to cycle through (building per request would load the client). */
export function bodyPool(n: number, count: number, bytes = 256): Buffer[] {
  return Array.from({ length: n }, (_, k) => appendBody(count, k * count, bytes));
}

// ---- closed-loop load --------------------------------------------------------------------------

export interface LoadOptions {
  client: HttpClient;
  concurrency: number;
  durationMs: number;
  /** Hard cap on requests (default 10M), so a run is bounded in count as well as time. */
  maxRequests?: number;
  path: string;
  /** When set, request `i` (0, 1, ... in issue order) goes to this path instead of `path`. */
  pathFor?: (i: number) => string;
  bodies: Buffer[];
  recordsPerRequest: number;
  /** Server checked for liveness on transport errors. */
  server?: ChildServer;
}

export interface LoadResult {
  requests: number;
  okRequests: number;
  records: number;
  errors: number;
  errorSamples: string[];
  statusCounts: Record<string, number>;
  elapsedS: number;
  latMs: Float64Array;
  reqPerSec: number;
  recordsPerSec: number;
  clientCpuPct: number;
}

const MAX_HTTP_ERRORS = 1000;

/**
 * `concurrency` workers each loop: POST, wait for the full response, repeat, until the time or
 * count bound. Latency is per request (2xx only). Non-2xx answers are counted (the run stops
 * after 1000 of them); a transport error (connection refused/reset, timeout) stops the run and
 * is thrown with the server's state.
 */
export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const maxRequests = o.maxRequests ?? 10_000_000;
  const lat: number[] = [];
  const statusCounts: Record<string, number> = {};
  const errorSamples: string[] = [];
  let issued = 0;
  let ok = 0;
  let errors = 0;
  let fatal: Error | undefined;
  const cpu = new CpuMeter('self').start();
  const t0 = process.hrtime.bigint();
  const end = t0 + BigInt(o.durationMs) * 1_000_000n;
  const worker = async (w: number) => {
    let i = w;
    while (!fatal && issued < maxRequests && errors < MAX_HTTP_ERRORS && process.hrtime.bigint() < end) {
      const path = o.pathFor ? o.pathFor(issued) : o.path;
      issued++;
      const body = o.bodies[i++ % o.bodies.length]!;
      let r: Resp;
      try {
        r = await o.client.post(path, body);
      } catch (err) {
        fatal ??= err as Error;
        break;
      }
      statusCounts[r.status] = (statusCounts[r.status] ?? 0) + 1;
      if (r.status >= 200 && r.status < 300) {
        ok++;
        lat.push(Number(r.ns) / 1e6);
      } else {
        errors++;
        if (errorSamples.length < 5) errorSamples.push(`${r.status} ${r.body.toString('utf8').slice(0, 300)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, (_, w) => worker(w)));
  const elapsedS = Number(process.hrtime.bigint() - t0) / 1e9;
  const clientCpuPct = cpu.stop();
  if (fatal) {
    const state = o.server
      ? o.server.alive
        ? 'server still running'
        : `server DIED (code ${o.server.proc.exitCode}, signal ${o.server.proc.signalCode}); stderr: ${o.server.stderr().trim().slice(-4000)}`
      : '';
    throw new Error(`transport error after ${issued} requests: ${fatal.message}; ${state}`);
  }
  const latMs = Float64Array.from(lat).sort();
  return {
    requests: issued,
    okRequests: ok,
    records: ok * o.recordsPerRequest,
    errors,
    errorSamples,
    statusCounts,
    elapsedS,
    latMs,
    reqPerSec: ok / elapsedS,
    recordsPerSec: (ok * o.recordsPerRequest) / elapsedS,
    clientCpuPct,
  };
}

/**
 * Appends `total` records in batches of `batch` with `concurrency` writers (loading phase, not a
 * measurement). 429 answers are retried after a pause; anything else non-2xx throws. Bounded by
 * `deadlineMs`.
 */
export async function appendMany(o: {
  client: HttpClient;
  topic: string;
  total: number;
  batch: number;
  concurrency: number;
  deadlineMs: number;
  server?: ChildServer;
  recordBytes?: number;
  onProgress?: (done: number) => void;
}): Promise<{ records: number; elapsedS: number; retries429: number; latMs: Float64Array }> {
  const pool = bodyPool(8, o.batch, o.recordBytes ?? 256);
  const p = `/v0/topics/${encodeURIComponent(o.topic)}?return_seqs=false`;
  const batches = Math.ceil(o.total / o.batch);
  let next = 0;
  let done = 0;
  let retries = 0;
  let lastReport = Date.now();
  const lat: number[] = [];
  const t0 = process.hrtime.bigint();
  const stopAt = Date.now() + o.deadlineMs;
  const worker = async () => {
    while (next < batches) {
      const b = next++;
      const n = Math.min(o.batch, o.total - b * o.batch);
      const body = n === o.batch ? pool[b % pool.length]! : appendBody(n, b * o.batch, o.recordBytes ?? 256);
      for (let attempt = 0; ; attempt++) {
        if (Date.now() > stopAt) throw new Error(`loading ${o.topic}: deadline of ${o.deadlineMs} ms passed after ${done} records`);
        let r: Resp;
        try {
          r = await o.client.post(p, body);
        } catch (err) {
          const state =
            o.server && !o.server.alive
              ? `; server DIED (code ${o.server.proc.exitCode}, signal ${o.server.proc.signalCode}): ${o.server.stderr().trim().slice(-4000)}`
              : '';
          throw new Error(`loading ${o.topic}: ${(err as Error).message}${state}`);
        }
        if (r.status >= 200 && r.status < 300) {
          lat.push(Number(r.ns) / 1e6);
          break;
        }
        if (r.status === 429 && attempt < 100) {
          retries++;
          await sleep(50);
          continue;
        }
        throw new Error(`loading ${o.topic}: POST -> ${r.status}: ${r.body.toString('utf8').slice(0, 500)}`);
      }
      done += n;
      if (o.onProgress && Date.now() - lastReport > 5000) {
        lastReport = Date.now();
        o.onProgress(done);
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, () => worker()));
  return { records: done, elapsedS: Number(process.hrtime.bigint() - t0) / 1e9, retries429: retries, latMs: Float64Array.from(lat).sort() };
}

/** PUT a topic with the given config; throws unless 200/201. */
export async function createTopic(client: HttpClient, topic: string, config: Record<string, unknown>): Promise<void> {
  await client.json('PUT', `/v0/topics/${encodeURIComponent(topic)}`, config);
}

// ---- diff page scanning ------------------------------------------------------------------------

export interface PageInfo {
  nextFromSeq: number;
  headSeq: number;
  caughtUp: boolean;
  coldSegmentsRead: number;
}

/**
 * Reads the top-level fields that follow the records array of a diff response from the tail of
 * the body, without parsing the records (the server renders `records` first). A real consumer
 * would JSON.parse each page; set BENCH_PARSE=1 to do that too (it costs client CPU on the same
 * two cores).
 */
export function scanPage(body: Buffer, fullParse: boolean): PageInfo & { records?: number } {
  if (fullParse) {
    const j = JSON.parse(body.toString('utf8'));
    return {
      nextFromSeq: j.next_from_seq,
      headSeq: j.head_seq,
      caughtUp: j.caught_up,
      coldSegmentsRead: j.performance?.cold_segments_read ?? 0,
      records: j.records.length,
    };
  }
  const tail = body.toString('latin1', Math.max(0, body.length - 1024));
  const num = (k: string): number | undefined => {
    const i = tail.lastIndexOf(`"${k}":`);
    if (i < 0) return undefined;
    const m = /^-?\d+/.exec(tail.slice(i + k.length + 3));
    return m ? Number(m[0]) : undefined;
  };
  const nextFromSeq = num('next_from_seq');
  const headSeq = num('head_seq');
  if (nextFromSeq === undefined || headSeq === undefined)
    throw new Error(`diff response without next_from_seq/head_seq: …${tail.slice(-300)}`);
  return { nextFromSeq, headSeq, caughtUp: /"caught_up":true/.test(tail), coldSegmentsRead: num('cold_segments_read') ?? 0 };
}

// ---- statistics and output ---------------------------------------------------------------------

/** Nearest-rank percentile of a sorted array (p in 0..100). */
export function percentile(sorted: Float64Array | number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export const MB = 1024 * 1024;

export interface Row {
  /** Table label, e.g. "append-single disk 64c". */
  name: string;
  recordsPerSec: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
  peakRssMB: number | null;
  notes?: string;
  /** Anything else worth keeping in the JSON line. */
  extra?: Record<string, unknown>;
}

export interface WorkloadResult {
  workload: string;
  ok: boolean;
  error?: string;
  rows: Row[];
  summary?: Record<string, unknown>;
}

export function round(n: number | null | undefined, digits: number): number | null {
  if (n === null || n === undefined || !Number.isFinite(n)) return null;
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** A row from a load result plus the server's peak RSS. */
export function loadRow(name: string, r: LoadResult, peakRssBytes: number | null, notes?: string, extra?: Record<string, unknown>): Row {
  return {
    name,
    recordsPerSec: round(r.recordsPerSec, 0),
    p50Ms: round(percentile(r.latMs, 50), 3),
    p99Ms: round(percentile(r.latMs, 99), 3),
    peakRssMB: peakRssBytes === null ? null : round(peakRssBytes / MB, 1),
    notes,
    extra: {
      requests: r.okRequests,
      req_per_s: round(r.reqPerSec, 0),
      seconds: round(r.elapsedS, 2),
      non_2xx: r.errors,
      status_counts: r.statusCounts,
      ...(r.errorSamples.length ? { error_samples: r.errorSamples } : {}),
      p90_ms: round(percentile(r.latMs, 90), 3),
      p999_ms: round(percentile(r.latMs, 99.9), 3),
      max_ms: round(r.latMs.length ? r.latMs[r.latMs.length - 1]! : NaN, 3),
      client_cpu_pct: round(r.clientCpuPct, 0),
      ...extra,
    },
  };
}

export function machineInfo(): Record<string, unknown> {
  let cpuModel = os.cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) cpuModel = m[1]!.trim();
  } catch {
    /* not Linux */
  }
  return {
    node: process.version,
    nproc: os.availableParallelism?.() ?? os.cpus().length,
    cpu: cpuModel,
    mem_gib: round(os.totalmem() / 1024 ** 3, 1),
    platform: `${os.platform()} ${os.release()}`,
    ...cpuIdle(),
  };
}

/**
 * How idle CPUs wait (Linux): the cpuidle driver, and with the `haltpoll` driver of a guest VM
 * how long an idle vCPU polls before it halts. One-client latencies move ~2× with the poll (a
 * thread that wakes another pays the halted vCPU's wake-up: docs/PERFORMANCE.md "Idle vCPUs and
 * the guest's halt polling"), so runs are comparable only at the same setting.
 */
function cpuIdle(): { cpuidle_driver?: string; guest_halt_poll_ns?: number } {
  const read = (file: string) => {
    try {
      return fs.readFileSync(file, 'utf8').trim();
    } catch {
      return undefined;
    }
  };
  const driver = read('/sys/devices/system/cpu/cpuidle/current_driver');
  const pollNs = read('/sys/module/haltpoll/parameters/guest_halt_poll_ns');
  return {
    ...(driver === undefined ? {} : { cpuidle_driver: driver }),
    ...(pollNs === undefined ? {} : { guest_halt_poll_ns: Number(pollNs) }),
  };
}

/** One JSON line per workload on stdout, so results can be collected with `grep '^{'`. */
export function emitJson(r: WorkloadResult): void {
  process.stdout.write(`${JSON.stringify({ bench: 'spool', at: new Date().toISOString(), machine: machineInfo(), ...r })}\n`);
}

function fmtNum(n: number | null, digits = 0): string {
  if (n === null || !Number.isFinite(n)) return '–';
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** The Markdown summary table (pasteable into README). */
export function markdownTable(rows: Row[]): string {
  const lines = ['| workload | records/s | p50 ms | p99 ms | peak RSS MB | notes |', '|---|---:|---:|---:|---:|---|'];
  for (const r of rows) {
    lines.push(
      `| ${r.name} | ${fmtNum(r.recordsPerSec)} | ${fmtNum(r.p50Ms, 3)} | ${fmtNum(r.p99Ms, 3)} | ${fmtNum(r.peakRssMB, 0)} | ${r.notes ?? ''} |`,
    );
  }
  return lines.join('\n');
}

/**
 * Runs a workload as a script: `node dist/bench/<file>.js [n ...]` with positive integer
 * arguments; prints the JSON line and the markdown table, and exits 0 only when it met its target.
 */
export function runAsScript(moduleUrl: string, usage: string, run: (args: number[] | undefined) => Promise<WorkloadResult>): void {
  if (process.argv[1] !== fileURLToPath(moduleUrl)) return;
  installCleanupHandlers();
  const args = process.argv.slice(2).map(Number);
  if (args.some((n) => !Number.isInteger(n) || n < 1)) {
    process.stderr.write(`usage: ${usage}\n`);
    process.exit(2);
  }
  run(args.length ? args : undefined).then(
    (r) => {
      emitJson(r);
      process.stdout.write(`\n${markdownTable(r.rows)}\n`);
      cleanupAll();
      process.exit(r.ok ? 0 : 1);
    },
    (err: unknown) => {
      log(`fatal: ${(err as Error).stack ?? String(err)}`);
      cleanupAll();
      process.exit(1);
    },
  );
}
