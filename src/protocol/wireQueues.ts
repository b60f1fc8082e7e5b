// The queue bodies of the spool HTTP API (docs/API.md "Queues", docs/QUEUES.md), requests and
// replies: claim, ack, nack, extend, term, redrive, leases. The rest of the wire types, and how
// server and client share them, are in wire.ts. Types only: no runtime code.
import type { LogRecord, Performance, TagMatch } from './wire.js';

/** POST /v0/topics/:topic/claim (docs/API.md "Queues"). */
export interface ClaimBody {
  node: string;
  max?: number;
  lease_ms?: number;
  /** A blocking claim: wait up to this long (ms; the server clamps it to 30000) for a job. */
  wait_ms?: number;
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

/** POST …/ack (docs/API.md "Queues"); nack, extend and term add a field each. */
export interface SeqsBody<S = number> {
  node: string;
  seqs: S[];
  /** One per seq, in the same order; `""` means no token for that seq. */
  lease_ids?: string[];
}

/** POST …/nack: `delay_ms` before the jobs are ready again. */
export interface NackBody<S = number> extends SeqsBody<S> {
  delay_ms?: number;
}

/** POST …/extend: the new lease length from now. */
export interface ExtendBody<S = number> extends SeqsBody<S> {
  lease_ms: number;
}

/** POST …/term: fail jobs for good (docs/QUEUES.md "Term"); fenced as ack. */
export interface TermBody<S = number> extends SeqsBody<S> {
  /** Stamped as `$dead_letter_reason` (at most 1024 bytes of UTF-8). */
  reason?: string;
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
export interface RedriveBody<S = number> {
  /** The dead-letter topic (default: the queue's `dead_letter`). */
  from?: string;
  /** Seqs of the dead-letter topic (1..10000). */
  seqs?: S[];
  /** A tag match tuple, as record delete. */
  match?: TagMatch;
  /** Jobs moved at most (default and clamp 10000). */
  max?: number;
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

/** GET …/leases query (docs/QUEUES.md "Leases"). */
export interface LeasesQuery<S = number> {
  /** Exclusive cursor (default 0). */
  from_seq?: S;
  /** Page size (default 100, clamp 1000). */
  limit?: number;
  /** Only this holder's. */
  node?: string;
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
