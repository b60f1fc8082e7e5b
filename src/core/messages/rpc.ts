// The main → topic worker rpc boundary (carried by Comlink, src/core/rpc.ts): topic requests and
// their results, as plain data. No functions, class instances or promises cross a thread.
import type { ErrorResult } from '../errors.js';
import type { TopicConfig } from '../../actors/topic/config.js';

export interface AppendRequest {
  op: 'append';
  topic: string;
  body: Uint8Array;
  returnSeqs: boolean;
  headerIdemKey: string | undefined;
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
}

export interface DeleteTopicRequest {
  op: 'deleteTopic';
  topic: string;
  ifEmpty: boolean;
}

export interface DeleteRecordsRequest {
  op: 'deleteRecords';
  topic: string;
  /** Delete seqs below this (exclusive), or null. */
  beforeSeq: number | null;
  /** Tag match: Eq value, or Glob literal prefix (the trailing `*` removed), or null. */
  match: { op: 'Eq' | 'Glob'; value: string } | null;
}

/** One pull of a watch stream (DESIGN 6): the read pipeline from `fromSeq`, rendered as a record frame. */
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
}

export type TopicRequest = AppendRequest | DiffRequest | StateRequest | PutRequest | DeleteTopicRequest | DeleteRecordsRequest | WatchReadRequest;

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
}

export type TopicResult = OkResult | ErrorResult;

export interface TopicSummary {
  topic: string;
  head_seq: number;
  earliest_seq: number;
  count: number;
  bytes: number;
  durable: boolean;
  effective_priority: number;
}

export interface TopicStats {
  topic: string;
  durability: string;
  type: string;
  head_seq: number;
  earliest_seq: number;
  count: number;
  bytes: number;
}

