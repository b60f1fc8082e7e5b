// Admission (main thread): ONE onRequest hook driven by ONE route table (docs/API.md "Which error wins", "Authentication",
// docs/API.md "Limits"). Each route declares the scopes it needs and which path name it touches; the hook decides
// 401 (missing or unknown key), 403 (scope, then the path name against the key's allowlist) and
// the per-key inflight cap (429). Names that live in bodies (watch topics, `dead_letter`, router
// source/dest) are checked by `requireNames` right after the body parses, still from here; the
// append's "admin when it would create with a config" is decided by the topic actor from the
// `AppendAuth` this module computes. No route looks at keys itself.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Allowlist, type Scope, allowsName, firstRefused, nameRefusal, scopeRefusal } from '../auth/allowlist.js';
import { type ApiKey, KeyRing, bearerToken } from '../auth/keys.js';
import { KeySlots } from '../auth/keySlots.js';
import { HttpError, sendError } from './reply.js';
import type { Admit, PressureGate } from '../pressure/gate.js';
import type { PriorityBook } from '../pressure/priorityBook.js';
import { rawBody } from './parse.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated key (auth enabled), set by the admission hook. */
    apiKey?: ApiKey;
    /** Time parked behind the pressure gate (performance.throttle_wait_ms). */
    throttleWaitMs?: number;
  }
}

/** The pressure side of admission (docs/ARCHITECTURE.md "Admission"): the gate, the priority book, the clock. */
export interface PressureParts {
  gate: PressureGate;
  book: PriorityBook;
  now: () => number;
}

const DISABLE_BP = Buffer.from('"disable_backpressure"');

/** `"disable_backpressure"`, `:`, `true` with JSON whitespace between (append bodies are not parsed on main). */
export function setsDisableBackpressure(body: Buffer): boolean {
  const ws = (c: number | undefined) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
  for (let at = body.indexOf(DISABLE_BP); at >= 0; at = body.indexOf(DISABLE_BP, at + 1)) {
    let i = at + DISABLE_BP.length;
    while (ws(body[i])) i++;
    if (body[i] !== 0x3a) continue;
    i++;
    while (ws(body[i])) i++;
    if (body.toString('latin1', i, i + 4) === 'true') return true;
  }
  return false;
}

type NameKind = 'topic' | 'router';

export interface RouteRule {
  scopes: readonly Scope[];
  /** The path parameter checked against the allowlist (docs/API.md "Authentication"), if any. */
  pathName?: NameKind;
  /**
   * `public`: never a key (documents that hold no data); `probe`: no key unless
   * SERVICE_PROBE_AUTH; `stream`: an SSE GET, `?token=` accepted and not
   * counted as inflight; `watchStream`: the session decides (its creating key, docs/API.md "Which error wins"
   * order 406, 404, 401), via `admitWatchStream`.
   */
  kind?: 'public' | 'probe' | 'stream' | 'watchStream';
  /**
   * The pressure gate (docs/ARCHITECTURE.md "Admission"): `hold` keeps the gate slot until the answer is sent; `pass` (a diff,
   * which may long-poll) only waits its turn. Absent: the route does not go through the gate.
   */
  gate?: 'hold' | 'pass';
  /**
   * A `hold` route whose body may name this field to long-poll (a blocking claim's `wait_ms`): a
   * body that names it only waits its turn, as `pass` does, instead of holding a slot while it waits.
   */
  waitField?: string;
  /** The route consumes the path topic (docs/API.md "GET /v0/topics/:topic" auto-priority recency): `touch` = unless ?touch=false. */
  consumes?: 'always' | 'touch';
  /** Registered only with a debug setting (SERVICE_STAGE_CLOCK), and not in the API description. */
  debugOnly?: true;
  /** The answer holds every topic's data (a backup): a key with name prefixes is refused (403). */
  wholeServer?: true;
}

const R: Scope = 'read';
const W: Scope = 'write';
const D: Scope = 'delete';
const A: Scope = 'admin';

/** docs/API.md "Authentication", keyed by method and the Fastify route pattern. Router rows apply once the routes exist. */
export const ROUTE_RULES: Readonly<Record<string, RouteRule>> = {
  'GET /v0/health': { scopes: [], kind: 'probe' },
  'GET /healthz': { scopes: [], kind: 'probe' },
  'GET /v0/ready': { scopes: [], kind: 'probe' },
  'GET /readyz': { scopes: [], kind: 'probe' },
  'GET /v0/metrics': { scopes: [R] },
  'GET /v0/topics': { scopes: [R] }, // results filtered (listQueries)
  'GET /v0/topics/:topic': { scopes: [R], pathName: 'topic', gate: 'hold', consumes: 'touch' },
  'PUT /v0/topics/:topic': { scopes: [A], pathName: 'topic', gate: 'hold' }, // + dead_letter (requireNames)
  'DELETE /v0/topics/:topic': { scopes: [D], pathName: 'topic', gate: 'hold' },
  'POST /v0/topics/:topic': { scopes: [W], pathName: 'topic', gate: 'hold' }, // + admin to create with config (appendAuth)
  'POST /v0/topics/:topic/diff': { scopes: [R], pathName: 'topic', gate: 'pass', consumes: 'always' },
  'POST /v0/topics/:topic/delete': { scopes: [D], pathName: 'topic', gate: 'hold' },
  'POST /v0/topics/:topic/claim': { scopes: [R, W], pathName: 'topic', gate: 'hold', waitField: 'wait_ms' },
  'POST /v0/topics/:topic/ack': { scopes: [W], pathName: 'topic', gate: 'hold' },
  'POST /v0/topics/:topic/nack': { scopes: [W], pathName: 'topic', gate: 'hold' },
  'POST /v0/topics/:topic/extend': { scopes: [W], pathName: 'topic', gate: 'hold' },
  'POST /v0/topics/:topic/term': { scopes: [W], pathName: 'topic', gate: 'hold' },
  // Reads and deletes the dead-letter topic, writes the queue. + from (requireNames), or the
  // configured dead_letter (checked by the queue's actor).
  'POST /v0/topics/:topic/redrive': { scopes: [R, W, D], pathName: 'topic', gate: 'hold' },
  'GET /v0/topics/:topic/work': { scopes: [R, W], pathName: 'topic', kind: 'stream' },
  'GET /v0/topics/:topic/leases': { scopes: [R], pathName: 'topic', gate: 'hold' },
  'PUT /v0/routers/:router': { scopes: [A], pathName: 'router' }, // + source, dest (requireRouterEnds)
  'GET /v0/routers/:router': { scopes: [R], pathName: 'router' }, // + stored source, dest
  'DELETE /v0/routers/:router': { scopes: [D], pathName: 'router' }, // + stored source, dest
  'GET /v0/routers': { scopes: [R] }, // results filtered (routerVisible)
  'POST /v0/watch': { scopes: [R] }, // + every key of topics (requireNames)
  'GET /v0/watch/:wid': { scopes: [], kind: 'watchStream' },
  // Operations (docs/OPERATIONS.md): the static status page and the API description hold no data
  // (the page asks for a key before it reads any); a backup holds all of it.
  'GET /': { scopes: [], kind: 'public' },
  'GET /v0/openapi.json': { scopes: [], kind: 'public' },
  'GET /v0/backup': { scopes: [A], wholeServer: true },
  // Only with SERVICE_STAGE_CLOCK (debug): the stage clock's summary, and its reset.
  'GET /v0/debug/stages': { scopes: [A], debugOnly: true },
  'DELETE /v0/debug/stages': { scopes: [A], debugOnly: true },
};

export function ruleFor(method: string, url: string | undefined): RouteRule | undefined {
  if (url === undefined) return undefined;
  return ROUTE_RULES[`${method === 'HEAD' ? 'GET' : method} ${url}`];
}

function queryToken(req: FastifyRequest): string | undefined {
  const v = (req.query as Record<string, string | string[] | undefined> | undefined)?.token;
  const t = (Array.isArray(v) ? v[v.length - 1] : v)?.trim();
  return t === '' ? undefined : t;
}

export interface AdmissionOptions {
  probeAuth: boolean;
  maxInflightPerKey: number;
  maxSseConnectionsPerKey: number;
  /** docs/API.md "Limits" max_total_bytes; 0 = no cap. */
  maxTotalBytes: number;
}

/** What the topic actor needs to finish an append's authorization (docs/API.md "Authentication": the append row and the prefix rule). */
export interface AppendAuth {
  /** The key has admin: it may create a topic from a body `config`. */
  admin: boolean;
  /** Checked against `config.dead_letter`. */
  prefixes: Allowlist;
}

export class Admission {
  readonly inflight: KeySlots;
  readonly streams: KeySlots;
  private readonly lastBySocket = new WeakMap<object, { header: string; key: ApiKey }>();

  constructor(
    readonly keys: KeyRing,
    private readonly opts: AdmissionOptions,
    readonly pressure: PressureParts,
  ) {
    this.inflight = new KeySlots(opts.maxInflightPerKey);
    this.streams = new KeySlots(opts.maxSseConnectionsPerKey);
  }

  get enabled(): boolean {
    return this.keys.enabled;
  }

  /** The onRequest hook (registered after the lifecycle gate). */
  readonly hook = (req: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    if (!this.keys.enabled) return done(); // dev mode: the header is ignored
    const rule = ruleFor(req.method, req.routeOptions.url);
    if (rule?.kind === 'watchStream') return done();
    if (rule?.kind === 'public' || (rule?.kind === 'probe' && !this.opts.probeAuth)) return done();
    const key = this.authenticate(req, rule?.kind === 'stream');
    if (!key) return void sendError(req, reply, unauthorized());
    req.apiKey = key;
    if (!rule) return done(); // 404 / 405 follow
    const lacking = scopeRefusal(rule.scopes, key.scopes);
    if (lacking) return void sendError(req, reply, new HttpError('forbidden', lacking.message, lacking.detail));
    if (rule.wholeServer && key.prefixes) return void sendError(req, reply, forbiddenWholeServer(key.prefixes));
    if (rule.pathName && key.prefixes) {
      const name = (req.params as Record<string, string>)[rule.pathName];
      if (name !== undefined && !allowsName(key.prefixes, name))
        return void sendError(req, reply, forbiddenName(rule.pathName, name, key.prefixes));
    }
    if (rule.kind !== 'stream') {
      if (!this.inflight.acquire(key.id)) {
        return void sendError(
          req,
          reply,
          throttledCap('too many requests in flight for this key', 'max_inflight_per_key', this.inflight.max),
        );
      }
      reply.raw.once('close', this.inflight.releaser(key.id));
    }
    done();
  };

  /**
   * The key of a request: the bearer header, else (on SSE GETs) `?token=`. Decision: a keep-alive
   * connection remembers the last Authorization header it presented and the key it resolved to,
   * so a client sending the same header again skips the hash and the comparisons (they are most
   * of the per-request cost of auth). What is remembered is what that connection itself sent,
   * never a configured secret; it goes with the socket; any other header is checked in full.
   */
  private authenticate(req: FastifyRequest, allowQuery: boolean): ApiKey | undefined {
    const header = req.headers.authorization;
    const sock = req.raw.socket;
    if (typeof header === 'string') {
      const last = this.lastBySocket.get(sock);
      if (last && last.header === header) return last.key;
      const token = bearerToken(header);
      if (token !== undefined) {
        const key = this.keys.authenticate(token);
        if (key) this.lastBySocket.set(sock, { header, key });
        return key; // a bearer header wins over ?token= (docs/API.md "Authentication")
      }
    }
    return allowQuery ? this.keys.authenticate(queryToken(req)) : undefined;
  }

  /**
   * The preHandler hook of a gated route (body read, before the handler), made once per route
   * so that nothing is looked up per request: records consumption for auto-priority, then passes
   * the request through the pressure gate, ordered by the path topic's effective_priority. A
   * shed request is 429 throttled with detail.retry_after_ms, nothing applied. An append whose
   * body sets disable_backpressure waits instead (a byte search: data that merely contains that
   * text also waits, which is harmless).
   */
  gateHookFor(rule: RouteRule, isAppend: boolean): (req: FastifyRequest, reply: FastifyReply, done: () => void) => void {
    const waitField = rule.waitField === undefined ? undefined : Buffer.from(JSON.stringify(rule.waitField));
    const consumes = rule.consumes;
    // A held slot's release on the response's close, one function per route: `close` comes once
    // per response, so `on` with it allocates nothing per request (`once` wraps each listener).
    const leaveOnClose = (): void => this.pressure.gate.leave();
    return (req, reply, done) => {
      const hold = rule.gate === 'hold' && !(waitField !== undefined && rawBody(req).includes(waitField));
      const topic = (req.params as Record<string, string>).topic ?? '';
      const { gate, book, now } = this.pressure;
      if (consumes === 'always' || (consumes === 'touch' && !/[?&]touch=(false|0)(&|$)/.test(req.url))) book.consumed(topic, now());
      // Without pressure (nothing parked) a request runs at once: a held slot is counted and given
      // back when the response closes; a passing one needs nothing. No priority, no admission
      // object, no closure (this hook runs for every topic request).
      if (gate.runsAtOnce) {
        if (hold) {
          gate.enterNow();
          reply.raw.on('close', leaveOnClose);
        }
        return done();
      }
      // The body search only matters when the gate may park (it runs everything at once otherwise).
      const bounded = !(isAppend && setsDisableBackpressure(rawBody(req)));
      // One 'close' listener: a client gone while parked gives its slot back at once (it would
      // never fire 'close' again), and a held slot is given back when the response closes. A
      // request that holds nothing drops it once admitted: it would keep this hook's closures
      // (and Fastify's hook runner) alive for as long as a long-poll waits.
      let gone = false;
      let held: (() => void) | undefined;
      const onClose = () => {
        gone = true;
        held?.();
      };
      reply.raw.on('close', onClose);
      const settle = (a: Admit) => {
        if (a.ok && gone) return a.release();
        if (!hold || !a.ok) reply.raw.removeListener('close', onClose);
        if (!a.ok) {
          return void sendError(
            req,
            reply,
            new HttpError('throttled', 'the server is under pressure; retry later', { retry_after_ms: a.retryAfterMs }),
          );
        }
        if (a.waitedMs > 0) req.throttleWaitMs = a.waitedMs;
        if (hold) held = a.release;
        else a.release();
        done();
      };
      const a = gate.admit(book.effective(topic, now()), bounded);
      if (a instanceof Promise) void a.then(settle);
      else settle(a);
    };
  }

  /** 403 naming the first body name outside the key's allowlist (docs/API.md "Authentication"); call right after parsing. */
  requireNames(req: FastifyRequest, kind: NameKind, names: Iterable<string>): void {
    const prefixes = req.apiKey?.prefixes ?? null;
    const bad = firstRefused(prefixes, names);
    if (bad !== undefined) throw forbiddenName(kind, bad, prefixes ?? []);
  }

  /**
   * Router routes (for the lead to wire at merge): a router PUT's `source` and `dest`, and the
   * stored ones on GET/DELETE of an existing router, must be allowed (docs/API.md "Authentication"): 403 with
   * `detail.topic` naming the first refused one.
   */
  requireRouterEnds(req: FastifyRequest, source: string, dest: string): void {
    this.requireNames(req, 'topic', [source, dest]);
  }

  /** GET /v0/routers filter: a router is listed only when its name, source and dest are allowed. */
  routerVisible(req: FastifyRequest, router: { name: string; source: string; dest: string }): boolean {
    const p = req.apiKey?.prefixes ?? null;
    return allowsName(p, router.name) && allowsName(p, router.source) && allowsName(p, router.dest);
  }

  /**
   * docs/API.md "Limits" max_total_bytes, on every append (dev mode too): refused once the live bytes of all
   * topics have reached the cap. The total is the workers' last sample (at most ~100 ms old), so
   * a burst may pass the cap by what arrives within one sample.
   */
  requireByteRoom(liveBytes: number): void {
    const max = this.opts.maxTotalBytes;
    if (max > 0 && liveBytes >= max) throw throttledCap('the service holds its maximum of live bytes', 'max_total_bytes', max);
  }

  /** The allowlist of the request's key (null: any name). */
  allowlist(req: FastifyRequest): Allowlist {
    return req.apiKey?.prefixes ?? null;
  }

  /** For an append: what the actor decides once it knows whether the topic exists. */
  appendAuth(req: FastifyRequest): AppendAuth | undefined {
    const key = req.apiKey;
    if (!key) return undefined;
    return { admin: key.scopes.has('admin'), prefixes: key.prefixes };
  }

  /**
   * The watch stream GET, after its 406 and 404 (docs/API.md "Which error wins"): with auth enabled the bearer
   * (header, else `?token=`) must be the key that created the session, else 401 — a broader key
   * too. Returns the owner, to charge the stream to.
   */
  admitWatchStream(req: FastifyRequest, ownerId: number | undefined): ApiKey | undefined {
    if (!this.keys.enabled) return undefined;
    const key = this.keys.authenticate(bearerToken(req.headers.authorization) ?? queryToken(req));
    if (!key || key.id !== ownerId) throw unauthorized();
    return key;
  }

  /**
   * Charges an SSE stream to its key (docs/API.md "Limits" max_sse_connections_per_key; auth enabled only).
   * Returns the release function (call it when the stream closes), or throws 429.
   */
  acquireStream(key: ApiKey | undefined): () => void {
    if (!key) return () => {};
    if (!this.streams.acquire(key.id)) {
      throw throttledCap('too many SSE connections for this key', 'max_sse_connections_per_key', this.streams.max);
    }
    return this.streams.releaser(key.id);
  }
}

function unauthorized(): HttpError {
  return new HttpError('unauthorized', 'a valid API key is required (Authorization: Bearer <key>)');
}

/** A route whose answer holds every topic, asked with a key limited to some names. */
function forbiddenWholeServer(prefixes: readonly string[]): HttpError {
  return new HttpError(
    'forbidden',
    'this key may name only some topics, and a backup holds every topic: it needs a key without name prefixes',
    {
      allowed_prefixes: prefixes,
    },
  );
}

function forbiddenName(kind: NameKind, name: string, prefixes: readonly string[]): HttpError {
  const r = nameRefusal(kind, name, prefixes);
  return new HttpError('forbidden', r.message, r.detail);
}

export function throttledCap(message: string, limit: string, max: number): HttpError {
  return new HttpError('throttled', message, { limit, max });
}
