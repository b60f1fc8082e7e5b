// Test harness: spawns the real server (dist/cli.js serve) on a free port with its own data
// directory, waits for readiness, and offers small fetch helpers. Used by HTTP and crash tests.
import { after } from 'node:test';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnServer, waitForPort, waitForReady, type SpawnSpec } from '../support/serverProcess.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** dist/test/helpers → dist/cli.js */
export const CLI = path.resolve(here, '../../cli.js');

export interface Server {
  url: string;
  port: number;
  dataDir: string;
  proc: ChildProcess;
  stderr: () => string;
  /** SIGTERM and wait for exit; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait for exit. */
  kill(): Promise<void>;
}

const created: string[] = [];
const running = new Set<ChildProcess>();
// Each test file runs in its own process: when it exits, every server it started that is still
// running is killed (even after a failed or timed-out test), and its temp dirs and port files go.
/**
 * For files that kill and restart servers: registers an after() hook that SIGKILLs every server
 * the file started and that is still running, even after a failed or timed-out test.
 */
export function killServersAfterFile(): void {
  after(async () => {
    await Promise.all(
      [...running].map((p) => {
        const gone = new Promise((r) => p.once('exit', r));
        p.kill('SIGKILL');
        return gone;
      }),
    );
  });
}

process.on('exit', () => {
  for (const p of running) p.kill('SIGKILL');
  for (const d of created) {
    fs.rmSync(d, { recursive: true, force: true });
    fs.rmSync(`${d}-port`, { force: true });
  }
});

export function tempDir(prefix = 'spool-test-'): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  created.push(d);
  return d;
}

export interface StartOptions {
  dataDir?: string;
  env?: Record<string, string>;
  /** Wait for /v0/ready (default true); false returns as soon as the port file exists. */
  waitReady?: boolean;
  /** A command the server runs under (e.g. `nsenter -t <pid> -m --` to enter a mount namespace). */
  prefix?: string[];
  /** Where the server writes its port (default `<dataDir>-port`). */
  portFile?: string;
}

export async function startServer(opts: StartOptions = {}): Promise<Server> {
  const dataDir = opts.dataDir ?? tempDir();
  const spec: SpawnSpec = {
    argv: [...(opts.prefix ?? []), process.execPath, CLI, 'serve'],
    dataDir,
    portFile: opts.portFile ?? path.join(dataDir + '-port'),
    env: opts.env,
    label: 'server',
  };
  const child = spawnServer(spec);
  const proc = child.proc;
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000; // generous: a loaded 2-core CI machine starts slowly
  const port = await waitForPort(child, spec, deadline, 20);
  const url = `http://127.0.0.1:${port}`;
  if (opts.waitReady !== false) await waitForReady(child, spec.label, port, '/v0/ready', deadline, 20);
  return {
    url,
    port,
    dataDir,
    proc,
    stderr: child.stderr,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      return exited;
    },
    async kill() {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

export interface Resp {
  status: number;
  headers: Headers;
  body: any; // parsed JSON when the response is JSON, else the text
  text: string;
}

export async function req(base: string, method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<Resp> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' || body instanceof Uint8Array ? (body as string) : JSON.stringify(body);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
      (init.headers as Record<string, string>)['content-type'] = 'application/json; charset=utf-8';
  }
  const r = await fetch(base + p, init);
  const text = await r.text();
  let parsed: unknown = text;
  if ((r.headers.get('content-type') ?? '').includes('json')) {
    try {
      parsed = JSON.parse(text);
    } catch {
      /* leave text */
    }
  }
  return { status: r.status, headers: r.headers, body: parsed, text };
}

/** A client bound to one server. */
export function client(base: string) {
  return {
    get: (p: string, h?: Record<string, string>) => req(base, 'GET', p, undefined, h),
    put: (p: string, b?: unknown, h?: Record<string, string>) => req(base, 'PUT', p, b, h),
    post: (p: string, b?: unknown, h?: Record<string, string>) => req(base, 'POST', p, b, h),
    del: (p: string, h?: Record<string, string>) => req(base, 'DELETE', p, undefined, h),
  };
}
