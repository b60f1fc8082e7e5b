// Topic routes: create/configure, state, delete, list, append and diff (docs/API.md "Topics", "Append",
// "Diff"). Small bodies are parsed here; append bodies go to the owning worker as
// raw bytes (a transferred standalone buffer) and are scanned there.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Supervisor } from '../../supervisor/supervisor.js';
import { resolveConfig } from '../../protocol/topicConfig.js';
import { checkBody, parseSmallBody, queryBool, queryString, topicParam } from '../parse.js';
import { HttpError, sendError, sendJson, sendResult, withHttpErrors } from '../reply.js';
import { check, checkOneStart, parseMatch, validateDiff, validateRecordDelete } from '../schemas.js';
import type { DiffRequest, TopicResult, TopicSummary } from '../../protocol/messages/rpc.js';
import type { Metrics } from '../metrics.js';
import { LongPoll, type WaitPort } from '../longPoll.js';
import { nowMs } from '../../core/stopwatch.js';
import { stageClock } from '../../core/stageClock.js';
import '../stageHooks.js'; // FastifyRequest.stageTag
import type { Admission } from '../admission.js';
import { listPrefixes } from '../../auth/allowlist.js';
import { encodeCursor, pageQuery } from '../listPage.js';

const WAIT_MS_MAX = 30_000;

export function topicRoutes(app: FastifyInstance, sup: Supervisor, metrics: Metrics, admission: Admission): void {
  putTopicRoute(app, sup, admission);
  topicStateRoute(app, sup);
  deleteTopicRoute(app, sup, admission);
  appendRoute(app, sup, metrics, admission);
  diffRoute(app, sup, metrics);
  deleteRecordsRoute(app, sup);
  listTopicsRoute(app, sup, admission);
}

/** PUT /v0/topics/:topic: create, or change the config of, a topic. */
function putTopicRoute(app: FastifyInstance, sup: Supervisor, admission: Admission): void {
  app.put(
    '/v0/topics/:topic',
    withHttpErrors(async (req, reply) => {
      const raw = checkBody(req, true); // 415 comes before the 400 family (docs/API.md "Which error wins")
      const topic = topicParam(req);
      const body = parseSmallBody(raw, req);
      if (typeof body.dead_letter === 'string') admission.requireNames(req, 'topic', [body.dead_letter]);
      const resolved = resolveConfig(topic, body);
      if (!resolved.ok) return sendError(req, reply, resolved);
      const r = await sup.workerFor(topic).request({ op: 'put', topic, config: resolved.config });
      if (r.ok) {
        // The priority book (docs/ARCHITECTURE.md "Admission") learns the topic's priority from the config now in force.
        const cfg = (
          JSON.parse(`${Buffer.from(r.json.buffer, r.json.byteOffset, r.json.byteLength).toString('utf8')}}`) as {
            config?: { priority: number | null; auto_priority: boolean };
          }
        ).config;
        if (cfg) admission.pressure.book.configured(topic, cfg.priority, cfg.auto_priority);
      }
      return sendResult(req, reply, r);
    }),
  );
}

/** GET /v0/topics/:topic: the topic's state. */
function topicStateRoute(app: FastifyInstance, sup: Supervisor): void {
  app.get(
    '/v0/topics/:topic',
    withHttpErrors(async (req, reply) => {
      const topic = topicParam(req);
      await sup.routers.drainInto(topic); // read-your-writes (docs/API.md "Routers")
      return sendResult(req, reply, await sup.workerFor(topic).request({ op: 'state', topic, touch: queryBool(req, 'touch', true) }));
    }),
  );
}

/** DELETE /v0/topics/:topic: the topic, and the routers naming it. */
function deleteTopicRoute(app: FastifyInstance, sup: Supervisor, admission: Admission): void {
  app.delete(
    '/v0/topics/:topic',
    withHttpErrors(async (req, reply) => {
      const topic = topicParam(req);
      const ifEmpty = queryBool(req, 'if_empty', false);
      // The cascade (docs/API.md "Topic lifecycle"): the routers naming the topic go with it, echoed in
      // routers_removed; a key with prefixes is told only of those it could list (name and both ends
      // allowed), though all of them go.
      const r = await sup.routers.deleteTopic(topic, (removed) => {
        const routersRemoved = removed.filter((n) => {
          const def = sup.routers.get(n);
          return def !== undefined && admission.routerVisible(req, def);
        });
        return sup.workerFor(topic).request({ op: 'deleteTopic', topic, ifEmpty, routersRemoved });
      });
      if (r.ok) admission.pressure.book.forget(topic);
      return sendResult(req, reply, r);
    }),
  );
}

/** POST /v0/topics/:topic: an append; the body goes to the worker unparsed. */
function appendRoute(app: FastifyInstance, sup: Supervisor, metrics: Metrics, admission: Admission): void {
  app.post(
    '/v0/topics/:topic',
    { compress: false },
    withHttpErrors(async (req, reply) => {
      const body = checkBody(req, false);
      const topic = topicParam(req);
      // Checked on the worker, and only when the body has no key of its own (the body wins).
      const headerKey = req.headers['idempotency-key'];
      const idem = Array.isArray(headerKey) ? headerKey[0] : headerKey;
      admission.requireByteRoom(sup.liveBytes()); // docs/API.md "Limits", state-dependent: after the 400s of main
      // The request channel copies the body into its batch's shared buffer (or transfers it).
      const result = await sup.workerFor(topic).request({
        op: 'append',
        topic,
        body,
        returnSeqs: queryBool(req, 'return_seqs', true),
        headerIdemKey: idem,
        auth: admission.appendAuth(req),
      });
      if (result.ok && result.durability) metrics.appendLatency.observe(result.durability, nowMs() - req.startedAt);
      return sendResult(req, reply, result);
    }),
  );
}

/** POST /v0/topics/:topic/diff: a read from a cursor, or a long-poll. */
function diffRoute(app: FastifyInstance, sup: Supervisor, metrics: Metrics): void {
  // A callback handler, not an async one: a long-poll parks here for up to wait_ms, and while it
  // waits it holds only the result callback, no suspended async frames (docs/PERFORMANCE.md
  // "Long-poll fan-out and live delivery"). Fastify waits for reply.send when a handler returns undefined.
  app.post('/v0/topics/:topic/diff', (req, reply) => {
    let diff: DiffRequest;
    try {
      diff = diffRequest(req);
    } catch (err) {
      if (err instanceof HttpError) return void sendError(req, reply, err);
      throw err;
    }
    // The raw body is parsed: a parked long-poll need not keep its bytes.
    req.body = undefined;
    if (diff.waitMs > 0 && stageClock.on) req.stageTag = 'wait';
    const worker = sup.workerFor(diff.topic);
    const poll = diff.waitMs > 0 ? new DiffLongPoll(req, reply, metrics, worker, diff) : undefined;
    const answer = poll ? poll.answer : diffAnswer(req, reply, metrics);
    const failed = poll ? poll.failed : toErrorHandler(reply);
    // read-your-writes (docs/API.md "Routers"); the worker's request is not returned from the
    // callback, so no promise waits on it but the one holding `answer`.
    sup.routers.drainInto(diff.topic).then(() => {
      (poll ? poll.post(diff) : worker.request(diff)).then(answer, failed);
    }, failed);
  });
}

/** POST /v0/topics/:topic/delete: records by seq and/or match. */
function deleteRecordsRoute(app: FastifyInstance, sup: Supervisor): void {
  app.post(
    '/v0/topics/:topic/delete',
    withHttpErrors(async (req, reply) => {
      const raw = checkBody(req, false);
      const topic = topicParam(req);
      const b = check(validateRecordDelete, parseSmallBody(raw, req));
      if (b.before_seq === undefined && b.match === undefined) {
        throw new HttpError('invalid_request', 'give before_seq, match, or both');
      }
      const match = b.match === undefined ? null : parseMatch(b.match);
      return sendResult(
        req,
        reply,
        await sup.workerFor(topic).request({ op: 'deleteRecords', topic, beforeSeq: b.before_seq ?? null, match }),
      );
    }),
  );
}

/** GET /v0/topics: a page of the topics the key may see. */
function listTopicsRoute(app: FastifyInstance, sup: Supervisor, admission: Admission): void {
  app.get(
    '/v0/topics',
    withHttpErrors(async (req, reply) => {
      const prefix = queryString(req, 'prefix') ?? '';
      const { pageSize, after } = pageQuery(req);
      const touch = queryBool(req, 'touch', false);
      // Filtered, not refused (docs/API.md "Authentication"): one prefix query per allowed prefix that meets `prefix`.
      const queries = listPrefixes(admission.allowlist(req), prefix);
      const pages = await Promise.all(queries.flatMap((q) => sup.workers.map((w) => w.list(q, after, pageSize + 1))));
      const byName = (a: TopicSummary, b: TopicSummary) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0);
      const all: TopicSummary[] = pages.flat().sort(byName);
      let topics = all.slice(0, pageSize);
      if (touch && topics.length > 0) {
        // Only the topics on this page are touched; they are re-reported after the touch.
        const { book, now } = admission.pressure;
        for (const t of topics) book.consumed(t.topic, now());
        const groups = sup.namesByWorker(topics.map((t) => t.topic));
        const fresh = await Promise.all(sup.workers.map((w, i) => (groups[i]!.length ? w.touch(groups[i]!) : Promise.resolve([]))));
        topics = fresh.flat().sort(byName);
      }
      const body: Record<string, unknown> = { topics };
      if (all.length > pageSize) body.next_cursor = encodeCursor(all[pageSize - 1]!.topic);
      return sendJson(req, reply, 200, body);
    }),
  );
}

/** What a diff that does not wait does with its result: a callback that keeps only these. */
function diffAnswer(req: FastifyRequest, reply: FastifyReply, metrics: Metrics): (r: TopicResult) => void {
  return (result) => {
    if (result.ok) metrics.diffLatency.observe('false', nowMs() - req.startedAt);
    sendResult(req, reply, result);
  };
}

/**
 * A long-poll (longPoll.ts): counted in `spool_long_polls_waiting` until its answer comes; when
 * its client leaves first, its worker answers it at once, so a gone client holds nothing for the
 * rest of its wait. One object per waiter holds what its answer needs.
 */
class DiffLongPoll extends LongPoll {
  constructor(
    private readonly req: FastifyRequest,
    private readonly reply: FastifyReply,
    private readonly metrics: Metrics,
    worker: WaitPort,
    diff: DiffRequest,
  ) {
    super(diff, worker, metrics, reply.raw);
  }

  protected send(result: TopicResult): void {
    if (result.ok) this.metrics.diffLatency.observe('true', nowMs() - this.req.startedAt);
    sendResult(this.req, this.reply, result);
  }

  protected sendError(err: unknown): void {
    void this.reply.send(err);
  }

  protected socketGone(): boolean {
    return this.req.raw.socket.destroyed;
  }
}

/** Fastify's error handler for a rejection, as for a rejected async handler. */
function toErrorHandler(reply: FastifyReply): (err: unknown) => void {
  return (err) => void reply.send(err);
}

/** The checked body of a diff (400s thrown as HttpError), as the worker's request. */
function diffRequest(req: FastifyRequest): DiffRequest {
  const raw = checkBody(req, true);
  const topic = topicParam(req);
  const b = check(validateDiff, parseSmallBody(raw, req));
  checkOneStart(b, 'from_ts');
  return {
    op: 'diff',
    topic,
    fromSeq: b.from_seq ?? 0,
    limit: b.limit ?? 0,
    nodes: b.node === undefined ? null : Array.isArray(b.node) ? b.node : [b.node],
    includeTags: b.include_tags ?? false,
    includeMeta: b.include_meta ?? true,
    waitMs: Math.min(b.wait_ms ?? 0, WAIT_MS_MAX),
    maxBatchBytes: b.max_batch_bytes ?? 0,
    ...(b.from_ts !== undefined ? { fromTsMs: b.from_ts } : {}),
  };
}
