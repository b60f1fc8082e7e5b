// serveRequests: a topic worker's end of the request channel (requestChannel.ts,
// docs/ARCHITECTURE.md "Thread crossings"). Each request batch from main is stepped in arrival
// order, SLICE_BODY_BYTES of bodies per turn; the results settled in a turn go back in one
// message with the turn's watch and `/work` events, small replies copied into one shared buffer.
// Runs on a topic worker thread.
import type { MessagePort } from 'node:worker_threads';
import type {
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
import { isPage, recyclePages } from '../core/pagePool.js';
import { stageClock } from '../core/stageClock.js';
import { decodeRequest, encodeResult, COLD, type LaneCursor } from './hotLanes.js';
import { queueRequestOf } from './queueBodies.js';
import { SHARED_BYTES_MAX, hasBody, ownsBuffer } from './requestChannel.js';

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
  return new WorkerEnd(port, answerWith);
}

/** serveRequests' state: the turn's results and events, and the request batches not yet stepped. */
class WorkerEnd implements RequestServer {
  private ids: number[] = [];
  private results: TopicResult[] = [];
  private events: WorkerEvent[] = [];
  private eventsAt: number[] = [];
  private flushScheduled = false;
  /** Scratch for the unknown field names of one claim or ack body. */
  private readonly unknown: string[] = [];
  /** Request batches not yet stepped through, in arrival order; the first one is under way. */
  private readonly queued: BatchCursor[] = [];
  private draining = false;

  constructor(
    private readonly port: MessagePort,
    private readonly answerWith: AnswerWith,
  ) {
    port.on('message', (m: RequestBatch) => this.onBatch(m));
  }

  /** Sends what the turn settled and produced so far, in one message. */
  readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.ids.length === 0 && this.events.length === 0) return;
    if (stageClock.on) {
      const now = stageClock.now();
      for (const r of this.results) r.stamps = { ...r.stamps, replyPost: now };
    }
    const batch = encodeResults(this.ids, this.results);
    this.ids = [];
    this.results = [];
    if (this.events.length > 0) {
      addEvents(batch, this.events, this.eventsAt);
      this.events = [];
      this.eventsAt = [];
    }
    this.port.postMessage(batch.msg, batch.transfers);
  };

  private schedule(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // The check phase, after the poll phase that ran this turn's steps; the WAL link's post of
    // the same turn calls flush first (walLink.ts beforeSubmit).
    setImmediate(this.flush);
  }

  /** The `answer` every request gets (one function for all of them). */
  private readonly settle: Answer = (id, r) => {
    this.ids.push(id);
    this.results.push(r);
    this.schedule();
  };

  /** A watch or `/work` event for main (an own property: the host keeps it as a plain function). */
  readonly event = (ev: WorkerEvent): void => {
    this.events.push(ev);
    this.eventsAt.push(this.ids.length);
    this.schedule();
  };

  private onBatch(m: RequestBatch): void {
    const wrecv = stageClock.on ? stageClock.now() : 0;
    if (m.recycled) recyclePages(m.recycled);
    this.queued.push({ m, i: 0, k: 0, sharedAt: 0, cold: 0, lanes: { nums: m.lanes, strs: m.laneStrs, n: 0, s: 0 }, wrecv });
    if (this.draining) return; // behind the batch under way, in order
    this.draining = true;
    this.drain();
  }

  /** Steps queued requests in order until SLICE_BODY_BYTES of bodies, then yields a turn. */
  private readonly drain = (): void => {
    try {
      this.drainSlice();
    } catch (err) {
      // A bug (a step's own errors are results): drop the batch that threw, keep serving the rest.
      this.queued.shift();
      this.draining = this.queued.length > 0;
      if (this.draining) setImmediate(this.drain);
      throw err;
    }
  };

  private drainSlice(): void {
    const queued = this.queued;
    let sliceBytes = 0;
    while (queued.length > 0) {
      const b = queued[0]!;
      const m = b.m;
      while (b.i < m.ids.length) {
        if (sliceBytes >= SLICE_BODY_BYTES) {
          setImmediate(this.drain); // after this turn's WAL post and result flush (both immediates queued first)
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
        this.stepOne(w, m.ids[b.i++]!, b.wrecv);
      }
      queued.shift();
    }
    this.draining = false;
  }

  private stepOne(w: WireRequest, id: number, wrecv: number): void {
    if (w.op !== 'claimBody' && w.op !== 'ackBody') return runRequest(w as TopicRequest, id, this.settle, wrecv, this.answerWith);
    const unknown = this.unknown;
    unknown.length = 0;
    const parsed = queueRequestOf(w as unknown as QueueBodyRequest, unknown); // its body set by drain
    const answer = unknown.length > 0 ? withUnknownFields(this.settle, [...unknown]) : this.settle;
    if ('ok' in parsed) answer(id, parsed);
    else runRequest(parsed, id, answer, wrecv, this.answerWith);
  }
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
