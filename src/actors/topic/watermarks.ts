// The watermarks of a quiet topic instance, in snapshot-part form (docs/ARCHITECTURE.md "Many topics"): what a sleeping
// topic (dormant.ts) reports and wakes with, without its index. Types only.

export interface Watermarks {
  /** Last visible seq; every seq up to it is assigned, and every frame durable. */
  head: number;
  count: number;
  bytes: number;
  /** First live seq, else head + 1. */
  earliest: number;
  last_ts_ms: number;
  /**
   * $ts of the first live record (0 when none): with TTL, when expiry begins (dormant.ts wakes
   * the topic ahead of it). Snapshots record it only for topics with TTL; 0 when absent.
   */
  first_ts_ms: number;
  last_write_ms: number | null;
  last_read_ms: number | null;
  last_consumed_ms: number | null;
  /**
   * Logical size of the topic's packed segment in the worker's packs (0: none, or reclaimed).
   * It holds every frame of the topic unless the topic has own segment files after it.
   */
  packed_bytes: number;
}
