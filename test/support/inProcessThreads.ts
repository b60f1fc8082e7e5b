// A ThreadSpawner (src/supervisor/threads.ts) that hosts the topic workers and the WAL writer on
// the calling thread: the same factories the real threads run (createWorkerApi, createWalApi),
// on an injected Fs and clock, exposed over the same MessageChannels (Comlink and raw ports work
// within one thread). A whole server then runs in one test process on a SimDisk, and halt()
// abandons it after a simulated crash: every hosted component's timers cleared, every port
// closed (both ends), no I/O. Promises the old world still waits on never settle and are
// collected with it.
import type { MessagePort } from 'node:worker_threads';
import { expose } from '../../src/core/rpc.js';
import type { Clock } from '../../src/core/clock.js';
import type { Fs } from '../../src/storage/fs.js';
import { createWorkerApi, type WorkerThreadData } from '../../src/topicThread/workerApi.js';
import { createWalApi, type WalThreadData } from '../../src/wal/walApi.js';
import type { SpawnedThread, ThreadSpawner } from '../../src/supervisor/threads.js';

export class InProcessThreads implements ThreadSpawner {
  private readonly hostedThreads: SpawnedThread[] = [];

  constructor(
    private readonly fsx: Fs,
    private readonly clock: Clock,
    private readonly log: (msg: string) => void,
  ) {}

  worker(data: WorkerThreadData, transfer: MessagePort[]): SpawnedThread {
    const api = createWorkerApi(data, this.fsx, this.clock, this.log);
    expose(api, data.rpcPort);
    return this.hosted(transfer, () => api.stop());
  }

  wal(data: WalThreadData, transfer: MessagePort[]): SpawnedThread {
    // Every urgent sync but the first runs inline: a choice by the time the last sync took
    // (the real threads' rule) would make two runs of one workload differ in their fs calls.
    const api = createWalApi({ ...data, inlineSyncBelowUs: Infinity }, this.fsx, this.log);
    expose(api, data.rpcPort);
    return this.hosted(transfer, () => api.stop());
  }

  /** Stops every hosted thread now: timers cleared, ports closed, no I/O. Idempotent. */
  halt(): void {
    for (const t of this.hostedThreads) void t.stop();
  }

  private hosted(ports: MessagePort[], stopTimers: () => void): SpawnedThread {
    const t: SpawnedThread = {
      stop: async () => {
        stopTimers();
        // Closing one end closes its entangled end too: the supervisor's side goes with it.
        for (const p of ports) p.close();
      },
    };
    this.hostedThreads.push(t);
    return t;
  }
}
