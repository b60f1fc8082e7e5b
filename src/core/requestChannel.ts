// The topic-request hot path between main and a topic worker (hot-paths issue; docs/ARCHITECTURE.md
// "Thread crossings"): every request main issues to one worker during one event-loop turn leaves
// as ONE message, and every result the worker settles during one turn comes back as ONE message.
// Comlink stays for control calls (list, stats, checkpoints...); it costs one postMessage, one
// UUID and a proxy per call each way, which the profile of single-record appends showed as the
// top frames of both threads. Buffers (append bodies, rendered replies) are transferred, never
// cloned. Plain data only crosses; ids are per channel and never reused while pending.
import type { MessagePort } from 'node:worker_threads';
import type { RequestBatch, ResultBatch, TopicRequest, TopicResult } from './messages/rpc.js';
import { fail } from './errors.js';
import { PAGE_MIN_BYTES, isPage, markReceivedPage, recyclePages } from './pagePool.js';

/** Pages main keeps for the way back to one worker while no request goes there. */
const RETURNED_PAGES_MAX = 8;

/** Main's end: `request` resolves with the worker's result. */
export class RequestClient {
  private nextId = 1;
  /** The resolver of each request still waiting for its result. */
  private readonly pending = new Map<number, (r: TopicResult) => void>();
  private ids: number[] = [];
  private reqs: TopicRequest[] = [];
  private transfers: ArrayBuffer[] = [];
  /** Reply pages going back to the worker with the next batch (never a message of their own). */
  private returned: ArrayBuffer[] = [];
  private flushScheduled = false;
  private abandoned = false;
  private readonly giveBack = (page: ArrayBuffer): void => {
    if (!this.abandoned && this.returned.length < RETURNED_PAGES_MAX) this.returned.push(page);
  };

  constructor(private readonly port: MessagePort) {
    port.on('message', (m: ResultBatch) => this.onResults(m));
  }

  /** Sends `req` with the next flush of this turn; `transfer` lists buffers it gives away. */
  request(req: TopicRequest, transfer?: ArrayBuffer[]): Promise<TopicResult> {
    if (this.abandoned) return Promise.reject(new Error('the worker was abandoned'));
    const id = this.nextId++;
    this.ids.push(id);
    this.reqs.push(req);
    if (transfer) for (const b of transfer) this.transfers.push(b);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      // The check phase runs right after the poll phase that parsed this turn's requests.
      setImmediate(() => this.flush());
    }
    return new Promise<TopicResult>((resolve) => this.pending.set(id, resolve));
  }

  /** Gives up the channel without settling anything (an in-process world abandoned after a crash). */
  abandon(): void {
    this.abandoned = true;
    this.pending.clear();
    this.ids = [];
    this.reqs = [];
    this.transfers = [];
    this.returned = [];
    this.port.close();
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.ids.length === 0) return;
    const batch: RequestBatch = { ids: this.ids, reqs: this.reqs };
    const transfers = this.transfers;
    if (this.returned.length > 0) {
      batch.recycled = this.returned;
      for (const page of this.returned) transfers.push(page);
      this.returned = [];
    }
    this.ids = [];
    this.reqs = [];
    this.transfers = [];
    this.port.postMessage(batch, transfers);
  }

  private onResults(m: ResultBatch): void {
    for (let i = 0; i < m.ids.length; i++) {
      const id = m.ids[i]!;
      const resolve = this.pending.get(id);
      if (!resolve) continue; // abandoned meanwhile
      this.pending.delete(id);
      const r = m.results[i]!;
      // A transferred page may travel back once main has written it (reply.ts sendResult).
      if (r.ok && r.json.byteOffset === 0 && r.json.buffer.byteLength >= PAGE_MIN_BYTES) markReceivedPage(r.json.buffer as ArrayBuffer, this.giveBack);
      resolve(r);
    }
  }
}

/**
 * The worker's end: each request goes to `handle` in arrival order; results settled in one turn
 * go back together. `handle` must not throw for a request's own errors (they are results); a
 * throw is a bug and becomes an `internal` error result so the caller never hangs.
 */
export function serveRequests(port: MessagePort, handle: (req: TopicRequest) => Promise<TopicResult>): void {
  let ids: number[] = [];
  let results: TopicResult[] = [];
  let transfers: ArrayBuffer[] = [];
  let flushScheduled = false;

  const flush = (): void => {
    flushScheduled = false;
    if (ids.length === 0) return;
    const batch: ResultBatch = { ids, results };
    const t = transfers;
    ids = [];
    results = [];
    transfers = [];
    port.postMessage(batch, t);
  };

  const settle = (id: number, r: TopicResult): void => {
    ids.push(id);
    results.push(r.ok ? detach(r, transfers) : r);
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  };

  port.on('message', (m: RequestBatch) => {
    if (m.recycled) recyclePages(m.recycled);
    for (let i = 0; i < m.ids.length; i++) {
      const id = m.ids[i]!;
      handle(m.reqs[i]!).then(
        (r) => settle(id, r),
        (err: Error) => settle(id, fail('internal', err.message)),
      );
    }
  });
}

/**
 * A reply's bytes cross as a transferred standalone buffer (a reply page with its slack), never
 * as a cloned pool slab.
 */
function detach(r: Extract<TopicResult, { ok: true }>, transfers: ArrayBuffer[]): TopicResult {
  const j = r.json;
  const whole = (j.byteOffset === 0 && j.byteLength === j.buffer.byteLength && j.buffer instanceof ArrayBuffer) || (j.byteOffset === 0 && isPage(j.buffer));
  if (whole && !transfers.includes(j.buffer as ArrayBuffer)) {
    transfers.push(j.buffer as ArrayBuffer);
    return r;
  }
  const copy = new Uint8Array(j.byteLength);
  copy.set(j);
  transfers.push(copy.buffer);
  return { ...r, json: copy };
}
