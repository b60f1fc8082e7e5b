// How the supervisor starts its threads (docs/ARCHITECTURE.md "Threads"). The real plant spawns worker_threads running
// src/topicThread/main.ts and src/wal/walThread.ts; tests plug in one that runs the same factories
// (createWorkerApi, createWalApi) on the calling thread over the same MessageChannels
// (test/support/inProcessThreads.ts). The supervisor creates every port and judges every death.
import v8 from 'node:v8';
import { Worker, type MessagePort } from 'node:worker_threads';
import type { WorkerThreadData } from '../topicThread/workerApi.js';
import type { WalThreadData } from '../wal/walApi.js';

/** What a thread reports about itself; the supervisor decides what it means. */
export interface ThreadEvents {
  /** An uncaught error ended the thread. */
  failed(message: string): void;
  /** The thread ended (after a failure, on its own, or because it was stopped). */
  exited(code: number): void;
}

/** A started thread, as the supervisor sees it. */
export interface SpawnedThread {
  /** Ends the thread (shutdown, after the drain). */
  stop(): Promise<void>;
}

export interface ThreadSpawner {
  /**
   * The old-generation size (MiB) below which threads started from now on skip full
   * collections (0: V8's own sizing). Only real threads have heaps of their own.
   */
  heapFloor?(mb: number): void;
  /** Starts a topic worker on `data`; the ports in `transfer` move to it. */
  worker(data: WorkerThreadData, transfer: MessagePort[], events: ThreadEvents): SpawnedThread;
  /** Starts the WAL thread on `data`; the ports in `transfer` move to it. */
  wal(data: WalThreadData, transfer: MessagePort[], events: ThreadEvents): SpawnedThread;
}

function spawn(
  file: string,
  data: WorkerThreadData | WalThreadData,
  transfer: MessagePort[],
  events: ThreadEvents,
  resourceLimits?: { maxYoungGenerationSizeMb: number },
): SpawnedThread {
  const w = new Worker(new URL(file, import.meta.url), {
    workerData: data,
    transferList: transfer as never,
    ...(resourceLimits ? { resourceLimits } : {}),
  });
  w.on('error', (err) => events.failed(err.stack ?? err.message));
  w.on('exit', (code) => events.exited(code));
  return {
    stop: async () => {
      await w.terminate();
    },
  };
}

/**
 * A topic worker's heap is small (~15 MB live) while the APPEND frames it allocates are ~100
 * MB/s of ArrayBuffers that V8 counts toward starting a full collection of it; sized on its
 * own, V8 ran one every ~100 ms under batched appends. A floor set with V8's
 * --initial-old-space-size ("skip full GCs below that threshold") leaves the collections that
 * external memory itself starts (every 64 MB of it). V8 reads the flag when it makes an
 * isolate, so it applies to the threads started after it is set (the workers, then the WAL
 * thread), not to the HTTP thread's heap, which exists already.
 */
let heapFloorSet = 0;

function setHeapFloor(mb: number): void {
  const floor = Math.max(0, mb);
  if (floor === heapFloorSet) return;
  // 0 is V8's default: no configured size, its own sizing again.
  v8.setFlagsFromString(`--initial-old-space-size=${floor}`);
  heapFloorSet = floor;
}

/** The real threads. */
export const workerThreads: ThreadSpawner = {
  heapFloor: setHeapFloor,
  worker: (data, transfer, events) => spawn('../topicThread/main.js', data, transfer, events),
  // The WAL thread's frames are off-heap ArrayBuffers; a small young generation is plenty.
  wal: (data, transfer, events) => spawn('../wal/walThread.js', data, transfer, events, { maxYoungGenerationSizeMb: 4 }),
};
