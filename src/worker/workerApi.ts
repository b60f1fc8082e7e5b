// A topic worker's rpc facade (DESIGN 1.4): builds one ActorHost on the given Fs and clock, serves
// topic requests on the request channel (src/core/requestChannel.ts, one message per turn each
// way) and returns the WorkerApi of control calls that main makes over Comlink. Runs on the worker thread (src/worker/main.ts exposes it
// there) or, in tests, on the caller's thread (test/support/inProcessThreads.ts). The facade only
// turns a call into an input and returns a promise that a later reply effect resolves: Comlink
// runs exposed methods concurrently, so logic here would break actor atomicity.
import { startGaugeSampler } from './gaugeSampler.js';
import { totalLiveBytes } from '../core/gauges.js';
import { totalBytesReached } from '../core/errors.js';
import type { MessagePort } from 'node:worker_threads';
import { transfer } from '../core/rpc.js';
import { serveRequests } from '../core/requestChannel.js';
import type { Clock } from '../core/clock.js';
import type { CheckpointParts, TopicSummary, WorkerStats } from '../core/messages/rpc.js';
import { ActorHost } from './host.js';
import { SegmentStore } from '../storage/segmentStore.js';
import { isDiskFull, type Fs } from '../storage/fs.js';
import { StorageState, STORAGE_STATE_SLOT } from '../storage/storageState.js';
import type { TopicPart } from '../storage/snapshot.js';
import { TraceWriter } from '../replay/traceWriter.js';

export interface WorkerThreadData {
  workerIndex: number;
  workers: number;
  dataDir: string;
  rpcPort: MessagePort;
  /** Topic requests from main, batched per turn (src/core/requestChannel.ts). */
  requestPort: MessagePort;
  walPort: MessagePort;
  /** Raw port for watch events to main (DESIGN 1.6). */
  eventsPort: MessagePort;
  /** Port to each other worker, by worker index (null for this one): peer requests. */
  peerPorts: (MessagePort | null)[];
  counters: SharedArrayBuffer;
  /** Per-worker gauges read by main (core/gauges.ts); this worker writes its own row. */
  gauges: SharedArrayBuffer;
  /** Sum live bytes into the gauges (only when SERVICE_MAX_TOTAL_BYTES is set: O(topics)). */
  sampleLiveBytes: boolean;
  /** G15 max_total_bytes (0 = no cap): router forwards wait while every worker's live bytes reach it. */
  maxTotalBytes: number;
  maxLimit: number;
  maxTopics: number;
  segmentBytes: number;
  segmentCacheBytes: number;
  segmentOpenFiles: number;
  walInflightBytes: number;
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
      actor: { maxLimit: data.maxLimit, segmentBytes: data.segmentBytes, maxTopics: data.maxTopics },
      outputs: data.traceOutputs,
    },
    data.traceTopics,
  );
}

export function createWorkerApi(data: WorkerThreadData, fsx: Fs, clock: Clock, log: (msg: string) => void) {
  const counters = new Int32Array(data.counters);
  const segments = new SegmentStore(fsx, data.dataDir, (err) => {
    // A segment write failed for another reason than space: writes stop until a restart.
    if (Atomics.exchange(counters, STORAGE_STATE_SLOT, StorageState.FAILED) !== StorageState.FAILED) {
      log(`spool: segment write failed: ${err.message}; writes are refused until a restart (reads go on)`);
    }
  }, data.segmentOpenFiles);
  const hostOpts = {
    workerIndex: data.workerIndex,
    workers: data.workers,
    bootEpoch: 0,
    bootSeed: '',
    counters,
    maxLimit: data.maxLimit,
    maxTopics: data.maxTopics,
    segmentBytes: data.segmentBytes,
    segmentCacheBytes: data.segmentCacheBytes,
    walInflightBytes: data.walInflightBytes,
  };
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
    eventsPort: data.eventsPort,
    peerPorts: data.peerPorts.map((p) => p ?? undefined),
    forwardRefusal: data.maxTotalBytes > 0 ? () => (totalLiveBytes(gauges, data.workers) >= data.maxTotalBytes ? totalBytesReached(data.maxTotalBytes) : undefined) : undefined,
  });
  const replayed = host.recovery.replayed;
  serveRequests(data.requestPort, (req) => host.request(req));
  const stopGauges = startGaugeSampler(gauges, data.workerIndex, {
    liveBytes: data.sampleLiveBytes ? () => host.liveBytes() : undefined,
    walQueuedBytes: () => host.wal.inflightBytes,
  });

  return {
    list(prefix: string, after: string, limit: number): TopicSummary[] {
      return host.list(prefix, after, limit);
    },
    touch(names: string[]): TopicSummary[] {
      return host.touch(names);
    },
    watermarks(names: string[]): ({ head: number; earliest: number } | null)[] {
      return host.watermarks(names);
    },
    /** Metrics figures: totals, the first `firstMax` topics by name, every router. */
    stats(firstMax: number): WorkerStats {
      return host.stats(firstMax);
    },
    /** Topics with a non-zero effective priority (after a restart: the manual ones). */
    priorities(): [string, number][] {
      return host.priorities();
    },
    loadSnapshot(parts: TopicPart[]): Promise<void> {
      return host.loadSnapshot(parts);
    },
    async awaitReplay(): Promise<void> {
      await replayed;
    },
    finishRecovery(bootEpoch: number, bootSeed: string): { topics: number; appends: number; ids: number[] } {
      hostOpts.bootEpoch = bootEpoch;
      hostOpts.bootSeed = bootSeed;
      return host.finishRecovery();
    },
    async checkpointPrepare(markId: number, final: boolean): Promise<CheckpointParts> {
      try {
        const parts = await host.checkpoints.prepare(markId, final);
        return transfer({ ok: true, parts }, [parts.buffer as ArrayBuffer]);
      } catch (err) {
        // A full disk only postpones the checkpoint; anything else stops writes (main decides).
        return { ok: false, diskFull: isDiskFull(err), message: (err as Error).message };
      }
    },
    checkpointCommitted(markId: number): Promise<number> {
      return host.checkpoints.committed(markId);
    },
    /** Main opened (+1) or closed (-1) a watch stream on these topics of this worker. */
    watchInterest(topics: string[], delta: 1 | -1): void {
      host.events.setInterest(topics, delta);
    },
    releaseLongPolls(): void {
      host.releaseLongPolls();
    },
    async drain(): Promise<void> {
      await host.wal.whenIdle();
      await segments.flushAll();
      await trace?.close();
    },
    /**
     * Clears every timer of this worker (actor timers, segment retries) and does nothing else,
     * no I/O. A real thread is simply terminated; an in-process host abandoning its world after
     * a simulated crash calls this so nothing of the old world runs on.
     */
    stop(): void {
      stopGauges();
      host.stop();
      segments.stop();
    },
  };
}

export type WorkerApi = ReturnType<typeof createWorkerApi>;
