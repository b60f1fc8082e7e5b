// Spawning a server as a child process, for the test helpers (test/helpers/server.ts) and the
// benchmarks (bench/lib.ts): the settings of a loopback server on any free port, the bound port
// read back from the port file, and readiness polled over HTTP, each step failing with the
// child's stderr when the child exits or the deadline passes. The caller owns the process
// afterwards (its kill, its cleanup registry, its data dir).
import http from 'node:http';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

export interface SpawnSpec {
  /** The command and its arguments: the node binary first, or a wrapper such as `nsenter ... --`. */
  argv: string[];
  dataDir: string;
  /** Where the server writes its port (SERVICE_PORT_FILE); removed before the spawn. */
  portFile: string;
  /** Settings over the loopback defaults (and over this process's environment). */
  env?: Record<string, string>;
  /** Names the child in errors. */
  label: string;
  /** Keep only about this much of the child's stderr, its tail (default: all of it). */
  stderrTailBytes?: number;
  /** The child's working directory (default: this process's). */
  cwd?: string;
}

export interface SpawnedServer {
  proc: ChildProcess;
  /** What the child wrote to stderr so far (its tail when capped). */
  stderr(): string;
}

const alive = (p: ChildProcess): boolean => p.exitCode === null && p.signalCode === null;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Starts the child on 127.0.0.1, port 0, with its data dir and port file; stdout is dropped. */
export function spawnServer(spec: SpawnSpec): SpawnedServer {
  fs.rmSync(spec.portFile, { force: true });
  const [cmd, ...args] = spec.argv;
  const proc = spawn(cmd!, args, {
    env: {
      ...process.env,
      SERVICE_HOST: '127.0.0.1',
      SERVICE_PORT: '0',
      SERVICE_PORT_FILE: spec.portFile,
      SERVICE_DATA_DIR: spec.dataDir,
      ...spec.env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd: spec.cwd,
  });
  let err = '';
  const cap = spec.stderrTailBytes;
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    if (cap !== undefined && err.length > 2 * cap) err = err.slice(-cap);
  });
  return { proc, stderr: () => err };
}

/** Waits for the port file to hold a port; throws if the child exits first or `deadline` (epoch ms) passes. */
export async function waitForPort(s: SpawnedServer, spec: SpawnSpec, deadline: number, pollMs: number): Promise<number> {
  for (;;) {
    if (!alive(s.proc))
      throw new Error(`${spec.label} exited early (code ${s.proc.exitCode}, signal ${s.proc.signalCode}): ${s.stderr().trim()}`);
    if (Date.now() > deadline) throw new Error(`${spec.label} did not bind in time: ${s.stderr().trim()}`);
    try {
      const text = fs.readFileSync(spec.portFile, 'utf8').trim();
      if (/^\d+$/.test(text)) return Number(text);
    } catch {
      /* not written yet */
    }
    await sleep(pollMs);
  }
}

/** Waits for `GET readyPath` to answer 200; throws if the child exits first or `deadline` (epoch ms) passes. */
export async function waitForReady(
  s: SpawnedServer,
  label: string,
  port: number,
  readyPath: string,
  deadline: number,
  pollMs: number,
): Promise<void> {
  for (;;) {
    if (!alive(s.proc))
      throw new Error(`${label} exited before ready (code ${s.proc.exitCode}, signal ${s.proc.signalCode}): ${s.stderr().trim()}`);
    if (Date.now() > deadline) throw new Error(`${label} not ready in time: ${s.stderr().trim()}`);
    if ((await probe(port, readyPath)) === 200) return;
    await sleep(pollMs);
  }
}

/** One GET on a fresh connection; resolves with the status (0 on a connection error). */
function probe(port: number, p: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, agent: false, timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}
