// A whole spool server (Supervisor, topic workers, WAL writer) hosted in this process on a SimDisk
// (test/support/simDisk.ts), for crash sweeps: boot (lock, recovery, first checkpoint), requests
// through the supervisor's worker rpc (the shapes the HTTP routes send), explicit checkpoints,
// and halt(), which abandons the world after the disk froze without any I/O. Deterministic given
// the disk's seed: no timer decides anything (checkpoints only on request, syncs only on demand).
import type { Settings } from '../../src/config.js';
import { readSettings } from '../../src/config.js';
import { FakeClock } from '../../src/core/clock.js';
import type { DiffRequest, TopicRequest, TopicResult } from '../../src/protocol/messages/rpc.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import { InProcessThreads } from './inProcessThreads.js';
import type { SimDisk } from './simDisk.js';

export const SWEEP_DATA_DIR = '/srv/spool';

/**
 * The sweep's settings: the defaults of src/config.ts with small files, so a short workload
 * seals segments and rotates WAL files, and no timer-driven checkpoint or sync.
 */
export function sweepSettings(over: Partial<Settings> = {}): Settings {
  return {
    ...readSettings({}),
    dataDir: SWEEP_DATA_DIR,
    workers: 2,
    segmentBytes: 2048,
    walFileBytes: 8192,
    // Small packs: topics roll from their packed first segment to own files, and pack files
    // seal, within the workload.
    packBytes: 1536,
    packFileBytes: 1024,
    walPreallocate: true,
    // No record text stays in memory once its frame is in a segment: every read after recovery
    // comes back from the segment files, so the oracle checks what is on disk.
    segmentCacheBytes: 0,
    // Fewer open segment files than topics: writes close and reopen files, and checkpoints
    // fsync files that were closed dirty.
    segmentOpenFiles: 2,
    // Writes at once: a timer would make the fs calls depend on timing (the sweep needs them the same).
    segmentWriteDelayMs: 0,
    // No sleeping by timer either (the same reason); tests put topics to sleep on purpose.
    topicSleepMs: 0,
    // Nor compaction on its own (it looks every second): the workload's `compact` step runs it.
    compactLivePercent: 0,
    checkpointMs: 0,
    checkpointWalBytes: 0,
    // fsync-class frames sync at once; anything else waits for one of those (never the timer).
    walSyncIntervalMs: 600_000,
    ...over,
  };
}

export class CrashWorld {
  readonly sup: Supervisor;
  private readonly threads: InProcessThreads;
  /** Everything the world logged (supervisor, WAL writer, workers), for failure reports. */
  readonly logs: string[] = [];

  constructor(disk: SimDisk, settings: Settings, clock = new FakeClock()) {
    const fsx = disk.fs();
    const log = (m: string) => void this.logs.push(m);
    this.threads = new InProcessThreads(fsx, clock, log);
    // The boot seed (lease ids, actor RNGs) follows from the disk's life, like everything else.
    this.sup = new Supervisor(settings, { info: log, warn: log, error: log }, fsx, this.threads, () => `sweep-boot-${disk.generation}`);
  }

  /** Lock, threads, recovery, first checkpoint: ready. Never settles if the disk freezes first. */
  async boot(): Promise<void> {
    await this.sup.start();
    await this.sup.recover();
  }

  request(req: TopicRequest): Promise<TopicResult> {
    return this.sup.workerFor(req.topic).request(req);
  }

  checkpoint(): Promise<void> {
    return this.sup.checkpoint();
  }

  /** Compacts every sealed segment with a dead record, and swaps the copies in with a checkpoint. */
  async compact(): Promise<void> {
    const copied = await this.sup.compact(100);
    this.logs.push(`compaction: ${copied} segment copies swapped in`);
  }

  /** Abandons the world: timers cleared, ports closed, no I/O. */
  halt(): void {
    this.sup.abandon();
    this.threads.halt();
  }
}

/** A worker's reply body (a JSON object without its closing brace), parsed. */
export function replyBody(r: TopicResult): Record<string, unknown> {
  if (!r.ok) throw new Error(`expected a success, got ${r.status} ${r.code}: ${r.message}`);
  return JSON.parse(`${Buffer.from(r.json.buffer, r.json.byteOffset, r.json.byteLength).toString('utf8')}}`) as Record<string, unknown>;
}

/** A diff of `topic` as the HTTP route sends it: from the start, a page of 1000, no tags or meta unless `over` says. */
export function diffRequest(topic: string, over: Partial<DiffRequest> = {}): DiffRequest {
  return {
    op: 'diff',
    topic,
    fromSeq: 0,
    limit: 1000,
    nodes: null,
    includeTags: false,
    includeMeta: false,
    waitMs: 0,
    maxBatchBytes: 0,
    ...over,
  };
}
