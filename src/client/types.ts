// Wire types of the spool HTTP API (docs/API.md) as the client sees them. Fields that travel on
// the wire keep the server's snake_case spelling, in requests and responses alike, so this file
// and docs/API.md can be read side by side; options of the client itself are camelCase.
//
// `S` is the type of a seq: `number` by default, `bigint` with `new Spool({ int64: 'bigint' })`
// (docs/CLIENT.md, "Seqs above 2^53"). Everything here is type-only: no runtime code.

/** How the client represents 64-bit integers: seqs always, unsafe integers in data with 'bigint'. */
export type Int64Mode = 'number' | 'bigint';
export type SeqOf<M extends Int64Mode> = M extends 'bigint' ? bigint : number;

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

export type Durability = 'ephemeral' | 'memory' | 'disk' | 'fsync';

/** Topic config (docs/API.md "PUT /v0/topics/:topic"). Every field optional on PUT; all 17 present in responses. */
export interface TopicConfig {
  type?: 'log' | 'queue';
  ttl_ms?: number;
  cap_records?: number;
  cap_bytes?: number;
  discard?: 'old' | 'reject';
  durable?: boolean;
  durability?: Durability;
  priority?: number | null;
  auto_priority?: boolean;
  auto_create?: boolean;
  idempotency_window_ms?: number;
  dedupe_node?: boolean;
  lease_ms?: number;
  claim_jitter_ms?: number;
  max_deliveries?: number;
  dead_letter?: string | null;
  leases_durable?: boolean;
}

export interface TopicState<S = number> {
  topic: string;
  type: 'log' | 'queue';
  head_seq: S;
  earliest_seq: S;
  next_seq: S;
  count: number;
  bytes: number;
  config: Required<TopicConfig>;
  effective_priority: number;
  last_write_ts: number | null;
  last_read_ts: number | null;
  queue?: { ready: number; in_flight: number; dead_lettered: number };
  performance?: Performance;
}

export interface PutTopicResult {
  topic: string;
  created: boolean;
  config: Required<TopicConfig>;
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

/** Options of an append besides the records (docs/API.md "Append"). */
export interface AppendOptions {
  node?: string;
  /** Dedupe key for this write (at most 256 chars). Generated when retries are on and absent. */
  idempotency_key?: string;
  create?: boolean;
  config?: TopicConfig;
  disable_backpressure?: boolean;
  /** false: the response has no `seqs` array. */
  return_seqs?: boolean;
  signal?: AbortSignal;
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

export interface DiffOptions<S = number> {
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
  /** Return `data`/`meta` as their verbatim JSON texts. */
  raw?: boolean;
  signal?: AbortSignal;
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

export interface DeleteRecordsOptions<S = number> {
  before_seq?: S;
  match?: TagMatch;
  signal?: AbortSignal;
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
export interface WatchRequest<S = number> {
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

/** What `watch()` and `follow()` yield. */
export type WatchEvent<S = number, R = LogRecord<S>> =
  | { type: 'record'; topic: string; record: R }
  | ({ type: 'tombstone'; topic: string } & Tombstone<S>)
  | { type: 'caught-up'; topic: string; head_seq: S }
  | { type: 'topic-deleted'; topic: string; head_seq: S; reason: 'deleted' };

export interface ClaimOptions {
  node: string;
  max?: number;
  lease_ms?: number;
  /** A blocking claim: wait up to this long (ms; the server clamps it to 30000) for a job. */
  wait_ms?: number;
  raw?: boolean;
  signal?: AbortSignal;
}

/** A leased job (claim reply entries and `/work` job frames, docs/API.md "Queues", "Work frames"). */
export interface Job<S = number, D = unknown, M = Record<string, unknown>> extends LogRecord<S, D, M> {
  lease_id: string;
  deadline: number;
  deliveries: number;
  /** Present on `/work` frames. */
  topic?: string;
}
export type RawJob<S = number> = Job<S, string, string>;

export interface ClaimResult<S = number, J = Job<S>> {
  topic: string;
  claimed: J[];
  count: number;
  ready: number;
  performance?: Performance;
}

export interface SeqsRequest<S = number> {
  node: string;
  seqs: S[];
  /** One per seq, in the same order; `""` means no token for that seq. */
  lease_ids?: string[];
  signal?: AbortSignal;
}

export interface AckResult<S = number> {
  topic: string;
  acked: number;
  skipped: S[];
  ready: number;
  in_flight: number;
  performance?: Performance;
}

export interface NackResult<S = number> {
  topic: string;
  nacked: number;
  skipped: S[];
  ready: number;
  in_flight: number;
  performance?: Performance;
}

export interface ExtendResult<S = number> {
  topic: string;
  extended: number;
  skipped: S[];
  /** seq (as a decimal string key) → new absolute deadline, ms. */
  deadlines: Record<string, number>;
  performance?: Performance;
}

/** POST …/term: fail jobs for good (docs/QUEUES.md "Term"); fenced as ack. */
export interface TermRequest<S = number> extends SeqsRequest<S> {
  /** Stamped as `$dead_letter_reason` (at most 1024 bytes of UTF-8). */
  reason?: string;
}

export interface TermResult<S = number> {
  topic: string;
  /** Jobs moved to the dead-letter topic. */
  terminated: number;
  /** Jobs released instead (the queue has no dead-letter topic): ready again at once. */
  released: number;
  skipped: S[];
  dead_letter: string | null;
  ready: number;
  in_flight: number;
  performance?: Performance;
}

/** POST …/redrive (docs/QUEUES.md "Redrive"); every field optional: `{}` moves all. */
export interface RedriveOptions<S = number> {
  /** The dead-letter topic (default: the queue's `dead_letter`). */
  from?: string;
  /** Seqs of the dead-letter topic (1..10000). */
  seqs?: S[];
  /** A tag match tuple, as record delete. */
  match?: TagMatch;
  /** Jobs moved at most (default and clamp 10000). */
  max?: number;
  signal?: AbortSignal;
}

export interface RedriveResult<S = number> {
  topic: string;
  from: string;
  redriven: number;
  /** Named seqs not moved: absent, or not this queue's dead letters. */
  skipped: S[];
  /** Stopped by `max` (or a refusal after some moved): call again for the rest. */
  more: boolean;
  ready: number;
  in_flight: number;
  performance?: Performance;
}

/** One live lease (GET …/leases): who holds which job until when. */
export interface LeaseInfo<S = number> {
  $seq: S;
  node: string;
  deliveries: number;
  deadline: number;
  via: 'claim' | 'work';
}

export interface LeasesOptions<S = number> {
  /** Exclusive cursor (default 0). */
  from_seq?: S;
  /** Page size (default 100, clamp 1000). */
  limit?: number;
  /** Only this holder's. */
  node?: string;
  signal?: AbortSignal;
}

export interface LeasesPage<S = number> {
  topic: string;
  leases: LeaseInfo<S>[];
  count: number;
  in_flight: number;
  ready: number;
  delayed: number;
  /** Present when more leases follow: pass it back as `from_seq`. */
  next_from_seq?: S;
  performance?: Performance;
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
