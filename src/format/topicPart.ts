// A topic instance as a snapshot keeps it (snapshot.ts, snapshotSectionFormat.ts), and the record of a
// sleeping topic, which has the same shape plus its watermarks. Types only.
import type { TopicConfig } from '../protocol/topicConfig.js';
import type { Watermarks } from './watermarks.js';

export type LossReason = 'cap' | 'ttl' | 'mixed';

/** One run of the loss ledger (actors/topic/lossLedger.ts): seqs from..to lost for `reason`. */
export interface LossRun {
  from: number;
  to: number;
  reason: LossReason;
  count: number;
}

/** Redrives whose copies are appended but whose deletes are not confirmed: [id, dead-letter topic, seqs]. */
export type RedrivePendingPart = [number, string, number[]][];

/**
 * What a snapshot keeps of a queue: claim leases, nack delays, delivery counts, the DLQ counter,
 * and the dead-letter records a redrive copied back whose delete is not confirmed (redrive.ts).
 */
export interface QueuePart {
  /** [seq, epoch, counter, rand, node, deadline] of every lease taken by a claim. */
  leases: [number, number, number, number, string, number][];
  delayed: [number, number][];
  deliveries: [number, number][];
  dead_lettered: number;
  redrive_pending?: RedrivePendingPart;
}

/** A dest topic's router progress in snapshot form: router id → [srcLast, total]. */
export type AppliedPart = Record<string, [number, number]>;

/** One topic instance as the snapshot keeps it. */
export interface TopicPart {
  id: number;
  name: string;
  config: TopicConfig;
  created_ms: number;
  /** Seq ceiling no future seq may stay under (max of submitted reservations and head). */
  reserved: number;
  /** Retention state (absent in snapshots of topics that never lost a record). */
  evict_floor?: number;
  ledger?: LossRun[];
  /** Every record below this seq is gone (evicted below evict_floor, else deleted). */
  dead_below?: number;
  /** User-deleted ranges at or above dead_below, inclusive. */
  deleted?: [number, number][];
  /** Queue topics: claim leases, nack delays, delivery counts and the dead-letter counter. */
  queue?: QueuePart;
  /** Router dests: per router id, [last source seq held, forwarded total] (docs/ARCHITECTURE.md "Routers"). */
  routers_applied?: AppliedPart;
  /**
   * Router dests: the `source_trim` markers at or above the evict floor, [seq, source records
   * lost] ascending (docs/ARCHITECTURE.md "Routers"). Their frames may be compacted away.
   */
  trim_markers?: [number, number][];
}

/** A sleeping topic (src/actors/topic/dormant.ts): its part plus its watermarks. */
export interface DormantTopic extends TopicPart, Watermarks {
  /**
   * A queue's lease counter when it went to sleep (lease ids are unique per boot by it: the woken
   * actor goes on from here). Not persisted: a restart has a new boot epoch.
   */
  lease_no?: number;
  /**
   * A topic with an own segment file (one at most, dormant.ts): that file's first seq and size.
   * A wake reads it after the packed segment; recovery restores the topic asleep only when its
   * directory holds exactly that file at that size (snapshot section `own`).
   */
  own_first_seq?: number;
  own_bytes?: number;
}
