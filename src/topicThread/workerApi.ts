// A topic worker's rpc facade (docs/ARCHITECTURE.md "Threads"): builds one ActorHost on the given Fs and clock, serves
// topic requests on the request channel (src/protocol/requestChannel.ts, one message per turn each
// way) and returns the WorkerApi of control calls that main makes over Comlink. Runs on the worker thread (src/topicThread/main.ts exposes it
// there) or, in tests, on the caller's thread (test/support/inProcessThreads.ts). The facade only
// turns a call into an input and returns a promise that a later reply effect resolves: Comlink
// runs exposed methods concurrently, so logic here would break actor atomicity.
import { threadCpuUs } from '../core/threadCpu.js';
import { startStageClock } from '../core/stageClock.js';
import { startGaugeSampler } from './gaugeSampler.js';
import { totalLiveBytes } from '../core/gauges.js';
import { totalBytesReached } from '../protocol/errors.js';
import type { MessagePort } from 'node:worker_threads';
import { transfer } from '../core/rpc.js';
import { serveRequests } from '../protocol/requestServer.js';
import type { Clock } from '../core/clock.js';
import type { CheckpointParts, DrainResult, TopicSummary, WorkerStats } from '../protocol/messages/rpc.js';
import { ActorHost } from './host.js';
import type { RecoveryFinish } from './recovery.js';
import type { HostOptions } from './options.js';
import { SegmentStore } from '../storage/segmentStore.js';
import { PackStore } from '../storage/packStore.js';
import { PACK_NO_SLOT, STORAGE_STATE_SLOT } from '../core/sharedCounters.js';
import { PACK_FRAMES_FROM_BYTES, PACK_FRAMES_MAX } from '../actors/topic/appendOp.js';
import { isDiskFull, nodeFs, type Fs } from '../storage/fs.js';
import { freeBytes } from '../storage/freeSpace.js';
import { SpaceWaits, StorageState, storageStateOf } from '../storage/storageState.js';
import type { TopicPart } from '../format/topicPart.js';
import { TraceWriter } from '../replay/traceWriter.js';

export interface WorkerThreadData {
  workerIndex: number;
  workers: number;
  dataDir: string;
  rpcPort: MessagePort;
  /**
   * Topic requests from main, batched per turn, and their results with the turn's watch and
   * `/work` events back (src/protocol/requestChannel.ts, docs/ARCHITECTURE.md "Thread crossings").
   */
  requestPort: MessagePort;
  walPort: MessagePort;
  /** Port to each other worker, by worker index (null for this one): peer requests. */
  peerPorts: (MessagePort | null)[];
  counters: SharedArrayBuffer;
  /** SERVICE_STAGE_CLOCK: main's origin on the shared clock (the stage clock is off without it). */
  stageClockOriginNs?: bigint;
  /** Per-worker gauges read by main (core/gauges.ts); this worker writes its own row. */
  gauges: SharedArrayBuffer;
  /** Write live bytes into the gauges (only when SERVICE_MAX_TOTAL_BYTES is set; a running total, O(1)). */
  sampleLiveBytes: boolean;
  /** docs/API.md "Limits" max_total_bytes (0 = no cap): router forwards wait while every worker's live bytes reach it. */
  maxTotalBytes: number;
  maxLimit: number;
  maxTopics: number;
  segmentBytes: number;
  segmentCacheBytes: number;
  topicSleepMs: number;
  topicsAwakeMax: number;
  segmentOpenFiles: number;
  segmentWriteDelayMs: number;
  /** SERVICE_PACK_BYTES: a topic's first segment lives in pack files up to this size (0: never). */
  packBytes: number;
  /** SERVICE_PACK_FILE_BYTES: a pack file is sealed at about this size. */
  packFileBytes: number;
  /** SERVICE_COMPACT_LIVE_PERCENT and SERVICE_COMPACT_BYTES_PER_SEC (docs/ARCHITECTURE.md "Compaction"). */
  compactLivePercent: number;
  compactBytesPerSec: number;
  walInflightBytes: number;
  /** This run's WAL file size (src/wal/walSizing.ts). */
  walFileBytes?: number;
  traceDir: string | undefined;
  traceOutputs: boolean;
  traceTopics: string;
}

function traceWriterFor(data: WorkerThreadData): TraceWriter | undefined {
  if (!data.traceDir) return undefined;
  return new TraceWriter(
    data.traceDir,
    {
      v: 2,
      kind: 'spool-trace',
      worker: data.workerIndex,
      workers: data.workers,
      actor: {
        maxLimit: data.maxLimit,
        segmentBytes: data.segmentBytes,
        maxTopics: data.maxTopics,
        packBytes: data.packBytes,
        packFramesMax: PACK_FRAMES_MAX,
        packFramesFromBytes: PACK_FRAMES_FROM_BYTES,
        walFileBytes: data.walFileBytes,
      },
      outputs: data.traceOutputs,
    },
    data.traceTopics,
  );
}

/** What a worker runs, wired once by startWorker. */
interface WorkerParts {
  counters: Int32Array;
  segments: SegmentStore;
  /** The host's options; the boot epoch and seed are filled in when recovery finishes. */
  hostOpts: HostOptions;
  trace: TraceWriter | undefined;
  host: ActorHost;
  replayed: Promise<unknown>;
  stopGauges: () => void;
}

/** The worker's segment store over its pack store; a write failure other than space stops writes. */
function openStores(data: WorkerThreadData, fsx: Fs, counters: Int32Array, log: (msg: string) => void): SegmentStore {
  const onFatal = (err: Error) => {
    // A segment or pack write failed for another reason than space: writes stop until a restart.
    if (Atomics.exchange(counters, STORAGE_STATE_SLOT, StorageState.FAILED) !== StorageState.FAILED) {
      log(`spool: segment write failed: ${err.message}; writes are refused until a restart (reads go on)`);
    }
  };
  const spaceWaits = new SpaceWaits(counters, log);
  const packs = new PackStore(
    fsx,
    data.dataDir,
    {
      workerIndex: data.workerIndex,
      workers: data.workers,
      fileBytes: data.packFileBytes,
      nextPackNo: () => Atomics.add(counters, PACK_NO_SLOT, 1),
      writeDelayMs: data.segmentWriteDelayMs,
      spaceWaits,
    },
    onFatal,
  );
  return new SegmentStore(fsx, data.dataDir, onFatal, data.segmentOpenFiles, packs, data.segmentWriteDelayMs, spaceWaits);
}

/** The host's options from the thread's data (the boot epoch and seed are set when recovery finishes). */
function hostOptionsOf(data: WorkerThreadData, counters: Int32Array): HostOptions {
  return {
    workerIndex: data.workerIndex,
    workers: data.workers,
    bootEpoch: 0,
    bootSeed: '',
    counters,
    maxLimit: data.maxLimit,
    maxTopics: data.maxTopics,
    segmentBytes: data.segmentBytes,
    packBytes: data.packBytes,
    packFramesMax: PACK_FRAMES_MAX,
    packFramesFromBytes: PACK_FRAMES_FROM_BYTES,
    segmentCacheBytes: data.segmentCacheBytes,
    topicSleepMs: data.topicSleepMs,
    topicsAwakeMax: data.topicsAwakeMax,
    walInflightBytes: data.walInflightBytes,
    walFileBytes: data.walFileBytes,
  };
}

/** Wires a worker: its stores, its ActorHost, the request channel and the gauge sampler. */
function startWorker(data: WorkerThreadData, fsx: Fs, clock: Clock, log: (msg: string) => void): WorkerParts {
  const counters = new Int32Array(data.counters);
  if (data.stageClockOriginNs !== undefined) startStageClock(data.stageClockOriginNs);
  const segments = openStores(data, fsx, counters, log);
  const hostOpts = hostOptionsOf(data, counters);
  // The real volume's free space, for a frame larger than a WAL file (outside the Fs seam, like
  // the WAL's sizing: a simulated disk says nothing).
  if (fsx === nodeFs) hostOpts.freeBytes = () => freeBytes(data.dataDir);
  const trace = traceWriterFor(data);
  const gauges = new Float64Array(data.gauges);
  const host = new ActorHost({
    clock,
    opts: hostOpts,
    walPort: data.walPort,
    segments,
    fsx,
    dataDir: data.dataDir,
    trace,
    traceOutputs: data.traceOutputs,
    peerPorts: data.peerPorts.map((p) => p ?? undefined),
    compaction: { livePercent: data.compactLivePercent, bytesPerSec: data.compactBytesPerSec },
    log,
    forwardRefusal:
      data.maxTotalBytes > 0
        ? () => (totalLiveBytes(gauges, data.workers) >= data.maxTotalBytes ? totalBytesReached(data.maxTotalBytes) : undefined)
        : undefined,
  });
  const requests = serveRequests(data.requestPort, (req, id, answer) => host.requestTo(req, id, answer));
  host.wal.beforeSubmit = requests.flush;
  host.events.attach(requests.event);
  const stopGauges = startGaugeSampler(gauges, data.workerIndex, {
    liveBytes: data.sampleLiveBytes ? () => host.liveBytes() : undefined,
    walQueuedBytes: () => host.wal.inflightBytes,
  });

  return { counters, segments, hostOpts, trace, host, replayed: host.recovery.replayed, stopGauges };
}

/** The control calls main makes over Comlink (one method each; topic requests take the request channel). */
export class WorkerApi {
  constructor(private readonly w: WorkerParts) {}

  list(prefix: string, after: string, limit: number): TopicSummary[] {
    return this.w.host.listings.list(prefix, after, limit);
  }

  touch(names: string[]): TopicSummary[] {
    return this.w.host.listings.touch(names);
  }

  watermarks(names: string[]): ({ head: number; earliest: number } | null)[] {
    return this.w.host.listings.watermarks(names);
  }

  /** The instance id of each named topic, null when absent (the router registry's RouterHost.instances). */
  instanceIds(names: string[]): (number | null)[] {
    return this.w.host.listings.instanceIds(names);
  }

  /** Metrics figures: totals, the first `firstMax` topics by name, every router. */
  stats(firstMax: number): WorkerStats {
    return this.w.host.listings.stats(firstMax);
  }

  /** Topics with a non-zero effective priority (after a restart: the manual ones). */
  priorities(): [string, number][] {
    return this.w.host.listings.priorities();
  }

  /**
   * Recovery step 3 from a v2 snapshot: this worker's section (moved here), every pack file's
   * name, the snapshot's boot epoch. (The WAL thread has the section's topic ids from main.)
   */
  async loadSection(section: Uint8Array, packNames: string[], snapshotEpoch: number, filesTrusted = true): Promise<void> {
    await this.w.host.loadSection(
      Buffer.from(section.buffer, section.byteOffset, section.byteLength),
      packNames,
      snapshotEpoch,
      filesTrusted,
    );
  }

  /**
   * Recovery step 3: the snapshot's topics of this worker, every pack file's name, the snapshot's
   * boot epoch, and what it records as fsynced of the packs being written at its cut.
   * `filesTrusted`: the segment files the snapshot lists must be there (no newer one was skipped).
   */
  loadSnapshot(
    parts: TopicPart[],
    packNames: string[],
    snapshotEpoch: number,
    fsyncedPacks: [string, number][] = [],
    filesTrusted = true,
  ): Promise<void> {
    return this.w.host.loadSnapshot(parts, packNames, snapshotEpoch, fsyncedPacks, filesTrusted);
  }

  /** Snapshot topics indexed so far (polled by the supervisor while recovering). */
  snapshotTopicsLoaded(): number {
    return this.w.host.recovery.snapshotTopicsLoaded;
  }

  async awaitReplay(): Promise<void> {
    await this.w.replayed;
  }

  /**
   * The highest boot epoch of a topic id among the packed frames recovery holds for topics made
   * after the snapshot (-1: none), once step 3 settled (the supervisor's boot epoch, after a WAL
   * scan that dropped frames).
   */
  heldEpochMax(): number {
    return this.w.host.recovery.heldEpochMax;
  }

  finishRecovery(bootEpoch: number, bootSeed: string, dirIds: number[]): RecoveryFinish {
    this.w.hostOpts.bootEpoch = bootEpoch;
    this.w.hostOpts.bootSeed = bootSeed;
    return this.w.host.finishRecovery(dirIds);
  }

  /** The server is recovered and its WAL started: peer requests flow from now on. */
  serve(): void {
    this.w.host.serve();
  }

  async checkpointPrepare(markId: number, final: boolean): Promise<CheckpointParts> {
    this.w.host.inputsSinceCheckpoint = 0; // what comes from here on is for the next checkpoint
    try {
      // The pieces the section writer allocated move to main; kept lines (shared memory) are shared.
      const { section, transfer: own, crc, topics, deadPacks } = await this.w.host.checkpoints.prepare(markId, final);
      return transfer({ ok: true, section, crc, topics, deadPacks }, own);
    } catch (err) {
      // A full disk only postpones the checkpoint; anything else stops writes (main decides).
      return { ok: false, diskFull: isDiskFull(err), message: (err as Error).message };
    }
  }

  /** No actor took an input since the last checkpoint began (a timed one may be skipped). */
  quietSinceCheckpoint(): boolean {
    // Compacted copies waiting for a checkpoint are something to record (its commit swaps them),
    // and so are dead packs (its commit unlinks them: a quiet server kept a dead pack for good).
    const host = this.w.host;
    return host.inputsSinceCheckpoint === 0 && !host.compaction.busy && !host.segments.packs?.deadWaiting;
  }

  /** The snapshot of `markId` is durable and main unlinked `removedPacks`. */
  checkpointCommitted(markId: number, removedPacks: string[] = []): Promise<number> {
    return this.w.host.checkpoints.committed(markId, removedPacks);
  }

  /**
   * Copies every sealed segment whose live share is below `livePercent` now, unpaced (tests and
   * tools); the next checkpoint swaps them in. Returns how many copies wait for it.
   */
  compactNow(livePercent: number): Promise<number> {
    return this.w.host.compaction.compactNow(livePercent);
  }

  /** Main opened (+1) or closed (-1) a watch stream on these topics of this worker. */
  watchInterest(topics: string[], delta: 1 | -1): void {
    this.w.host.events.setInterest(topics, delta);
  }

  /**
   * For tests and audits, O(topics): actors held, those with a live topic, and the running
   * total of live bytes next to the same figure summed over every actor (they must agree);
   * blocks of kept checkpoint lines that a fresh encoding would not give (must be 0).
   */
  audit(): {
    actors: number;
    live: number;
    leaseKept: number;
    sleeping: number;
    sleepingOwnFiles: number;
    liveBytes: number;
    liveBytesSummed: number;
    staleKeptLines: number;
  } {
    return {
      actors: this.w.host.actorCount,
      live: this.w.host.listings.liveActorCount(),
      leaseKept: this.w.host.listings.leaseKeptActorCount(),
      sleeping: this.w.host.dormancy.sleepingCount,
      sleepingOwnFiles: this.w.host.dormancy.sleeping.ownFilesCount(),
      liveBytes: this.w.host.liveBytes(),
      liveBytesSummed: this.w.host.listings.liveBytesSummed(),
      staleKeptLines: this.w.host.checkpoints.lines.audit(),
    };
  }

  /** Puts every topic that may sleep now to sleep, however recently used (tests and tools); returns how many. */
  sleepQuietTopics(): number {
    return this.w.host.dormancy.sweep(true);
  }

  /** What the sweep's timer does about TTL (dormancy.ts wakeDue), at once (tests); returns how many woke. */
  wakeDueTopics(): Promise<number> {
    return this.w.host.dormancy.wakeDue();
  }

  /** This thread's CPU time in µs (the stage clock's per-thread CPU; debug). */
  threadCpuUs(): number | undefined {
    return threadCpuUs();
  }

  releaseLongPolls(): void {
    this.w.host.releaseLongPolls();
  }

  /**
   * Shutdown, on every worker before any drains (docs/ARCHITECTURE.md "Startup and shutdown"
   * step 4): the forwarders stop sending, and this waits until the copy batches and probes
   * they have out are answered, so no copy reaches a dest after the final checkpoint's mark.
   * The workers still serve each other's forwards meanwhile. Gives up after `waitMs`, or at
   * once when the disk is full (a dest's append then waits for space); resolves with the
   * requests still out (0 when quiet).
   */
  async stopRouters(waitMs: number): Promise<number> {
    const host = this.w.host;
    let out = host.stopRouters();
    const until = Date.now() + waitMs;
    while (out > 0 && Date.now() < until && storageStateOf(this.w.counters) !== StorageState.FULL) {
      await new Promise((r) => setTimeout(r, 5));
      out = host.forwardsOut();
    }
    return out;
  }

  async drain(): Promise<DrainResult> {
    try {
      // Frames queued for the WAL wait for space once the disk is full: stop waiting for them then.
      const full = () => storageStateOf(this.w.counters) === StorageState.FULL;
      let poll: NodeJS.Timeout | undefined;
      const filled = new Promise<void>((r) => (poll = setInterval(() => full() && r(), 50)));
      await Promise.race([this.w.host.wal.whenIdle(), filled]).finally(() => clearInterval(poll));
      if (full()) return { complete: false, why: 'the disk is full' };
      await this.w.segments.flushAll();
      return { complete: true };
    } catch (err) {
      if (isDiskFull(err as Error)) return { complete: false, why: `the disk is full (${(err as Error).message})` };
      throw err;
    } finally {
      await this.w.trace?.close();
    }
  }

  /**
   * Clears every timer of this worker (actor timers, segment retries) and does nothing else,
   * no I/O. A real thread is simply terminated; an in-process host abandoning its world after
   * a simulated crash calls this so nothing of the old world runs on.
   */
  stop(): void {
    this.w.stopGauges();
    this.w.host.stop();
    this.w.segments.stop();
  }
}

export function createWorkerApi(data: WorkerThreadData, fsx: Fs, clock: Clock, log: (msg: string) => void): WorkerApi {
  return new WorkerApi(startWorker(data, fsx, clock, log));
}
