// Every message that crosses a thread boundary, as plain data in discriminated unions.
// Boundaries: main→worker rpc (TopicRequest/TopicResult), worker↔WAL port (WalIn/WalOut),
// main→WAL rpc (see wal/walApi.ts). No functions, class instances or promises cross a thread.
import type { ErrorResult } from './errors.js';
import type { TopicConfig } from '../actors/topic/config.js';

// ---- main → worker: topic requests ------------------------------------------------------------

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

export type TopicRequest = AppendRequest | DiffRequest | StateRequest | PutRequest | DeleteTopicRequest | DeleteRecordsRequest;

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

// ---- worker ↔ WAL thread ----------------------------------------------------------------------

export type WalIn =
  /** Whole encoded frames from one worker turn; `seq` increases by one per submission. */
  | { t: 'submit'; seq: number; buf: ArrayBuffer; durable: boolean; frames: number }
  /** Checkpoint mark: the WAL thread records the log position after everything before it. */
  | { t: 'mark'; id: number }
  /** Recovery flow control: a replay chunk of this many bytes has been applied. */
  | { t: 'replayAck'; bytes: number };

export type WalOut =
  | { t: 'ack'; writtenThrough: number; durableThrough: number }
  | { t: 'failed'; message: string }
  /** Recovery: frames for this worker, in log order (whole frames, concatenated). */
  | { t: 'replay'; buf: ArrayBuffer }
  | { t: 'replayDone' };

export interface WalPosition {
  fileNo: number;
  offset: number;
}
