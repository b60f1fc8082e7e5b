// Entry point of a topic worker thread: the WorkerApi (src/topicThread/workerApi.ts) on the real
// filesystem and the system clock, exposed to main over Comlink.
import { workerData } from 'node:worker_threads';
import { expose } from '../core/rpc.js';
import { SystemClock } from '../core/clock.js';
import { nodeFs } from '../storage/fs.js';
import { threadLogLine } from '../core/logLine.js';
import { createWorkerApi, type WorkerThreadData } from './workerApi.js';

const data = workerData as WorkerThreadData;
const api = createWorkerApi(data, nodeFs, new SystemClock(), (m) => process.stderr.write(threadLogLine(`worker ${data.workerIndex}`, m)));
expose(api, data.rpcPort);
