// The main → topic worker rpc boundary: topic requests and their results (carried in batches by
// src/protocol/requestChannel.ts) and the control calls' data (Comlink, src/core/rpc.ts), as plain data. No functions, class instances or promises cross a thread.
import type { RequestStamps } from '../../core/stageClock.js';
import type { ErrorResult } from '../errors.js';
import type { WorkerEvent } from './events.js';
import type { TopicConfig } from '../topicConfig.js';
import type { TopicSummary } from '../wire.js';
import type { ForwardAck, ForwardInfo, RouterRequest, RouterStats, TagMatch } from './router.js';

export interface AppendRequest {
  op: 'append';
  topic: string;
  body: Uint8Array;
  returnSeqs: boolean;
  headerIdemKey: string | undefined;
  /**
   * A dead-letter copy made by another actor (never set from HTTP): its meta may exceed the
   * per-record meta limits by the three `$dead_letter_*` stamps (docs/QUEUES.md).
   */
  stamped?: boolean;
  /** A router's copy batch (never set from HTTP): dedupe and progress ride in its frame. */
  forward?: ForwardInfo;
  /**
   * Jobs a redrive moves back into this queue (never set from HTTP; the queue's actor sends it
   * to itself): the dead-letter seqs they came from ride in the frame (docs/QUEUES.md "Redrive").
   */
  redrive?: RedriveInfo;
  /**
   * Set when auth is enabled (docs/API.md "Authentication": the append row and the prefix rule): whether the key may create the topic
   * from a body `config` (admin), and the allowlist a `config.dead_letter` must meet.
   */
  auth?: { admin: boolean; prefixes: readonly string[] | null };
}

export interface DiffRequest {
  op: 'diff';
  topic: string;
  fromSeq: number;
  limit: number;
  nodes: string[] | null;
  includeTags: boolean;
  includeMeta: boolean;
  waitMs: number;
  maxBatchBytes: number;
  /**
   * A read from a time (`from_ts`, ms): the actor turns it into the cursor before reading
   * (timeSeek.ts), and `fromSeq` is ignored. Absent: a read from `fromSeq`.
   */
  fromTsMs?: number;
  /** A long-poll's id on main (unique per process), named by a CancelWaitRequest when its client leaves. */
  waitId?: number;
}

/**
 * The client of a parked long-poll or a waiting claim went away: it answers now (to nobody)
 * instead of at `wait_ms`, so it holds nothing for the rest of its wait (a claim takes no job).
 * Replied ok in any case.
 */
export interface CancelWaitRequest {
  op: 'cancelWait';
  topic: string;
  waitId: number;
}

/**
 * Where a read from `tsMs` would start (a watch POST's `from_ts`, resolved once into a seq):
 * answered with `seek` on the OkResult, or topic_not_found.
 */
export interface SeekRequest {
  op: 'seek';
  topic: string;
  tsMs: number;
}

export interface StateRequest {
  op: 'state';
  topic: string;
  touch: boolean;
}

export interface PutRequest {
  op: 'put';
  topic: string;
  config: TopicConfig;
  /** Create with `config` if absent, else leave the topic as it is (router auto-create, docs/API.md "Topic lifecycle"). */
  ensure?: boolean;
}

export interface DeleteTopicRequest {
  op: 'deleteTopic';
  topic: string;
  ifEmpty: boolean;
  /** Routers the registry removes with the topic, echoed in `routers_removed` (docs/API.md "DELETE /v0/topics/:topic"). */
  routersRemoved?: string[];
}

export interface DeleteRecordsRequest {
  op: 'deleteRecords';
  topic: string;
  /** Delete seqs below this (exclusive), or null. */
  beforeSeq: number | null;
  /** Tag match: Eq value, or Glob literal prefix (the trailing `*` removed), or null. */
  match: { op: 'Eq' | 'Glob'; value: string } | null;
}

/** One pull of a watch stream (docs/ARCHITECTURE.md "Watch streams"): the read pipeline from `fromSeq`, rendered as a record frame. */
export interface WatchReadRequest {
  op: 'watchRead';
  topic: string;
  fromSeq: number;
  limit: number;
  maxBatchBytes: number;
  nodes: string[] | null;
  includeTags: boolean;
  includeMeta: boolean;
  includeData: boolean;
  /** strong consistency: read only up to the durable head. */
  strong: boolean;
  /** First read of this topic since the stream opened: tombstones say `from_seq_too_old`. */
  first: boolean;
  /**
   * Judge the cursor only, reading no record: the tombstone (if any), the head and where the
   * next read starts. A stream of several topics opens with these (docs/WATCH.md "Slow consumers").
   */
  probe?: boolean;
}

// ---- queue requests (docs/API.md "Queues"; docs/QUEUES.md): validated, defaulted and clamped before the actor ----

export interface ClaimRequest {
  op: 'claim';
  topic: string;
  node: string;
  /** Already clamped to [1, 1000]. */
  max: number;
  /** Already clamped to [100, 86400000]; null: the topic's lease_ms. */
  leaseMs: number | null;
  /** A blocking claim: wait up to this long for a job when none is claimable (absent or 0: answer at once; clamped to 30000). */
  waitMs?: number;
  /** Main's id for the claim (from 1): `cancelWait` with it ends the claim's wait when its client leaves. */
  waitId?: number;
  /** The server drains: no jitter window either, the claim answers at once with what it has. */
  now?: true;
}

/** ack, nack and extend: `leaseIds[i]` ("" = no token) fences `seqs[i]`, or null when absent. */
export interface AckRequest {
  op: 'ack';
  topic: string;
  node: string;
  seqs: number[];
  leaseIds: string[] | null;
}

export interface NackRequest {
  op: 'nack';
  topic: string;
  node: string;
  seqs: number[];
  leaseIds: string[] | null;
  delayMs: number;
}

export interface ExtendRequest {
  op: 'extend';
  topic: string;
  node: string;
  seqs: number[];
  leaseIds: string[] | null;
  leaseMs: number;
}

/** A `/work` stream opens: the actor keeps up to `max` jobs leased to `connId` (ids minted by main). */
export interface WorkOpenRequest {
  op: 'workOpen';
  topic: string;
  connId: number;
  node: string;
  max: number;
  leaseMs: number | null;
}

/** The stream closed (or broke): every lease delivered on it is released at once. */
export interface WorkCloseRequest {
  op: 'workClose';
  topic: string;
  connId: number;
}

/** The stream's socket backed up (paused) or drained: no new leases while paused. */
export interface WorkFlowRequest {
  op: 'workFlow';
  topic: string;
  connId: number;
  paused: boolean;
}

/**
 * Fail jobs for good (docs/QUEUES.md "Term"): the held ones (fenced as ack) go to the dead-letter
 * topic at once, whatever their delivery count; with no dead-letter topic they are released.
 */
export interface TermRequest {
  op: 'term';
  topic: string;
  node: string;
  seqs: number[];
  leaseIds: string[] | null;
  /** Stamped as `$dead_letter_reason` (at most 1024 bytes), or null. */
  reason: string | null;
}

/**
 * Move dead-lettered jobs back into this queue (docs/QUEUES.md "Redrive"): the records of `from`
 * (default: the queue's dead_letter) stamped `$dead_letter_from` = this queue, narrowed by
 * `seqs` and/or `match`, at most `max` of them.
 */
export interface RedriveRequest {
  op: 'redrive';
  topic: string;
  from: string | null;
  /** Seqs in the dead-letter topic (ascending, no duplicates), or null for all. */
  seqs: number[] | null;
  match: TagMatch | null;
  /** Already clamped to [1, 10000]. */
  max: number;
  /** The key's allowlist when auth is on (checked against a `from` taken from the config); null: any. */
  prefixes: readonly string[] | null;
}

/** What a redrive batch's APPEND frame records: the dead-letter instance and seqs its jobs came from. */
export interface RedriveInfo {
  /** The queue instance that asked (a recreated queue refuses the batch). */
  queueId: number;
  fromId: number;
  from: string;
  fromSeqs: number[];
}

/** Queue actor → dead-letter topic's actor (peer): the next batch of records to move back. */
export interface RedriveReadRequest {
  op: 'redriveRead';
  topic: string;
  /** The queue: only records stamped `$dead_letter_from` = it are taken. */
  queue: string;
  afterSeq: number;
  /** The last seq to look at (0: the head now; the answer says which). */
  untilSeq: number;
  seqs: number[] | null;
  match: TagMatch | null;
  maxRecords: number;
}

/** Queue actor → dead-letter topic's actor (peer): delete these records (moved back). */
export interface RedriveDeleteRequest {
  op: 'redriveDelete';
  topic: string;
  /** The dead-letter instance they were read from (another instance deletes nothing). */
  instanceId: number;
  seqs: number[];
  /** Sent again after a restart: an `ephemeral` topic (records gone, seqs reused) deletes nothing. */
  reissue: boolean;
}

/** The answer to a RedriveReadRequest (on OkResult.redrive). */
export interface RedriveBatch {
  instanceId: number;
  durability: string;
  untilSeq: number;
  /** The last seq looked at; `done`: nothing after it up to untilSeq is left to look at. */
  next: number;
  done: boolean;
  /** The records to move, in seq order: their seqs, and each one's append-body record (JSON text). */
  seqs: number[];
  records: Uint8Array[];
  /** Seqs named in the request's `seqs` that are not to be moved (absent, or not this queue's). */
  skipped: number[];
}

/** A page of the queue's live leases (read-only), ascending by seq after `afterSeq`. */
export interface LeasesRequest {
  op: 'leases';
  topic: string;
  afterSeq: number;
  /** Already clamped to [1, 1000]. */
  limit: number;
  /** Only this holder's leases, or null for all. */
  node: string | null;
}

export type QueueRequest =
  | ClaimRequest
  | AckRequest
  | NackRequest
  | ExtendRequest
  | TermRequest
  | WorkOpenRequest
  | WorkCloseRequest
  | WorkFlowRequest
  | LeasesRequest
  | RedriveRequest;

export type TopicRequest =
  | AppendRequest
  | DiffRequest
  | CancelWaitRequest
  | SeekRequest
  | StateRequest
  | PutRequest
  | DeleteTopicRequest
  | DeleteRecordsRequest
  | WatchReadRequest
  | QueueRequest
  | RouterRequest
  | RedriveReadRequest
  | RedriveDeleteRequest;

/** What a watch read found, besides the rendered record frame payload in `json`. */
export interface WatchReadMeta {
  /** False when the topic does not exist (the stream emits topic-deleted). */
  exists: boolean;
  instanceId: number;
  head: number;
  /** The head a strong session may deliver up to. */
  deliverableHead: number;
  earliest: number;
  /** The cursor after this read (the last seq examined). */
  next: number;
  /** Records in `json` (0: `json` is empty). */
  count: number;
  /** Rendered tombstone frame payload, or null. */
  tombstone: { gapTo: number; json: string } | null;
}

/** Timings the host measured for a reply (performance block). */
export interface PerfFields {
  wal_append_ms?: number;
  fsync_ms?: number;
  records_scanned?: number;
  throttle_wait_ms?: number;
}

/** A successful reply: `json` is a JSON object without its closing brace; main adds performance. */
export interface OkResult {
  ok: true;
  status: 200 | 201;
  json: Uint8Array;
  perf: PerfFields;
  /** Only on watchRead replies. */
  watch?: WatchReadMeta;
  /** Only on seek replies: the exclusive cursor a read from the time starts at, and the watermarks then. */
  seek?: { fromSeq: number; head: number; earliest: number };
  /** Only on fresh append replies: the topic's class, for the append-latency metric. */
  durability?: 'ephemeral' | 'memory' | 'disk' | 'fsync';
  /** Request fields the worker ignored (append bodies), for the Warning header. */
  unknownFields?: string[];
  /** Only on router forwards and probes. */
  forward?: ForwardAck;
  /** Only on router drains. */
  routers?: RouterStats[];
  /** Only on redrive reads. */
  redrive?: RedriveBatch;
  /** Stage clock only (debug): where the request's time went. */
  stamps?: Partial<RequestStamps>;
}

export type TopicResult = OkResult | ErrorResult;

/** A topic's entry in a list page: the wire type (docs/API.md "GET /v0/topics"). */
export type { TopicSummary };

export interface TopicStats {
  topic: string;
  durability: string;
  type: string;
  head_seq: number;
  earliest_seq: number;
  count: number;
  bytes: number;
  /** Queue topics only. */
  queue?: QueueStats;
  /** Topics that are the source of routers. */
  routers?: RouterStats[];
}

/** Totals of one worker's topics for /v0/metrics (summed over workers on main). */
export interface StatsTotals {
  topics: number;
  byClass: Record<'ephemeral' | 'memory' | 'disk' | 'fsync', number>;
  records: number;
  bytes: number;
  queueTopics: number;
  leasesInFlight: number;
  /** Topic actors held by the worker: awake topics plus names with something still pending. */
  actors: number;
  /** Sleeping topics (docs/ARCHITECTURE.md "Many topics"): live, kept as a small record without an actor. */
  sleeping: number;
  /** Bytes of sleeping topics' snapshot lines kept between checkpoints (sleepingLines.ts). */
  keptLineBytes: number;
  /** Compaction (topicThread/compaction.ts): segment bytes given back and segments rewritten since start. */
  compactBytesReclaimed: number;
  compactSegmentsRewritten: number;
  /** Live (estimated) and file bytes of the sealed segments its last plan looked at. */
  compactLiveBytes: number;
  compactStoredBytes: number;
}

export function emptyTotals(): StatsTotals {
  return {
    topics: 0,
    byClass: { ephemeral: 0, memory: 0, disk: 0, fsync: 0 },
    records: 0,
    bytes: 0,
    queueTopics: 0,
    leasesInFlight: 0,
    actors: 0,
    sleeping: 0,
    keptLineBytes: 0,
    compactBytesReclaimed: 0,
    compactSegmentsRewritten: 0,
    compactLiveBytes: 0,
    compactStoredBytes: 0,
  };
}

/**
 * What a worker reports to a metrics scrape: totals, the stats of its first topics by name
 * (per-topic series stop at a fixed count, so nothing scales with the number of topics) and
 * every router whose source it owns.
 */
export interface WorkerStats {
  totals: StatsTotals;
  first: TopicStats[];
  routers: RouterStats[];
}

/**
 * A worker's checkpoint step (docs/ARCHITECTURE.md "Checkpoints and recovery" step 1): its snapshot parts as JSON bytes and the packs
 * it holds nothing live in, or why it cannot take part now (errors cross threads as values: an
 * rpc keeps only an error's message).
 */
/**
 * A worker's checkpoint step: its snapshot section (src/storage/snapshotSectionWriter.ts) as pieces in
 * order (SectionWriter.pieces) with their CRC-32, and the packs it holds nothing live in.
 */
export type CheckpointParts =
  { ok: true; section: Uint8Array[]; crc: number; topics: number; deadPacks: string[] } | { ok: false; diskFull: boolean; message: string };

/**
 * A worker's shutdown drain: complete (every frame acknowledged by the WAL, segments fsynced, so
 * a final checkpoint may follow), or why not. On a full disk frames may wait for space for good;
 * none of them was acknowledged, and the WAL (not trimmed without a checkpoint) still holds
 * every frame a segment lacks.
 */
export type DrainResult = { complete: true } | { complete: false; why: string };

export interface QueueStats {
  ready: number;
  in_flight: number;
  dead_lettered: number;
  /** Age of the oldest ready job by its $ts, or null when none is ready (or none found cheaply). */
  oldest_ready_age_ms: number | null;
}

/** main → worker on the request channel: the requests of one turn. */
export interface RequestBatch {
  ids: number[];
  /**
   * Per request, in order: its lane code and fields (src/protocol/hotLanes.ts), or COLD for the
   * next of `reqs`. Strings (topic names, idempotency keys) are in `laneStrs`.
   */
  lanes: number[];
  laneStrs: string[];
  /** The requests that cross as objects; an append's (or queue body's) `body` is null here: its bytes are in `bodies` (see bodyEnds). */
  reqs: WireRequest[];
  /**
   * The append and queue bodies of the batch back to back, in request order: one buffer per
   * batch, not one per request (src/protocol/requestChannel.ts).
   */
  bodies?: ArrayBuffer;
  /** Where each of those bodies ends in `bodies`, in request order. */
  bodyEnds?: number[];
  /** Reply pages main has finished writing, transferred back for reuse (src/core/pagePool.ts). */
  recycled?: ArrayBuffer[];
}

/**
 * A claim or an ack whose JSON body crosses unparsed (docs/ARCHITECTURE.md "Thread crossings"):
 * the request channel's worker end turns it into a ClaimRequest or AckRequest, or its 400
 * (src/protocol/queueBodies.ts), before any actor sees it.
 */
export interface QueueBodyRequest {
  op: 'claimBody' | 'ackBody';
  topic: string;
  body: Uint8Array;
  /** A claim's id on main (ClaimRequest.waitId). */
  waitId?: number;
}

/** What main sends on the request channel. */
export type ChannelRequest = TopicRequest | QueueBodyRequest;

/** A request as it crosses: an append's or a queue body's bytes travel in the batch's `bodies`. */
export type WireRequest =
  Exclude<TopicRequest, AppendRequest> | (Omit<AppendRequest, 'body'> & { body: null }) | (Omit<QueueBodyRequest, 'body'> & { body: null });

/**
 * worker → main on the request channel: the results settled in one turn and the watch and
 * `/work` events the turn produced, in one message (one wake of main per worker turn).
 */
export interface ResultBatch {
  ids: number[];
  /** Per result, in order: its lane code and fields (src/protocol/hotLanes.ts), or COLD for the next of `results`. */
  lanes: number[];
  /** The results that cross as objects; a small reply's `json` is null here: its bytes are in `jsons` (see jsonEnds). */
  results: WireResult[];
  /** Stage clock only: each result's stamps, in order. */
  stamps?: (Partial<RequestStamps> | undefined)[];
  /** The small replies' bytes back to back, in result order: one buffer per batch. */
  jsons?: ArrayBuffer;
  /** Per result: where its JSON ends in `jsons`, or -1 when it carries its own `json` (or is an error). */
  jsonEnds?: number[];
  /** The turn's watch and `/work` events, in the order the worker produced them. */
  events?: WorkerEvent[];
  /** Per event: how many of the batch's results the worker settled before it (main keeps that order). */
  eventsAt?: number[];
}

/** A result as it crosses: a small reply's bytes travel in the batch's `jsons`. */
export type WireResult = ErrorResult | OkResult | (Omit<OkResult, 'json'> & { json: null });
