// How the supervisor starts its threads (docs/ARCHITECTURE.md "Threads"). The real plant spawns worker_threads running
// src/topicThread/main.ts and src/wal/walThread.ts; tests plug in one that runs the same factories
// (createWorkerApi, createWalApi) on the calling thread over the same MessageChannels
// (test/support/inProcessThreads.ts). The supervisor creates every port and judges every death.
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

/** The real threads. */
export const workerThreads: ThreadSpawner = {
  worker: (data, transfer, events) => spawn('../topicThread/main.js', data, transfer, events),
  // The WAL thread's frames are off-heap ArrayBuffers; a small young generation is plenty.
  wal: (data, transfer, events) => spawn('../wal/walThread.js', data, transfer, events, { maxYoungGenerationSizeMb: 4 }),
};
