// Settings of one topic worker's host, fixed at spawn (boot epoch and seed are set once recovery
// has chosen them).
import type { ActorOptions } from '../actors/topic/actorCore.js';

export interface HostOptions extends ActorOptions {
  workerIndex: number;
  workers: number;
  bootEpoch: number;
  bootSeed: string;
  /** Shared counter [topicCount] for the max_topics cap, across workers. */
  counters: Int32Array;
  segmentCacheBytes: number;
  /** Dormancy (docs/ARCHITECTURE.md "Many topics"): a quiet topic sleeps after this long (0: never), and awake topics at most. */
  topicSleepMs: number;
  topicsAwakeMax: number;
  /** WAL credit: bytes submitted but not yet written (SERVICE_WAL_INFLIGHT_BYTES). */
  walInflightBytes: number;
  /** The free bytes of the data directory's volume, when known (the `volumeHas` query). */
  freeBytes?: () => number | undefined;
}
