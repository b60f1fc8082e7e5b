// Watch routes (docs/API.md "Watch"; docs/WATCH.md): POST /v0/watch creates a
// session from a validated subscription; GET /v0/watch/:wid opens its SSE stream.
import type { FastifyInstance } from 'fastify';
import type { Supervisor } from '../../supervisor/supervisor.js';
import { isTopicName } from '../../core/names.js';
import { fail } from '../../protocol/errors.js';
import { checkBody, parseSmallBody, queryBool } from '../parse.js';
import { HttpError, sendError, sendJson, withHttpErrors } from '../reply.js';
import { check, checkOneStart, validateWatch } from '../schemas.js';
import type { WatchBody } from '../../protocol/wire.js';
import { acceptsEventStream } from '../../streams/sse/wire.js';
import { decodeCursor } from '../../streams/watch/cursor.js';
import type { WatchOptions } from '../../streams/watch/session.js';
import type { WatchHub } from '../../streams/watch/hub.js';
import { clientGone } from '../../streams/sse/sseConnection.js';
import type { Admission } from '../admission.js';
import { setCommonHeaders } from '../responseHeaders.js';

const MAX_TOPICS = 256;
const LIMIT_DEFAULT = 256;
const MiB = 1024 * 1024;
const BATCH_BYTES_DEFAULT = 262_144;
const HEARTBEAT_DEFAULT_MS = 15_000;
const HEARTBEAT_MIN_MS = 1000;
const HEARTBEAT_MAX_MS = 60_000;

/** The session options from a validated body, defaults and clamps applied (docs/API.md "POST /v0/watch", "Limits"). */
export function watchOptions(b: WatchBody, maxLimit: number): WatchOptions {
  const limit = b.limit === undefined || b.limit === 0 ? LIMIT_DEFAULT : b.limit;
  const bytes = b.max_batch_bytes === undefined ? BATCH_BYTES_DEFAULT : b.max_batch_bytes === 0 ? MiB : b.max_batch_bytes;
  return {
    limit: Math.min(limit, maxLimit),
    maxBatchBytes: Math.min(bytes, 8 * MiB),
    heartbeatMs: Math.min(HEARTBEAT_MAX_MS, Math.max(HEARTBEAT_MIN_MS, b.heartbeat_ms ?? HEARTBEAT_DEFAULT_MS)),
    includeMeta: b.include_meta ?? true,
    includeTags: b.include_tags ?? false,
    includeData: b.include_data ?? true,
    nodes: b.node === undefined ? null : Array.isArray(b.node) ? b.node : [b.node],
    strong: b.consistency === 'strong',
  };
}

interface Watermark {
  head: number;
  earliest: number;
  /** A topic read from a time: the cursor its actor resolved the time to. */
  from?: number;
}

/** Head and earliest of each named topic, one rpc per worker; null for an absent topic. */
async function watermarks(sup: Supervisor, names: string[]): Promise<Map<string, Watermark | null>> {
  const groups = sup.namesByWorker(names);
  const answers = await Promise.all(sup.workers.map((w, i) => (groups[i]!.length > 0 ? w.watermarks(groups[i]!) : Promise.resolve([]))));
  const out = new Map<string, Watermark | null>();
  groups.forEach((g, i) => g.forEach((name, j) => out.set(name, answers[i]![j] ?? null)));
  return out;
}

/**
 * The topics that start from a time (`from_ts`, not overridden by the cursor), resolved once
 * into a seq cursor by their actors; null for a topic absent by then.
 */
async function seeks(
  sup: Supervisor,
  b: WatchBody,
  marks: Map<string, Watermark | null>,
  cursor: Map<string, number> | undefined,
): Promise<Map<string, Watermark | null>> {
  const timed = [...marks.keys()].filter((n) => marks.get(n) && b.topics[n]!.from_ts !== undefined && !cursor?.has(n));
  const answers = await Promise.all(timed.map((n) => sup.workerFor(n).request({ op: 'seek', topic: n, tsMs: b.topics[n]!.from_ts! })));
  const out = new Map<string, Watermark | null>();
  timed.forEach((n, i) => {
    const r = answers[i]!;
    if (r.ok && r.seek) out.set(n, { from: r.seek.fromSeq, head: r.seek.head, earliest: r.seek.earliest });
    else if (!r.ok && r.code === 'topic_not_found') out.set(n, null);
    else
      throw new HttpError(r.ok ? 'internal' : r.code, r.ok ? 'a seek answered without a cursor' : r.message, r.ok ? undefined : r.detail);
  });
  return out;
}

/** Where each topic's stream starts, and the session's echo of it; `missing`: the first topic absent (not lenient). */
function sessionStarts(
  b: WatchBody,
  names: string[],
  marks: Map<string, Watermark | null>,
  timed: Map<string, Watermark | null>,
  cursor: Map<string, number> | undefined,
  lenient: boolean,
): { start: Map<string, number>; topics: Record<string, { from_seq: number; head_seq: number; earliest_seq: number }>; missing?: string } {
  const start = new Map<string, number>();
  const topics: Record<string, { from_seq: number; head_seq: number; earliest_seq: number }> = {};
  for (const name of names) {
    const m = timed.has(name) ? timed.get(name) : marks.get(name);
    if (!m) {
      if (lenient) continue;
      return { start, topics, missing: name };
    }
    const t = b.topics[name]!;
    // docs/API.md "POST /v0/watch": the cursor's seq overrides from_seq, tail and from_ts; tail starts at the head now;
    // from_ts at the cursor its actor resolved it to.
    const from = cursor?.get(name) ?? m.from ?? (t.tail ? m.head : (t.from_seq ?? 0));
    start.set(name, from);
    topics[name] = { from_seq: from, head_seq: m.head, earliest_seq: m.earliest };
  }
  return { start, topics };
}

export function watchRoutes(app: FastifyInstance, sup: Supervisor, hub: WatchHub, admission: Admission): void {
  createSessionRoute(app, sup, hub, admission);
  streamRoute(app, hub, admission);
}

/** POST /v0/watch: a session over the named topics, each from its start. */
function createSessionRoute(app: FastifyInstance, sup: Supervisor, hub: WatchHub, admission: Admission): void {
  app.post(
    '/v0/watch',
    withHttpErrors(async (req, reply) => {
      const raw = checkBody(req, false);
      const parsed = parseSmallBody(raw, req);
      // docs/API.md "Authentication": every key of topics against the key's allowlist, right after
      // the parse, before the body's other 400s ("Which error wins").
      const given = (parsed as { topics?: unknown } | null)?.topics;
      if (given !== null && typeof given === 'object' && !Array.isArray(given))
        admission.requireNames(req, 'topic', Object.keys(given).sort());
      const b = check(validateWatch, parsed);
      const names = Object.keys(b.topics).sort();
      if (names.length === 0) throw new HttpError('invalid_request', 'topics must name at least one topic', { field: 'topics' });
      if (names.length > MAX_TOPICS)
        throw new HttpError('invalid_request', `a session watches at most ${MAX_TOPICS} topics`, { field: 'topics' });
      for (const name of names) if (!isTopicName(name)) throw new HttpError('invalid_request', 'invalid topic name', { topic: name });
      for (const name of names) checkOneStart(b.topics[name]!, `topics.${name}.from_ts`);
      let cursor: Map<string, number> | undefined;
      if (b.cursor !== undefined) {
        cursor = decodeCursor(b.cursor);
        if (!cursor) throw new HttpError('invalid_request', 'cursor is not a base64url JSON map of topic to seq', { field: 'cursor' });
      }
      const opts = watchOptions(b, sup.settings.maxLimit);
      const marks = await watermarks(sup, names);
      const timed = await seeks(sup, b, marks, cursor);
      const { start, topics, missing } = sessionStarts(b, names, marks, timed, cursor, queryBool(req, 'lenient', false));
      if (missing !== undefined)
        return sendError(req, reply, fail('topic_not_found', `topic ${missing} does not exist`, { topic: missing }));
      if (start.size === 0) return sendError(req, reply, fail('topic_not_found', `none of the named topics exists`, { topic: names[0] }));
      const session = hub.registry.create(opts, start, req.apiKey?.id);
      if (session) for (const name of start.keys()) admission.pressure.book.consumed(name, admission.pressure.now());
      if (!session) {
        return sendError(
          req,
          reply,
          fail('throttled', 'too many watch sessions', { limit: 'max_watch_sessions', max: hub.registry.maxSessions }),
        );
      }
      return sendJson(req, reply, 200, {
        wid: session.wid,
        stream_url: `/v0/watch/${session.wid}`,
        session_ttl_ms: hub.registry.ttlMs,
        topics,
      });
    }),
  );
}

/** GET /v0/watch/:wid: the session's stream (Server-Sent Events). */
function streamRoute(app: FastifyInstance, hub: WatchHub, admission: Admission): void {
  app.get(
    '/v0/watch/:wid',
    { exposeHeadRoute: false }, // a HEAD would open a stream it can never send: 405
    withHttpErrors(async (req, reply) => {
      // docs/API.md "Which error wins": 406, then 404, then (with auth) 401, then 429.
      if (!acceptsEventStream(req.headers.accept)) throw new HttpError('not_acceptable', 'Accept must allow text/event-stream');
      hub.registry.collect();
      const session = hub.registry.get((req.params as { wid: string }).wid);
      if (!session) throw new HttpError('not_found', 'unknown or expired watch session; POST /v0/watch again');
      const owner = admission.admitWatchStream(req, session.ownerKeyId); // 401 unless the creating key
      if (clientGone(reply.raw)) {
        reply.hijack(); // nobody to answer, and nothing taken yet
        return reply;
      }
      if (!hub.slots.acquire())
        throw new HttpError('throttled', 'too many SSE connections', { limit: 'max_sse_connections', max: hub.slots.max });
      let releaseKey: () => void;
      try {
        releaseKey = admission.acquireStream(owner); // charged to the creating key (docs/API.md "Limits")
      } catch (err) {
        hub.slots.release();
        throw err;
      }
      reply.raw.once('close', releaseKey);
      const lastEventId = req.headers['last-event-id'];
      if (typeof lastEventId === 'string' && lastEventId !== '') {
        const given = decodeCursor(lastEventId.trim());
        if (given) session.rewind(given); // otherwise ignored without error (docs/API.md "GET /v0/watch/:wid")
      }
      // The stream's head is written past Fastify, so it gets the common headers here
      // (x-request-id: docs/API.md "Conventions"); writeHead merges them in.
      setCommonHeaders(req, (name, value) => reply.raw.setHeader(name, value));
      reply.hijack();
      await hub.open(session, reply.raw);
      return reply;
    }),
  );
}
