// The topic-request hot path between main and a topic worker (hot-paths issue; docs/ARCHITECTURE.md
// "Thread crossings"): every request main issues to one worker during one event-loop turn leaves
// as ONE message, and every result the worker settles during one turn comes back as ONE message,
// together with the watch and `/work` events of that turn, in the worker's order (main thread:
// RequestClient; worker thread: serveRequests). Comlink stays for control calls (list, stats, checkpoints...); it costs one postMessage, one
// UUID and a proxy per call each way, which the profile of single-record appends showed as the
// top frames of both threads. Plain data only crosses; ids are per channel and never reused while
// pending.
// Bytes: the small append bodies of a batch cross in ONE transferred buffer (copied in back to
// back at the flush; the worker gets views), and so do the small replies of a result batch. A
// transferred ArrayBuffer per request or reply cost an allocation, a backing store and its sweep
// on both threads for a ~256-byte body. Big bodies (a whole buffer of their own) and reply pages
// are still transferred as they are, never copied. The hot requests and plain results cross on
// compact lanes of numbers and strings, not as cloned objects (hotLanes.ts). Claim and ack bodies
// cross unparsed like append bodies; the worker's end parses them (queueBodies.ts).
import type { MessagePort } from 'node:worker_threads';
import type {
  AppendRequest,
  ChannelRequest,
  OkResult,
  QueueBodyRequest,
  RequestBatch,
  ResultBatch,
  TopicRequest,
  TopicResult,
  WireRequest,
  WireResult,
} from './messages/rpc.js';
import type { WorkerEvent } from './messages/events.js';
import { fail } from './errors.js';
import { PAGE_MIN_BYTES, isPage, markReceivedPage, recyclePages } from '../core/pagePool.js';
import { stageClock } from '../core/stageClock.js';
import { decodeRequest, decodeResult, encodeRequest, encodeResult, COLD, type LaneCursor } from './hotLanes.js';
import { queueRequestOf } from './queueBodies.js';

/** Pages main keeps for the way back to one worker while no request goes there. */
const RETURNED_PAGES_MAX = 8;

/**
 * Bodies and replies up to this size are copied into their batch's shared buffer; bigger ones
 * that own their whole buffer cross as they are (transferred, no copy).
 */
export const SHARED_BYTES_MAX = 16 * 1024;

/**
 * Results answered in one turn of main's event loop. Each resolve runs its request's reply
 * (microtasks, before anything else): a wake of thousands of parked long-polls is one result
 * batch, and answering it at once held every other request and the watch pushes for the whole
 * fan-out (~30-50 µs of socket writes per waiter). The rest waits a turn per slice, with main's
 * I/O in between.
 */
const SETTLED_PER_TURN = 128;

/**
 * Request body bytes the worker steps in one turn of its event loop before it yields. A batch of
 * big appends (16 writers of 100 records: ~8 bodies of 25 KiB per message) was stepped whole
 * before the turn's frames left for the WAL thread, and the WAL's ack of them waited behind the
 * rest of the batch: the first request's reply waited for every step of the batch. Yielding
 * after 128 KiB sends a slice's frames to the WAL while the next slice is stepped, and takes the
 * WAL's acks (and sends replies) between slices. Smaller slices cost more CPU per record (more
 * turns, WAL writes and posts) than they gain (docs/PERFORMANCE.md "Batched appends in
 * slices"). Batches of small requests are one slice.
 */
export const SLICE_BODY_BYTES = 128 * 1024;

/** True when `b` is the whole of a transferable ArrayBuffer. */
function ownsBuffer(b: Uint8Array): boolean {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer;
}

/**
 * Requests whose bytes cross beside the object: appends and unparsed claim and ack bodies. For a
 * request as sent (ChannelRequest) and as received (WireRequest, `body` null until restored).
 */
function hasBody<R extends { op: string }>(r: R): r is Extract<R, { op: 'append' | 'claimBody' | 'ackBody' }> {
  return r.op === 'append' || r.op === 'claimBody' || r.op === 'ackBody';
}

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
  private nextId = 1;
  /** The resolver of each request still waiting for its result. */
  private readonly pending = new Map<number, (r: TopicResult) => void>();
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
    const id = this.nextId++;
    this.ids.push(id);
    this.reqs.push(req);
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
      const resolve = this.pending.get(id);
      if (!resolve) continue; // abandoned meanwhile
      this.pending.delete(id);
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

/** How the worker's end is told a request's result without a promise: its channel id and the result. */
export type Answer = (id: number, r: TopicResult) => void;
export type AnswerWith = (req: TopicRequest, id: number, answer: Answer) => void;

/** The worker's end of the channel, as serveRequests returns it. */
export interface RequestServer {
  /** Sends what the turn settled and produced so far at once (the WAL link calls it before its own post of the turn). */
  flush(): void;
  /** A watch or `/work` event for main: it leaves with the turn's results, after those settled before it. */
  event(ev: WorkerEvent): void;
}

/**
 * The worker's end: each request goes to `answerWith` in arrival order, which calls
 * `answer(id, result)` once for it, now or from a later step: no promise, no closures per request
 * (docs/PERFORMANCE.md "Allocations per request"); `answering` adapts a promise-returning handler.
 * Results settled in one turn go back together, with the watch and `/work` events of the turn
 * (`event`) in the same message, so a turn that answers an append and pushes its records wakes
 * main once. `answerWith` must not throw for a request's own errors (they are results); a throw
 * is a bug and becomes an `internal` error result so the caller never hangs.
 */
export function serveRequests(port: MessagePort, answerWith: AnswerWith): RequestServer {
  let ids: number[] = [];
  let results: TopicResult[] = [];
  let events: WorkerEvent[] = [];
  let eventsAt: number[] = [];
  let flushScheduled = false;

  const flush = (): void => {
    flushScheduled = false;
    if (ids.length === 0 && events.length === 0) return;
    if (stageClock.on) {
      const now = stageClock.now();
      for (const r of results) r.stamps = { ...r.stamps, replyPost: now };
    }
    const batch = encodeResults(ids, results);
    ids = [];
    results = [];
    if (events.length > 0) {
      addEvents(batch, events, eventsAt);
      events = [];
      eventsAt = [];
    }
    port.postMessage(batch.msg, batch.transfers);
  };

  const schedule = (): void => {
    if (flushScheduled) return;
    flushScheduled = true;
    // The check phase, after the poll phase that ran this turn's steps; the WAL link's post of
    // the same turn calls flush first (walLink.ts beforeSubmit).
    setImmediate(flush);
  };

  const settle: Answer = (id, r) => {
    ids.push(id);
    results.push(r);
    schedule();
  };

  const event = (ev: WorkerEvent): void => {
    events.push(ev);
    eventsAt.push(ids.length);
    schedule();
  };

  /** Scratch for the unknown field names of one claim or ack body. */
  const unknown: string[] = [];

  /** Request batches not yet stepped through, in arrival order; the first one is under way. */
  const queued: BatchCursor[] = [];
  let draining = false;

  /** Steps queued requests in order until SLICE_BODY_BYTES of bodies, then yields a turn. */
  const drain = (): void => {
    try {
      drainSlice();
    } catch (err) {
      // A bug (a step's own errors are results): drop the batch that threw, keep serving the rest.
      queued.shift();
      draining = queued.length > 0;
      if (draining) setImmediate(drain);
      throw err;
    }
  };

  const drainSlice = (): void => {
    let sliceBytes = 0;
    while (queued.length > 0) {
      const b = queued[0]!;
      const m = b.m;
      while (b.i < m.ids.length) {
        if (sliceBytes >= SLICE_BODY_BYTES) {
          setImmediate(drain); // after this turn's WAL post and result flush (both immediates queued first)
          return;
        }
        const w = decodeRequest(b.lanes) ?? m.reqs[b.cold++]!;
        if (hasBody(w)) {
          if (w.body === null) {
            const end = m.bodyEnds![b.k++]!;
            (w as { body: Uint8Array | null }).body = new Uint8Array(m.bodies!, b.sharedAt, end - b.sharedAt);
            b.sharedAt = end;
          }
          sliceBytes += (w as unknown as { body: Uint8Array }).body.byteLength; // restored above, or crossed whole
        }
        stepOne(w, m.ids[b.i++]!, b.wrecv);
      }
      queued.shift();
    }
    draining = false;
  };

  const stepOne = (w: WireRequest, id: number, wrecv: number): void => {
    if (w.op !== 'claimBody' && w.op !== 'ackBody') return runRequest(w as TopicRequest, id, settle, wrecv, answerWith);
    unknown.length = 0;
    const parsed = queueRequestOf(w as unknown as QueueBodyRequest, unknown); // its body set by drain
    const answer = unknown.length > 0 ? withUnknownFields(settle, [...unknown]) : settle;
    if ('ok' in parsed) answer(id, parsed);
    else runRequest(parsed, id, answer, wrecv, answerWith);
  };

  port.on('message', (m: RequestBatch) => {
    const wrecv = stageClock.on ? stageClock.now() : 0;
    if (m.recycled) recyclePages(m.recycled);
    queued.push({ m, i: 0, k: 0, sharedAt: 0, cold: 0, lanes: { nums: m.lanes, strs: m.laneStrs, n: 0, s: 0 }, wrecv });
    if (draining) return; // behind the batch under way, in order
    draining = true;
    drain();
  });
  return { flush, event };
}

/** Where the worker is in one request batch. */
interface BatchCursor {
  m: RequestBatch;
  /** The next request (index into `m.ids`). */
  i: number;
  /** The next shared body's end in `m.bodyEnds`, and where that body starts in `m.bodies`. */
  k: number;
  sharedAt: number;
  /** The next request that crossed as an object (index into `m.reqs`). */
  cold: number;
  lanes: LaneCursor;
  /** Stage clock: when the batch arrived. */
  wrecv: number;
}

/** True when `b` owns its whole ArrayBuffer (never a pool slice), so it can be transferred. */
function standalone(b: Uint8Array): boolean {
  return b.byteLength > 0 && ownsBuffer(b);
}

/**
 * A turn's events join its result batch. Watch batch buffers and job frames are allocated on
 * their own by the actors, so they move (transferred, not cloned).
 */
function addEvents(batch: { msg: ResultBatch; transfers: ArrayBuffer[] }, events: WorkerEvent[], eventsAt: number[]): void {
  batch.msg.events = events;
  batch.msg.eventsAt = eventsAt;
  for (const ev of events) {
    const buf = ev.k === 'batch' ? ev.buf : ev.k === 'jobs' ? ev.frames : undefined;
    if (buf && standalone(buf) && !batch.transfers.includes(buf.buffer as ArrayBuffer)) batch.transfers.push(buf.buffer as ArrayBuffer);
  }
}

/**
 * Hands one request to the worker's end; `answer` gets its result, or `internal` for a throw.
 * With the stage clock on, the result carries the worker's stamps: when its batch arrived and
 * when its step ran (its answer, or the return of a step that answers later).
 */
function runRequest(req: TopicRequest, id: number, answer: Answer, wrecv: number, answerWith: AnswerWith): void {
  const to = stageClock.on ? stampedAnswer(answer, wrecv) : answer;
  try {
    // A promise handler passed as is type-checks (a void return) but would never answer.
    if ((answerWith(req, id, to) as unknown) !== undefined)
      throw new Error('answerWith returned a value: wrap a promise handler in answering()');
  } catch (err) {
    to(id, fail('internal', (err as Error).message));
  }
  if (to !== answer) (to as StampedAnswer).stepped ??= stageClock.now();
}

type StampedAnswer = Answer & { stepped?: number };

/** `answer` with the worker's stage clock stamps added to the result (debug only). */
function stampedAnswer(answer: Answer, wrecv: number): StampedAnswer {
  const stamped: StampedAnswer = (id, r) => {
    stamped.stepped ??= stageClock.now();
    r.stamps = { ...r.stamps, wrecv, stepped: stamped.stepped };
    answer(id, r);
  };
  return stamped;
}

/** A promise-returning handler as serveRequests' `answerWith` (a rejection answers `internal`). */
export function answering(handle: (req: TopicRequest) => Promise<TopicResult>): AnswerWith {
  return (req, id, answer) =>
    void handle(req).then(
      (r) => answer(id, r),
      (err: Error) => answer(id, fail('internal', err.message)),
    );
}

/** `answer` with the ignored fields of the request's body added to its result (ok or error). */
function withUnknownFields(answer: Answer, unknownFields: string[]): Answer {
  return (id, r) => answer(id, { ...r, unknownFields });
}

/**
 * One turn's results as one message: small replies copied back to back into one shared buffer,
 * reply pages and big standalone replies transferred as they are, any other big reply copied
 * into a standalone buffer (never a cloned pool slab).
 */
function encodeResults(ids: number[], results: TopicResult[]): { msg: ResultBatch; transfers: ArrayBuffer[] } {
  let sharedBytes = 0;
  let sharedCount = 0;
  for (const r of results) {
    if (r.ok && sharesBytes(r.json)) {
      sharedBytes += r.json.byteLength;
      sharedCount++;
    }
  }
  const transfers: ArrayBuffer[] = [];
  const lanes: number[] = [];
  const wire: WireResult[] = [];
  const msg: ResultBatch = { ids, lanes, results: wire };
  if (stageClock.on) msg.stamps = results.map((r) => r.stamps);
  const shared = sharedCount > 0 ? new Uint8Array(sharedBytes) : undefined;
  const ends: number[] | undefined = shared && [];
  let at = 0;
  for (const r of results) {
    if (r.ok && sharesBytes(r.json)) {
      shared!.set(r.json, at);
      at += r.json.byteLength;
      ends!.push(at);
      if (encodeResult(r, lanes)) continue;
      lanes.push(COLD);
      wire.push({ ...r, json: null });
    } else {
      ends?.push(-1);
      lanes.push(COLD);
      wire.push(r.ok ? detach(r, transfers) : r);
    }
  }
  if (shared) {
    transfers.push(shared.buffer);
    msg.jsons = shared.buffer;
    msg.jsonEnds = ends;
  }
  return { msg, transfers };
}

/** Small replies (not reply pages, which travel whole with their slack) share the batch's buffer. */
function sharesBytes(json: Uint8Array): boolean {
  return json.byteLength <= SHARED_BYTES_MAX && !(json.byteOffset === 0 && isPage(json.buffer));
}

/**
 * A big reply's bytes cross as a transferred standalone buffer (a reply page with its slack),
 * never as a cloned pool slab.
 */
function detach(r: OkResult, transfers: ArrayBuffer[]): OkResult {
  const j = r.json;
  const whole = ownsBuffer(j) || (j.byteOffset === 0 && isPage(j.buffer));
  if (whole && !transfers.includes(j.buffer as ArrayBuffer)) {
    transfers.push(j.buffer as ArrayBuffer);
    return r;
  }
  const copy = new Uint8Array(j.byteLength);
  copy.set(j);
  transfers.push(copy.buffer);
  return { ...r, json: copy };
}
