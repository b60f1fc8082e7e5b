// What a topic worker tells main without being asked: watch pushes and `/work` stream events, as
// plain data with batch and frame buffers transferred. They cross in the worker turn's one
// message to main, next to the turn's results (ResultBatch, src/protocol/requestChannel.ts).

/**
 * Records (from, to] of one topic instance became visible: `buf` holds each record's pieces
 * rendered once (docs/ARCHITECTURE.md "Watch streams") and `offs` their boundaries, 4 per record plus the end: head
 * (`{"$seq":…,"$ts":…` and `,"$node":…`), tag piece, data piece, meta piece. The closing brace
 * is not stored. `nodeIdx` maps each record to `nodes` (-1: no node). `stale` batches carry no
 * records (the range was evicted at once): tailing sessions must pull instead.
 */
export interface WatchBatch {
  k: 'batch';
  topic: string;
  instanceId: number;
  from: number;
  to: number;
  head: number;
  durableHead: number;
  dedupeNode: boolean;
  stale: boolean;
  buf: Uint8Array;
  offs: Uint32Array;
  nodes: string[];
  nodeIdx: Int32Array;
}

export type WatchEvent =
  | WatchBatch
  /** The durable head moved (strong sessions may pull up to it). */
  | { k: 'durable'; topic: string; instanceId: number; durableHead: number; head: number }
  /** The topic instance is gone (deleted, durably). */
  | { k: 'deleted'; topic: string; instanceId: number; head: number };

/** What a queue actor tells main about one `/work` stream (docs/QUEUES.md). */
export type WorkEvent =
  /** Whole SSE `job` frames (`id:` lines included), rendered once by the actor, in lease order. */
  | { k: 'jobs'; connId: number; topic: string; frames: Uint8Array }
  /** The stream must end with a terminal error frame (the queue was deleted). */
  | { k: 'end'; connId: number; topic: string; code: 409; error: 'not_a_queue'; message: string };

/** Either kind, as a worker turn's message carries them (in the order the worker produced them). */
export type WorkerEvent = WatchEvent | WorkEvent;

/** True for a `/work` stream event, false for a watch event. */
export function isWorkEvent(ev: WorkerEvent): ev is WorkEvent {
  return ev.k === 'jobs' || ev.k === 'end';
}
