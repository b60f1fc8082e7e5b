// RequestClient: main's end of the request channel to one topic worker (requestChannel.ts,
// docs/ARCHITECTURE.md "Thread crossings"). The requests of one turn of main's event loop leave
// as one message at the turn's flush; each result batch the worker sends resolves its requests'
// promises and hands on the worker's watch and `/work` events in the order the worker produced
// them, a big batch SETTLED_PER_TURN results per turn. Runs on the main thread.
import type { MessagePort } from 'node:worker_threads';
import type {
  AppendRequest,
  ChannelRequest,
  QueueBodyRequest,
  RequestBatch,
  ResultBatch,
  TopicResult,
  WireRequest,
} from './messages/rpc.js';
import type { WorkerEvent } from './messages/events.js';
import { PAGE_MIN_BYTES, markReceivedPage } from '../core/pagePool.js';
import { stageClock } from '../core/stageClock.js';
import { decodeResult, encodeRequest, COLD, type LaneCursor } from './hotLanes.js';
import { SHARED_BYTES_MAX, hasBody, ownsBuffer } from './requestChannel.js';
import { PendingTable } from '../core/pendingTable.js';

/** Pages main keeps for the way back to one worker while no request goes there. */
const RETURNED_PAGES_MAX = 8;

/**
 * Results answered in one turn of main's event loop. Each resolve runs its request's reply
 * (microtasks, before anything else): a wake of thousands of parked long-polls is one result
 * batch, and answering it at once held every other request and the watch pushes for the whole
 * fan-out (~30-50 µs of socket writes per waiter). The rest waits a turn per slice, with main's
 * I/O in between.
 */
const SETTLED_PER_TURN = 128;

/**
 * Where a batch's append and queue bodies go: the big ones that own their whole buffer are transferred
 * (`whole`), the others copied into one shared buffer of `sharedBytes`. The same buffer twice in
 * one batch could not be transferred twice: its second use is copied.
 */
function planBodies(reqs: ChannelRequest[]): { whole: Set<ArrayBufferLike> | undefined; sharedBytes: number; sharedBodies: number } {
  let whole: Set<ArrayBufferLike> | undefined;
  let sharedBytes = 0;
  let sharedBodies = 0;
  for (const r of reqs) {
    if (!hasBody(r)) continue;
    if (r.body.byteLength > SHARED_BYTES_MAX && ownsBuffer(r.body) && !whole?.has(r.body.buffer)) (whole ??= new Set()).add(r.body.buffer);
    else {
      sharedBytes += r.body.byteLength;
      sharedBodies++;
    }
  }
  return { whole, sharedBytes, sharedBodies };
}

/** A result or a run of events held back for a later turn (a big batch, SETTLED_PER_TURN). */
type Deferred = { resolve: (r: TopicResult) => void; r: TopicResult } | { events: WorkerEvent[] };

/**
 * Main's end: `request` resolves with the worker's result; the worker's watch and `/work` events
 * go to `onEvents`, in the order the worker produced them relative to its results.
 */
export class RequestClient {
  /** The resolver of each request still waiting for its result, by request id. */
  private readonly pending = new PendingTable<(r: TopicResult) => void>();
  private ids: number[] = [];
  private reqs: ChannelRequest[] = [];
  /** Reply pages going back to the worker with the next batch (never a message of their own). */
  private returned: ArrayBuffer[] = [];
  private flushScheduled = false;
  private abandoned = false;
  /** Messages received from the worker (one per worker turn that settled or produced anything). */
  messagesIn = 0;
  /** Stage clock only: when each request left in its batch. */
  private readonly postStamps = new Map<number, number>();
  private readonly giveBack = (page: ArrayBuffer): void => {
    if (!this.abandoned && this.returned.length < RETURNED_PAGES_MAX) this.returned.push(page);
  };

  constructor(
    private readonly port: MessagePort,
    private readonly onEvents?: (events: WorkerEvent[]) => void,
  ) {
    port.on('message', (m: ResultBatch) => this.onResults(m));
  }

  /**
   * Sends `req` with the next flush of this turn. The channel owns `req` from here: an append's
   * (or a queue body request's) body is read at the flush (it must not change before), then the request object is sent
   * without it (its bytes go in the batch's shared buffer) or with it transferred (a big body
   * that is a whole buffer of its own; the caller's view of it becomes empty).
   */
  request(req: ChannelRequest): Promise<TopicResult> {
    if (this.abandoned) return Promise.reject(new Error('the worker was abandoned'));
    this.reqs.push(req);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      // The check phase runs right after the poll phase that parsed this turn's requests.
      setImmediate(() => this.flush());
    }
    return new Promise<TopicResult>((resolve) => this.ids.push(this.pending.add(resolve)));
  }

  /** Gives up the channel without settling anything (an in-process world abandoned after a crash). */
  abandon(): void {
    this.abandoned = true;
    this.pending.clear();
    this.ids = [];
    this.reqs = [];
    this.returned = [];
    this.port.close();
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.ids.length === 0) return;
    const cold: WireRequest[] = [];
    const batch: RequestBatch = { ids: this.ids, lanes: [], laneStrs: [], reqs: cold };
    const transfers: ArrayBuffer[] = [];
    const { whole, sharedBytes, sharedBodies } = planBodies(this.reqs);
    if (whole) for (const b of whole) transfers.push(b as ArrayBuffer);
    const shared = sharedBodies > 0 ? new Uint8Array(sharedBytes) : undefined;
    let at = 0;
    for (const r of this.reqs) {
      // A whole buffer's first use is transferred (planBodies).
      const inShared = hasBody(r) && !whole?.delete(r.body.buffer);
      if (inShared) {
        const body = (r as AppendRequest | QueueBodyRequest).body;
        shared!.set(body, at);
        at += body.byteLength;
        (batch.bodyEnds ??= []).push(at);
      }
      if (encodeRequest(r, inShared, batch.lanes, batch.laneStrs)) continue;
      batch.lanes.push(COLD);
      if (inShared) (r as unknown as { body: Uint8Array | null }).body = null;
      cold.push(r as WireRequest);
    }
    if (shared) {
      batch.bodies = shared.buffer;
      transfers.push(shared.buffer);
    }
    if (this.returned.length > 0) {
      batch.recycled = this.returned;
      for (const page of this.returned) transfers.push(page);
      this.returned = [];
    }
    if (stageClock.on) {
      const now = stageClock.now(); // before the post: the worker may stamp its receipt first
      for (const id of this.ids) this.postStamps.set(id, now);
    }
    this.port.postMessage(batch, transfers);
    this.ids = [];
    this.reqs = [];
  }

  private onResults(m: ResultBatch): void {
    this.messagesIn++;
    let sharedAt = 0;
    let later: Deferred[] | undefined;
    const lanes: LaneCursor = { nums: m.lanes, strs: [], n: 0, s: 0 };
    const events = m.events;
    let e = 0; // the next event to hand on
    let k = 0;
    for (let i = 0; i < m.ids.length; i++) {
      // The events the worker produced before result i, then result i (docs/ARCHITECTURE.md "Thread crossings").
      if (events && e < events.length && m.eventsAt![e]! <= i) e = this.handOn(events, m.eventsAt!, e, i, later);
      const end = m.jsonEnds?.[i] ?? -1;
      const bytes = end >= 0 ? new Uint8Array(m.jsons!, sharedAt, end - sharedAt) : undefined;
      if (end >= 0) sharedAt = end;
      let r: TopicResult | undefined = bytes && decodeResult(lanes, bytes);
      if (!r) {
        if (!bytes) lanes.n++; // its COLD code
        const w = m.results[k++]!;
        if (bytes) (w as { json: Uint8Array | null }).json = bytes;
        r = w as TopicResult;
        // A transferred page may travel back once main has written it (reply.ts sendResult).
        if (!bytes && r.ok && r.json.byteOffset === 0 && r.json.buffer.byteLength >= PAGE_MIN_BYTES)
          markReceivedPage(r.json.buffer as ArrayBuffer, this.giveBack);
      }
      if (m.stamps) r.stamps = m.stamps[i];
      const id = m.ids[i]!;
      const resolve = this.pending.take(id);
      if (!resolve) continue; // abandoned meanwhile
      if (stageClock.on) {
        r.stamps = { ...r.stamps, post: this.postStamps.get(id), mrecv: stageClock.now() };
        this.postStamps.delete(id);
      }
      if (i < SETTLED_PER_TURN) resolve(r);
      else (later ??= []).push({ resolve, r });
    }
    if (events && e < events.length) this.handOn(events, m.eventsAt!, e, m.ids.length, later);
    if (later) this.settleLater(later, 0);
  }

  /**
   * Hands on the events from `e` on that the worker produced before result `at` (now, or after
   * the results deferred before them); returns the index of the next event.
   */
  private handOn(events: WorkerEvent[], eventsAt: number[], e: number, at: number, later: Deferred[] | undefined): number {
    let end = e;
    while (end < events.length && eventsAt[end]! <= at) end++;
    const run = e === 0 && end === events.length ? events : events.slice(e, end);
    if (later) later.push({ events: run });
    else this.onEvents?.(run);
    return end;
  }

  /** The rest of a big batch from `from` on, SETTLED_PER_TURN results per turn (none once abandoned). */
  private settleLater(later: Deferred[], from: number): void {
    setImmediate(() => {
      if (this.abandoned) return;
      let results = 0;
      let i = from;
      for (; i < later.length && results < SETTLED_PER_TURN; i++) {
        const d = later[i]!;
        if ('events' in d) this.onEvents?.(d.events);
        else {
          d.resolve(d.r);
          results++;
        }
      }
      if (i < later.length) this.settleLater(later, i);
    });
  }
}
