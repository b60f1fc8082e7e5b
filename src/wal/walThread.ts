// Entry point of the WAL thread: the shared group-commit fsync actor (docs/ARCHITECTURE.md "The life of an append", facade in
// src/wal/walApi.ts) on the real filesystem, exposed to main over Comlink.
import { workerData } from 'node:worker_threads';
import { nodeFs } from '../storage/fs.js';
import { threadLogLine } from '../core/logLine.js';
import { expose } from '../core/rpc.js';
import { createWalApi, type WalThreadData } from './walApi.js';

const data = workerData as WalThreadData;
expose(
  createWalApi(data, nodeFs, (m) => process.stderr.write(threadLogLine('wal', m))),
  data.rpcPort,
);
