// SERVICE_WORKER_HEAP_FLOOR_MB: the supervisor hands the floor to its thread spawner before it
// starts any topic worker (V8 reads the flag when it makes a thread's heap, so a floor set later
// would miss them). The real spawner turns it into V8's --initial-old-space-size; what that
// buys is measured in bench/ (docs/PERFORMANCE.md "A heap floor for the worker threads").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MessagePort } from 'node:worker_threads';
import { readSettings } from '../../src/config.js';
import { SystemClock } from '../../src/core/clock.js';
import { nodeFs } from '../../src/storage/fs.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import type { SpawnedThread } from '../../src/supervisor/threads.js';
import type { WorkerThreadData } from '../../src/topicThread/workerApi.js';
import type { WalThreadData } from '../../src/wal/walApi.js';
import { InProcessThreads } from '../support/inProcessThreads.js';

/** In-process threads that also record what the supervisor asked of the spawner, in order. */
class RecordingThreads extends InProcessThreads {
  readonly calls: string[] = [];
  heapFloor(mb: number): void {
    this.calls.push(`floor ${mb}`);
  }
  override worker(data: WorkerThreadData, transfer: MessagePort[]): SpawnedThread {
    this.calls.push('worker');
    return super.worker(data, transfer);
  }
  override wal(data: WalThreadData, transfer: MessagePort[]): SpawnedThread {
    this.calls.push('wal');
    return super.wal(data, transfer);
  }
}

async function started(env: Record<string, string>): Promise<string[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-heapfloor-'));
  try {
    const settings = readSettings({ SERVICE_DATA_DIR: dataDir, SERVICE_WORKERS: '2', ...env });
    const log = () => undefined;
    const threads = new RecordingThreads(nodeFs, new SystemClock(), log);
    const sup = new Supervisor(settings, { info: log, warn: log, error: log }, nodeFs, threads);
    await sup.start();
    await sup.recover();
    await sup.shutdown();
    return threads.calls;
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

test('the heap floor reaches the spawner before the first topic worker starts', async () => {
  assert.deepEqual(await started({ SERVICE_WORKER_HEAP_FLOOR_MB: '96' }), ['floor 96', 'worker', 'worker', 'wal']);
  // The default, and 0 passed on as it is: the real spawner then leaves (or puts back) V8's own sizing.
  assert.deepEqual((await started({}))[0], 'floor 128');
  assert.deepEqual((await started({ SERVICE_WORKER_HEAP_FLOOR_MB: '0' }))[0], 'floor 0');
});
