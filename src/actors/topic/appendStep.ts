// The append step of a topic actor (docs/API.md "Append"): parse the raw body, answer idempotent retries from
// memory, create the topic lazily, check WAL credit and `discard: reject` caps, then encode one
// APPEND frame and hold the reply until the batch reaches its class's ack point.
// Checks follow docs/API.md "Which error wins": 404 and the 400 family before any 429 or 422; nothing is applied
// (not even a creation) when a check refuses. Pure; effects go through the ActorCtx.
import { diskFull, fail, walBehind, type ErrorResult } from '../../protocol/errors.js';
import { idempotencyKeyProblem } from '../../protocol/limits.js';
import type { AppendRequest, OkResult } from '../../protocol/messages/rpc.js';
import type { CopyLayout } from '../../protocol/messages/router.js';
import type { ActorCtx } from '../ctx.js';
import { writeRefusal, type ActorCore } from './actorCore.js';
import { parseAppendBody, type ParsedAppend } from './appendParse.js';
import { DEAD_LETTER_STAMPS, NO_ALLOWANCE } from './appendRecord.js';
import { activePlacement, encodeBatch, encodeCopyBatch, type EncodedBatch } from './appendOp.js';
import { appendReplyBytes } from './appendReply.js';
import { resolveConfig, type TopicConfig } from '../../protocol/topicConfig.js';
import type { TopicInstance } from './instance.js';
import { createInstance, tooManyTopics } from './lifecycle.js';
import { ackAfterAppend, answeredBeforeAppend, progressBody } from '../router/applied.js';
import { encodeJsonFrame } from '../../format/frame.js';
import { encodeRedriveHeader, notePending } from '../queue/redriveHeader.js';
import { APPEND_HEAD_BYTES, APPEND_RECORD_HEAD_BYTES, FRAME_HEADER_BYTES, FrameType } from '../../format/constants.js';
import { walOverrunBytes } from '../../wal/walSizing.js';
import { scanCopySection, ROUTER_STAMPS } from '../router/copyLimits.js';

import { allowsName, nameRefusal, scopeRefusal, type Scope } from '../../auth/allowlist.js';
import { effectivePriority } from './topicState.js';

/** What the cap checks need of a batch: its records and their data + meta bytes. */
interface BatchSize {
  count: number;
  bytes: number;
}

function sizeOf(p: ParsedAppend): BatchSize {
  let n = 0;
  for (const r of p.records) n += r.dataLen + Math.max(0, r.metaLen);
  return { count: p.records.length, bytes: n };
}

/** docs/API.md "Errors": a batch larger than a `discard: reject` cap on its own can never succeed: 400, not 422. */
function batchExceedsRejectCap(c: TopicConfig, b: BatchSize): ErrorResult | undefined {
  if (c.discard !== 'reject') return undefined;
  if (c.cap_records > 0 && b.count > c.cap_records)
    return fail('record_too_large', `the batch alone exceeds cap_records ${c.cap_records}`, { limit: 'cap_records' });
  if (c.cap_bytes > 0 && b.bytes > c.cap_bytes)
    return fail('record_too_large', `the batch alone exceeds cap_bytes ${c.cap_bytes}`, { limit: 'cap_bytes' });
  return undefined;
}

/** What a trim marker asks of a `reject` cap: one record and one byte of room, i.e. not full. */
const MARKER_SIZE: BatchSize = { count: 1, bytes: 1 };

/**
 * `discard: reject` (docs/API.md "PUT /v0/topics/:topic", "Errors"): refuse before any seq is
 * assigned, counting pending batches. Its callers expired the topic's TTL first.
 */
function rejectFull(a: ActorCore, inst: TopicInstance, size: () => BatchSize): ErrorResult | undefined {
  const c = inst.config;
  if (c.discard !== 'reject' || (c.cap_records === 0 && c.cap_bytes === 0)) return undefined;
  const b = size();
  const never = batchExceedsRejectCap(c, b);
  if (never) return never;
  const overRecords = c.cap_records > 0 && inst.count + inst.pendingCount + b.count > c.cap_records;
  const overBytes = c.cap_bytes > 0 && inst.bytes + inst.pendingBytes + b.bytes > c.cap_bytes;
  if (!overRecords && !overBytes) return undefined;
  return fail('topic_full', `topic ${a.name} is full`, {
    topic: a.name,
    cap_records: c.cap_records,
    cap_bytes: c.cap_bytes,
    head_seq: inst.head,
    earliest_seq: inst.earliest(),
  });
}

/** docs/API.md "Authentication": a `config.dead_letter` outside the key's allowlist is 403 naming it, right after the parse. */
function deadLetterRefused(req: AppendRequest, p: ParsedAppend): ErrorResult | undefined {
  const cfg = p.config as { dead_letter?: unknown } | undefined;
  if (!req.auth || cfg === null || typeof cfg !== 'object' || typeof cfg.dead_letter !== 'string') return undefined;
  if (allowsName(req.auth.prefixes, cfg.dead_letter)) return undefined;
  const r = nameRefusal('topic', cfg.dead_letter, req.auth.prefixes ?? []);
  return fail('forbidden', r.message, r.detail);
}

/** The config an absent topic would be created with, or the refusal (404, 400) instead. */
function configForCreate(a: ActorCore, p: ParsedAppend): { ok: true; config: TopicConfig } | ErrorResult {
  const cfg = p.config;
  const cfgAutoCreate =
    cfg !== null && typeof cfg === 'object' && typeof (cfg as { auto_create?: unknown }).auto_create === 'boolean'
      ? (cfg as { auto_create: boolean }).auto_create
      : true;
  if (!(p.create ?? cfgAutoCreate)) return fail('topic_not_found', `topic ${a.name} does not exist`, { topic: a.name });
  const resolved = resolveConfig(a.name, cfg);
  if (!resolved.ok) return resolved;
  // A batch that can never fit a reject cap creates nothing either.
  return batchExceedsRejectCap(resolved.config, sizeOf(p)) ?? resolved;
}

/** Room in an APPEND frame's head for a forward or redrive header (the estimate below leaves it out). */
const FRAME_HEADERS_MARGIN_BYTES = 4096;

/**
 * A batch whose frame is larger than a WAL file's room runs past the file's pre-allocated end
 * (docs/ARCHITECTURE.md "Storage faults"): it is taken only while the volume has room for that
 * overrun and for the frame's segment copy, else 429 disk_space with nothing applied. Taken on
 * a volume that cannot hold it, the write would wait in the WAL for space, holding its reply,
 * the topic's later writes and the next checkpoint. The frame's size is bounded from above:
 * its texts are at most the body's, plus a record head and the batch's node per record.
 */
function overrunRefusal(a: ActorCore, ctx: ActorCtx, body: Buffer, p: ParsedAppend, idemKey: string | undefined): ErrorResult | undefined {
  const walFileBytes = a.opts.walFileBytes;
  if (!walFileBytes) return undefined;
  const perRecord = APPEND_RECORD_HEAD_BYTES + 3 * (p.nodeLit?.length ?? 0);
  const frameBytes =
    body.length +
    p.records.length * perRecord +
    FRAME_HEADER_BYTES +
    APPEND_HEAD_BYTES +
    3 * (idemKey?.length ?? 0) +
    FRAME_HEADERS_MARGIN_BYTES;
  const overrun = walOverrunBytes(frameBytes, walFileBytes);
  if (overrun === 0 || ctx.volumeHas(overrun + frameBytes)) return undefined;
  return diskFull();
}

/** The names the parser ignored ride on the reply, for main's Warning header. */
function withUnknown(r: OkResult, unknownFields: string[]): OkResult {
  return unknownFields.length > 0 ? { ...r, unknownFields } : r;
}

export function append(a: ActorCore, ctx: ActorCtx, reqId: number, req: AppendRequest): void {
  const body = Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength);
  if (req.forward?.copies !== undefined) return appendCopies(a, ctx, reqId, req, body, req.forward.copies);
  const parsed = parseAppendBody(body, req.stamped ? DEAD_LETTER_STAMPS : req.forward ? ROUTER_STAMPS : NO_ALLOWANCE);
  if (!parsed.ok) return ctx.reply(reqId, parsed as ErrorResult);
  const p = parsed.value;
  const refusedName = deadLetterRefused(req, p);
  if (refusedName) return ctx.reply(reqId, refusedName);
  const idemKey = p.idempotencyKey ?? req.headerIdemKey;
  const keyProblem = p.idempotencyKey === undefined && idemKey !== undefined ? idempotencyKeyProblem(idemKey) : undefined;
  if (keyProblem !== undefined) return ctx.reply(reqId, fail('invalid_request', keyProblem, { field: 'idempotency_key' }));
  // A live topic ignores a body's `config`, but a malformed one is a 400 all the same (an absent
  // topic checks it in configForCreate).
  if (p.config !== undefined && a.current) {
    const checked = resolveConfig(a.name, p.config);
    if (!checked.ok) return ctx.reply(reqId, checked);
  }
  if (req.forward && answeredBeforeAppend(a, ctx, reqId, req.forward)) return;
  let inst = a.current;
  // A redrive batch is for the queue instance that read it (a recreated queue refuses it).
  if (req.redrive && (!inst?.queue || inst.id !== req.redrive.queueId))
    return ctx.reply(reqId, fail('topic_not_found', `queue ${a.name} was deleted`, { topic: a.name }));
  // A retry of an applied batch is answered from memory: it needs no WAL, so no credit.
  if (inst && idemKey !== undefined) {
    const prior = inst.idem.get(idemKey, ctx.now, inst.config.idempotency_window_ms);
    if (prior) {
      const target = inst;
      const last = prior.firstSeq + prior.count - 1;
      return a.gate(ctx, target, { reqId, needHead: last }, (c) =>
        c.reply(
          reqId,
          withUnknown(
            {
              ok: true,
              status: 200,
              json: appendReplyBytes(a.name, prior.firstSeq, prior.count, target.head, req.returnSeqs, false, true),
              perf: {},
            },
            p.unknownFields,
          ),
        ),
      );
    }
  }
  let createWith: TopicConfig | undefined;
  if (!inst) {
    // Creating from a body config configures a topic: admin too (docs/API.md "Authentication"), checked before the 404.
    if (req.auth && !req.auth.admin && p.config !== undefined) {
      const r = scopeRefusal(['write', 'admin'], new Set<Scope>(['write']), 'creating a topic with a config')!;
      return ctx.reply(reqId, fail('forbidden', r.message, r.detail));
    }
    const r = configForCreate(a, p);
    if (!r.ok) return ctx.reply(reqId, r);
    createWith = r.config;
  }
  // Storage (a full disk, a failed write), then WAL backpressure (docs/ARCHITECTURE.md "Other decisions"): refuse with nothing
  // applied (not even a creation), or wait in the host's FIFO. State-dependent, so after the
  // 404 and 400 checks (docs/API.md "Which error wins").
  const refused = writeRefusal(ctx) ?? overrunRefusal(a, ctx, body, p, idemKey);
  if (refused) return ctx.reply(reqId, refused);
  if (ctx.walCreditExhausted()) {
    if (p.disableBackpressure) return ctx.deferForCredit(reqId, req, inst ? effectivePriority(inst, ctx.now) : 0);
    return ctx.reply(reqId, walBehind());
  }
  let created = false;
  if (!inst) {
    if (!ctx.tryAcquireTopicSlot()) return ctx.reply(reqId, tooManyTopics(a));
    inst = createInstance(a, ctx, createWith!);
    created = true;
  }
  // A trim marker takes no room, but waits while the dest is full as copies do: the loss it
  // reports grows meanwhile, and one marker reports it when room returns.
  // TTL expiry on writes too: a topic only written (never read by diff or state) gives its
  // expired records' space back.
  if (!created) a.expire(ctx, inst);
  const full = rejectFull(a, inst, () => (req.forward?.lost ? MARKER_SIZE : sizeOf(p)));
  if (full) return ctx.reply(reqId, full);
  const tsMs = Math.max(ctx.now, inst.lastTsMs);
  const batch = encodeBatch(inst, body, p, idemKey, tsMs, a.opts, req.forward, req.redrive && encodeRedriveHeader(req.redrive));
  // The originals are pending from the step that writes their copies (redrive.ts).
  if (req.redrive) notePending(inst.queue!, req.redrive.fromId, req.redrive.from, req.redrive.fromSeqs);
  commitBatch(a, ctx, reqId, req, inst, batch, created, tsMs, p.unknownFields);
}

/**
 * A router's copy batch whose body holds a record section (src/actors/router/copySection.ts): the
 * same checks in the same order as a parsed body that names no topic config, then the frame is
 * written around the records where they lie. The dest exists (a forward never creates one: 404).
 */
function appendCopies(a: ActorCore, ctx: ActorCtx, reqId: number, req: AppendRequest, body: Buffer, copies: CopyLayout): void {
  const scan = scanCopySection(body.subarray(copies.offset, copies.offset + copies.bytes), copies.count);
  if (scan.refusal) return ctx.reply(reqId, scan.refusal as ErrorResult);
  if (answeredBeforeAppend(a, ctx, reqId, req.forward!)) return;
  const inst = a.current!;
  const refused = writeRefusal(ctx);
  if (refused) return ctx.reply(reqId, refused);
  if (ctx.walCreditExhausted()) return ctx.reply(reqId, walBehind());
  a.expire(ctx, inst);
  const full = rejectFull(a, inst, () => ({ count: copies.count, bytes: scan.bytes }));
  if (full) return ctx.reply(reqId, full);
  const tsMs = Math.max(ctx.now, inst.lastTsMs);
  const batch = encodeCopyBatch(inst, body, copies, tsMs, a.opts, req.forward!);
  commitBatch(a, ctx, reqId, req, inst, batch, false, tsMs, []);
}

/** Submits a new batch's frame per the topic's class and holds the reply until its ack point. */
function commitBatch(
  a: ActorCore,
  ctx: ActorCtx,
  reqId: number,
  req: AppendRequest,
  inst: TopicInstance,
  batch: EncodedBatch,
  created: boolean,
  tsMs: number,
  unknownFields: string[],
): void {
  const cls = inst.config.durability;
  let frameNo = 0;
  if (cls !== 'ephemeral') {
    frameNo = a.nextFrame();
    const placement = activePlacement(inst, batch.frame.length);
    // A memory append is acked at the step: nothing waits for its frame, which rides with the
    // worker's next WAL write instead of waking the WAL thread for each append.
    if (cls === 'memory') ctx.submitLazy(frameNo, batch.frame, placement);
    else ctx.submit(frameNo, batch.frame, cls === 'fsync', placement);
  } else if (req.forward) {
    // An ephemeral dest keeps no copies across a restart, but its router progress must survive,
    // or the forwarder would copy everything since the router's creation again.
    ctx.submit(a.nextFrame(), encodeJsonFrame(FrameType.ROUTER_PROGRESS, inst.id, progressBody(inst, req.forward.routerId)), false);
  }
  const count = batch.lastSeq - batch.firstSeq + 1;
  inst.reserve.noteBatch(count);
  if (cls !== 'fsync') inst.reserve.maybeReserve(inst.assigned, inst.id, ctx, () => a.nextFrame());
  inst.addPending({
    firstSeq: batch.firstSeq,
    lastSeq: batch.lastSeq,
    frameNo,
    durability: cls,
    live: batch.live,
    bytes: batch.bytes,
    tsMs,
  });
  inst.pendingCount += batch.live;
  inst.pendingBytes += batch.bytes;
  const target = inst;
  a.gate(ctx, inst, { reqId, needHead: batch.lastSeq, needDurableFrame: created ? inst.controlFrameNo : 0 }, (c) => {
    // The class rides along for the append-latency histogram on main (metrics by class).
    const json = appendReplyBytes(a.name, batch.firstSeq, count, target.head, req.returnSeqs, created, false);
    const r = withUnknown({ ok: true, status: created ? 201 : 200, json, perf: {}, durability: cls }, unknownFields);
    if (req.forward) r.forward = ackAfterAppend(target, req.forward);
    c.reply(reqId, r, frameNo || undefined);
  });
  a.advance(ctx, inst);
}
