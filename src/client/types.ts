// The client's types (docs/CLIENT.md). The bodies of the HTTP API have one home shared with the
// server, src/protocol/wire.ts and wireQueues.ts; they are re-exported here under the names the
// client has always had, with `import type` only, so the client carries no server code. Written
// here is only the client's own: its int64 mode, and the options of its calls (a body's fields
// plus `signal`, `raw` and the like).
//
// `S` is the type of a seq: `number` by default, `bigint` with `new Spool({ int64: 'bigint' })`
// (docs/CLIENT.md, "Seqs above 2^53"). Everything here is type-only: no runtime code.
import type { AppendBody, DiffBody, RecordDeleteBody, TopicConfigBody, WatchBody, LogRecord, Tombstone } from '../protocol/wire.js';
import type { ClaimBody, LeasesQuery, RedriveBody, SeqsBody, TermBody } from '../protocol/wireQueues.js';

export type {
  Performance,
  RecordInput,
  LogRecord,
  RawRecord,
  TopicState,
  PutTopicResult,
  DeleteTopicResult,
  TopicSummary,
  ListTopicsOptions,
  TopicPage,
  AppendResult,
  Tombstone,
  DiffResult,
  TagMatch,
  DeleteRecordsResult,
  WatchSession,
  RecordFrame,
  ErrorFramePayload,
  Health,
  Ready,
  RouterGuarantee,
  RouterConfig,
  RouterInfo,
  PutRouterResult,
  RouterSummary,
  ListRoutersOptions,
  RouterPage,
  DeleteRouterResult,
} from '../protocol/wire.js';
export type {
  Job,
  RawJob,
  ClaimResult,
  AckResult,
  NackResult,
  ExtendResult,
  TermResult,
  RedriveResult,
  LeaseInfo,
  LeasesPage,
} from '../protocol/wireQueues.js';
export type { Durability } from '../protocol/topicConfig.js';

// Wire types of the spool HTTP API (docs/API.md) as the client sees them. Fields that travel on
// the wire keep the server's snake_case spelling, in requests and responses alike, so this file
// and docs/API.md can be read side by side; options of the client itself are camelCase.
//
// `S` is the type of a seq: `number` by default, `bigint` with `new Spool({ int64: 'bigint' })`
// (docs/CLIENT.md, "Seqs above 2^53"). Everything here is type-only: no runtime code.

/** How the client represents 64-bit integers: seqs always, unsafe integers in data with 'bigint'. */
export type Int64Mode = 'number' | 'bigint';

export type SeqOf<M extends Int64Mode> = M extends 'bigint' ? bigint : number;

/** Topic config (docs/API.md "PUT /v0/topics/:topic"). Every field optional on PUT; all 17 present in responses. */
export type TopicConfig = TopicConfigBody;

/** Options of an append besides the records (docs/API.md "Append"). */
export interface AppendOptions extends Omit<AppendBody, 'records'> {
  /** Dedupe key for this write (at most 256 chars). Generated when retries are on and absent. */
  idempotency_key?: string;
  /** false: the response has no `seqs` array. */
  return_seqs?: boolean;
  signal?: AbortSignal;
}

export interface DiffOptions<S = number> extends DiffBody<S> {
  /** Return `data`/`meta` as their verbatim JSON texts. */
  raw?: boolean;
  signal?: AbortSignal;
}

export interface DeleteRecordsOptions<S = number> extends RecordDeleteBody<S> {
  signal?: AbortSignal;
}

/** POST /v0/watch body (docs/API.md "POST /v0/watch"). */
export type WatchRequest<S = number> = WatchBody<S>;

/** What `watch()` and `follow()` yield. */
export type WatchEvent<S = number, R = LogRecord<S>> =
  | { type: 'record'; topic: string; record: R }
  | ({ type: 'tombstone'; topic: string } & Tombstone<S>)
  | { type: 'caught-up'; topic: string; head_seq: S }
  | { type: 'topic-deleted'; topic: string; head_seq: S; reason: 'deleted' };

export interface ClaimOptions extends ClaimBody {
  raw?: boolean;
  signal?: AbortSignal;
}

export interface SeqsRequest<S = number> extends SeqsBody<S> {
  signal?: AbortSignal;
}

/** POST …/term: fail jobs for good (docs/QUEUES.md "Term"); fenced as ack. */
export interface TermRequest<S = number> extends TermBody<S> {
  signal?: AbortSignal;
}

/** POST …/redrive (docs/QUEUES.md "Redrive"); every field optional: `{}` moves all. */
export interface RedriveOptions<S = number> extends RedriveBody<S> {
  signal?: AbortSignal;
}

export interface LeasesOptions<S = number> extends LeasesQuery<S> {
  signal?: AbortSignal;
}
