// spool's client library, `import { Spool } from 'spool/client'` (docs/CLIENT.md). Runs on
// Node >= 20 and in browsers; imports nothing from the server and no Node built-in.
export { Spool, type SpoolOptions } from './spool.js';
export { SpoolError, CLIENT_CODES, type SpoolErrorInit } from './errors.js';
export type { RetryOptions, TransportOptions } from './transport.js';
export { WatchStream, type WatchOptions } from './watch.js';
export type { FollowOptions } from './follow.js';
export type { WorkStreamOptions, WorkEvent } from './work.js';
export { Worker, UnrecoverableError, type WorkerOptions, type WorkerStats, type JobContext, type JobHandler } from './worker.js';
export { SseDecoder, type SseEvent } from './sse.js';
export { encodeCursor, decodeCursor } from './json.js';
export type * from './types.js';
