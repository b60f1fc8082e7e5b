// The bodies of the spool HTTP API (docs/API.md), requests and replies, as TypeScript types: the
// one place they are written. The server types its ajv checks and reply objects with them
// (src/http/schemas.ts, src/http/queueSchemas.ts, the routes and actors that build plain-object
// replies); the client re-exports them (src/client/types.ts) with `import type` only, so it
// carries no server code. Fields keep the wire's snake_case spelling.
//
// `S` is the type of a seq: `number` on the server and by default in the client, `bigint` with
// `new Spool({ int64: 'bigint' })` (docs/CLIENT.md, "Seqs above 2^53"). Types only: no runtime
// code, so any thread (and the browser client) may import it. The queue bodies are in
// wireQueues.ts.
import type { TopicConfig } from './topicConfig.js';

/** The `performance` block: best-effort, any subset (docs/API.md "Conventions"). */
export interface Performance {
  server_total_ms?: number;
  wal_append_ms?: number;
  fsync_ms?: number;
  records_scanned?: number;
  throttle_wait_ms?: number;
  [k: string]: number | undefined;
}

/** A record as written (docs/API.md "Records"). */
export interface RecordInput {
  data: unknown;
  tag?: string;
  node?: string;
  meta?: Record<string, unknown>;
}

/**
 * A record as read. With `raw: true` on a read call, `data` and `meta` are the verbatim JSON texts
 * the server holds (strings), never parsed: `RawRecord`.
 */
export interface LogRecord<S = number, D = unknown, M = Record<string, unknown>> {
  $seq: S;
  $ts: number;
  $node?: string;
  $tag?: string;
  data: D;
  meta?: M;
}

export type RawRecord<S = number> = LogRecord<S, string, string>;

/**
 * Topic config as a request sends it (docs/API.md "PUT /v0/topics/:topic"): every field optional;
 * replies carry all 17 (`TopicConfig`, src/protocol/topicConfig.ts).
 */
export type TopicConfigBody = Partial<TopicConfig>;

export interface TopicState<S = number> {
  topic: string;
  type: 'log' | 'queue';
  head_seq: S;
  earliest_seq: S;
  next_seq: S;
  count: number;
  bytes: number;
  config: Required<TopicConfigBody>;
  effective_priority: number;
  last_write_ts: number | null;
  last_read_ts: number | null;
  queue?: { ready: number; in_flight: number; dead_lettered: number };
  performance?: Performance;
}

export interface PutTopicResult {
  topic: string;
  created: boolean;
  config: Required<TopicConfigBody>;
  performance?: Performance;
}

export interface DeleteTopicResult {
  topic: string;
  deleted: boolean;
  routers_removed: string[];
  performance?: Performance;
}

export interface TopicSummary<S = number> {
  topic: string;
  head_seq: S;
  earliest_seq: S;
  count: number;
  bytes: number;
  durable: boolean;
  effective_priority: number;
}

export interface ListTopicsOptions {
  prefix?: string;
  page_size?: number;
  cursor?: string;
  touch?: boolean;
}

export interface TopicPage<S = number> {
  topics: TopicSummary<S>[];
  next_cursor?: string;
  performance?: Performance;
}

/** POST /v0/topics/:topic/append (docs/API.md "Append"). */
export interface AppendBody {
  records: RecordInput[];
  node?: string;
  /** Dedupe key for this write (at most 256 chars). */
  idempotency_key?: string;
  create?: boolean;
  config?: TopicConfigBody;
  disable_backpressure?: boolean;
}

export interface AppendResult<S = number> {
  topic: string;
  first_seq: S;
  last_seq: S;
  seqs?: S[];
  head_seq: S;
  count: number;
  created: boolean;
  deduped?: boolean;
  performance?: Performance;
}

export interface Tombstone<S = number> {
  gap_from: S;
  gap_to: S;
  reason: 'cap' | 'ttl' | 'mixed' | 'recreated' | 'source_trim' | 'from_seq_too_old';
  missed_estimate?: number;
  earliest_seq: S;
  head_seq: S;
}

/** POST /v0/topics/:topic/diff (docs/API.md "Diff"). */
export interface DiffBody<S = number> {
  from_seq?: S;
  /**
   * Read from a time instead (ms since the epoch, like `$ts`): from the first record whose `$ts`
   * is at or after it. Not with `from_seq` (400). docs/API.md "Reading from a time".
   */
  from_ts?: number;
  limit?: number;
  node?: string | string[];
  include_tags?: boolean;
  include_meta?: boolean;
  wait_ms?: number;
  max_batch_bytes?: number;
}

export interface DiffResult<S = number, R = LogRecord<S>> {
  topic: string;
  records: R[];
  next_from_seq: S;
  head_seq: S;
  earliest_seq: S;
  caught_up: boolean;
  tombstone: Tombstone<S> | null;
  lag: S;
  performance?: Performance;
}

/** `[tag, Eq, x]`, `[tag, Glob, "prefix*"]`, or a bare tag string (= Eq). */
export type TagMatch = string | ['tag', 'Eq', string] | ['tag', 'Glob', string];

/** POST /v0/topics/:topic/delete (docs/API.md "Record delete"). */
export interface RecordDeleteBody<S = number> {
  before_seq?: S;
  match?: TagMatch;
}

export interface DeleteRecordsResult<S = number> {
  topic: string;
  deleted: number;
  earliest_seq: S;
  head_seq: S;
  count: number;
  bytes: number;
  performance?: Performance;
}

/** POST /v0/watch body (docs/API.md "POST /v0/watch"). */
export interface WatchBody<S = number> {
  /** Per topic one start at most: `from_seq`, `tail: true`, or `from_ts` (ms since the epoch). */
  topics: Record<string, { from_seq?: S; tail?: boolean; from_ts?: number }>;
  cursor?: string;
  node?: string | string[];
  limit?: number;
  max_batch_bytes?: number;
  heartbeat_ms?: number;
  include_meta?: boolean;
  include_tags?: boolean;
  include_data?: boolean;
  consistency?: 'eventual' | 'strong';
}

export interface WatchSession<S = number> {
  wid: string;
  stream_url: string;
  session_ttl_ms: number;
  topics: Record<string, { from_seq: S; head_seq: S; earliest_seq: S }>;
  performance?: Performance;
}

/** One record frame's payload (docs/API.md "Watch frames"). */
export interface RecordFrame<S = number, R = LogRecord<S>> {
  topic: string;
  records: R[];
  from_seq: S;
  to_seq: S;
  head_seq: S;
}

/** The payload of an SSE `error` frame (docs/API.md "Error frames"). */
export interface ErrorFramePayload {
  code: number;
  error: string;
  message: string;
  terminal: boolean;
  retry_after_ms?: number;
  topics?: string[];
  topic?: string;
}

export interface Health {
  status: 'ok';
  version: string;
  uptime_ms: number;
  performance?: Performance;
}

export interface Ready {
  status: 'ready';
  wal_replay_complete: boolean;
  topics: number;
  storage?: 'ok' | 'disk_full' | 'failed';
  writable?: boolean;
  /** While `disk_full`: what writes wait for, what a WAL file needs, and the volume's free space. */
  disk?: { waits_for: 'wal_file' | 'segment_writes'; wal_file_bytes: number; free_bytes: number | null };
  performance?: Performance;
}

// ---- routers (docs/API.md "Routers") ------------------------------------------------------------

export type RouterGuarantee = 'at_least_once' | 'exactly_once';

/** A router's writable config (PUT body). `source` and `dest` are required and never change. */
export interface RouterConfig {
  source: string;
  dest: string;
  preserve_node?: boolean;
  preserve_tag?: boolean;
  /** Request-only: false refuses (404 topic_not_found) when `dest` does not exist. */
  create_dest?: boolean;
  /** The delete match language (a tag Eq or Glob tuple); null forwards every record. */
  filter?: TagMatch | null;
  allow_cycle?: boolean;
  guarantee?: RouterGuarantee;
}

/** A router as the server reports it: the resolved config echoed, plus its progress. */
export interface RouterInfo {
  router: string;
  source: string;
  dest: string;
  preserve_node: boolean;
  preserve_tag: boolean;
  filter: TagMatch | null;
  allow_cycle: boolean;
  guarantee: RouterGuarantee;
  forwarded_total: number;
  performance?: Performance;
}

export interface PutRouterResult extends Omit<RouterInfo, 'forwarded_total'> {
  created: boolean;
}

export interface RouterSummary {
  router: string;
  source: string;
  dest: string;
  guarantee: RouterGuarantee;
  forwarded_total: number;
}

export interface ListRoutersOptions {
  prefix?: string;
  source?: string;
  dest?: string;
  page_size?: number;
  cursor?: string;
}

export interface RouterPage {
  routers: RouterSummary[];
  next_cursor?: string;
  performance?: Performance;
}

export interface DeleteRouterResult {
  router: string;
  deleted: boolean;
  performance?: Performance;
}
