// The server of the fast test tier (test/inject/): a real Supervisor on a temp data dir whose topic
// workers and WAL writer run on this thread (test/support/inProcessThreads.ts, on the real
// filesystem and the system clock), and the Fastify app of buildServer, driven through Fastify's
// inject(): no spawned process, no socket. Settings come from the same SERVICE_* env map a spawned
// server takes (test/helpers/server.ts); replies come back in the shapes of that file's `client`
// and of test/http/util.ts's `raw`, so a rule test reads the same either way. What needs a real
// socket (SSE streams, keep-alive, Node's own parser errors, SIGTERM, SIGKILL) stays spawned.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { readSettings } from '../../src/config.js';
import { SystemClock } from '../../src/core/clock.js';
import { KeyRing } from '../../src/auth/keys.js';
import { createLogger } from '../../src/log.js';
import { nodeFs } from '../../src/storage/fs.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import { buildServer } from '../../src/http/server.js';
import { InProcessThreads } from '../support/inProcessThreads.js';
import type { Resp } from './server.js';
import type { RawOptions, RawResp } from '../http/util.js';

/** A reply that has not ended by then is a stream (or a hang): it fails instead of waiting. */
const REPLY_TIMEOUT_MS = 30_000;

export interface InjectClient {
  /** Any method, as test/helpers/server.ts's `req`. */
  req(method: string, p: string, b?: unknown, h?: Record<string, string>): Promise<Resp>;
  get(p: string, h?: Record<string, string>): Promise<Resp>;
  put(p: string, b?: unknown, h?: Record<string, string>): Promise<Resp>;
  post(p: string, b?: unknown, h?: Record<string, string>): Promise<Resp>;
  del(p: string, h?: Record<string, string>): Promise<Resp>;
}

export interface InjectServer {
  app: FastifyInstance;
  sup: Supervisor;
  dataDir: string;
  /** Everything logged (request log lines, supervisor, workers, WAL writer): a spawned server's stderr. */
  logs: () => string;
  /** Requests as test/helpers/server.ts's `client` sends them (a JSON body gets a JSON Content-Type). */
  client: InjectClient;
  /** One request with exactly the given headers (plus Content-Length), as test/http/util.ts's `raw`. */
  raw(method: string, path: string, opts?: RawOptions): Promise<RawResp>;
  /** Closes the app, shuts the supervisor down (final checkpoint) and removes the data dir. */
  stop(): Promise<void>;
}

const dirs = new Set<string>();
process.on('exit', () => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** Starts a server on a fresh temp data dir with the given SERVICE_* settings; ready on return. */
export async function startInjectServer(env: Record<string, string> = {}): Promise<InjectServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-inject-'));
  dirs.add(dataDir);
  const settings = readSettings({ SERVICE_DATA_DIR: dataDir, ...env });
  const lines: string[] = [];
  const log = (m: string) => void lines.push(m);
  const sup = new Supervisor(settings, { info: log, warn: log, error: log }, nodeFs, new InProcessThreads(nodeFs, new SystemClock(), log));
  await sup.start();
  await sup.recover();
  const logger = createLogger(settings.logLevel, { write: (line: string) => void lines.push(line) });
  const { app } = await buildServer(sup, KeyRing.parse(settings.apiKeys), logger);
  await app.ready();
  const raw = (method: string, p: string, opts: RawOptions = {}) => inject(app, method, p, opts);
  let stopped: Promise<void> | undefined;
  return {
    app,
    sup,
    dataDir,
    logs: () => lines.join('\n'),
    client: clientOf(raw),
    raw,
    stop: () =>
      (stopped ??= (async () => {
        await app.close();
        await sup.shutdown();
        fs.rmSync(dataDir, { recursive: true, force: true });
        dirs.delete(dataDir);
      })()),
  };
}

type Raw = (method: string, p: string, opts?: RawOptions) => Promise<RawResp>;

function clientOf(raw: Raw): InjectClient {
  const send = async (method: string, p: string, body: unknown, h: Record<string, string> = {}): Promise<Resp> => {
    const headers = { ...h };
    let payload: string | Buffer | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : body instanceof Uint8Array ? Buffer.from(body) : JSON.stringify(body);
      if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json; charset=utf-8';
    }
    const r = await raw(method, p, { headers, body: payload });
    const hs = new Headers();
    for (const [k, v] of Object.entries(r.headers)) if (v !== undefined) hs.set(k, Array.isArray(v) ? v.join(', ') : String(v));
    return { status: r.status, headers: hs, body: r.body, text: r.text };
  };
  return {
    req: send,
    get: (p, h) => send('GET', p, undefined, h),
    put: (p, b, h) => send('PUT', p, b, h),
    post: (p, b, h) => send('POST', p, b, h),
    del: (p, h) => send('DELETE', p, undefined, h),
  };
}

async function inject(app: FastifyInstance, method: string, url: string, opts: RawOptions): Promise<RawResp> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  // As node:http sends it: an empty body is `Content-Length: 0`, not an absent body.
  if (opts.body !== undefined) headers['content-length'] = String(Buffer.byteLength(opts.body));
  const req: InjectOptions = { method: method as InjectOptions['method'], url, headers };
  if (opts.body !== undefined && opts.body.length > 0) req.payload = opts.body;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${method} ${url}: no complete reply in ${REPLY_TIMEOUT_MS} ms (a stream needs a real socket: test/http)`)),
      REPLY_TIMEOUT_MS,
    );
  });
  const res = await Promise.race([app.inject(req), timeout]).finally(() => clearTimeout(timer));
  const rawBytes = res.rawPayload;
  const decoded = String(res.headers['content-encoding'] ?? '').includes('gzip') ? zlib.gunzipSync(rawBytes) : rawBytes;
  const text = decoded.toString('utf8');
  let body: unknown = text;
  if (String(res.headers['content-type'] ?? '').includes('json')) {
    try {
      body = JSON.parse(text);
    } catch {
      /* leave text */
    }
  }
  return { status: res.statusCode, headers: res.headers as RawResp['headers'], raw: rawBytes, text, body };
}
