// One open SSE connection of a watch session (docs/API.md "Watch frames"; docs/ARCHITECTURE.md "Watch streams"). Per topic it is in
// *backlog* (pulling through the worker's read pipeline), *tailing* (taking pushes whose range
// starts exactly at its cursor) or *deleted* (terminal for the topic). Anything that is not a
// contiguous push — a gap, a stale batch, a strong session waiting for durability, a resume
// after a pause — is pulled, so tombstones, deletes and TTL are always judged by the actor.
// A stream whose socket backs up is paused: pushes are dropped and cursors stay put until the
// socket drains, so one slow client costs only itself. Pulls take turns within the stream's
// byte budget (./readBudget.ts): however many topics it follows, a stream holds at most its
// high water plus about one read. Main thread. The transport (flush pacing, heartbeats, pause
// on backlog, framing) is src/streams/sse/; this file decides what to send.
import type { ServerResponse } from 'node:http';
import type { TopicResult, WatchReadMeta } from '../../protocol/messages/rpc.js';
import type { WatchBatch } from '../../protocol/messages/events.js';
import type { WatchSession } from './session.js';
import { FRAME_END, frame, frameHead, type ErrorFrame } from '../sse/wire.js';
import type { FlushPacer } from '../sse/flushPacer.js';
import { SseConnection } from '../sse/sseConnection.js';
import type { PushFrames } from './projection.js';
import { ReadBudget } from './readBudget.js';

type Mode = 'backlog' | 'tailing' | 'deleted';

/** What a stream needs from the hub: reads, the newest known state of a topic, frames of a push. */
export interface StreamDeps {
  /** A pull from `fromSeq`; a `probe` reads no record (docs/WATCH.md "Slow consumers"). */
  read(topic: string, fromSeq: number, first: boolean, session: WatchSession, probe: boolean): Promise<TopicResult>;
  latest(topic: string): { instanceId: number; head: number; durableHead: number; deleted: boolean } | undefined;
  pushFrames(b: WatchBatch, batchNo: number, session: WatchSession): PushFrames;
  singleTopicFrames(f: PushFrames, topic: string): Buffer[];
  closed(stream: WatchStream): void;
  /** The process's one flush pacer, shared by every SSE stream. */
  pacer: FlushPacer;
  /** Milliseconds, for heartbeats only (never part of what a frame says). */
  now(): number;
  /** A read failed for a reason other than the topic being gone. */
  readFailed(topic: string, message: string): void;
}

export class StreamTopic {
  mode: Mode = 'backlog';
  /** A pull is in flight (pushes are ignored meanwhile; the pull's end re-checks the head). */
  reading = false;
  /** No read has completed since the stream opened (tombstones say from_seq_too_old). */
  first = true;
  /** The topic instance this stream follows (0 until the first read). */
  instanceId = 0;
  /** Last head this stream observed (topic-deleted reports it, docs/API.md "Watch frames"). */
  lastHead = 0;
  /** The cursor at this stream's last caught-up frame for the topic (-1: none yet). */
  caughtUpCursor = -1;

  constructor(
    readonly name: string,
    /** Index in the session's name/cursor arrays. */
    readonly idx: number,
  ) {}
}

/**
 * A topic's first read when a stream opens on several (WatchStream.openMany), a probe that reads
 * no record: where it read from, and what came back.
 */
interface FirstRead {
  pos: number;
  r: TopicResult;
}

const MiB = 1024 * 1024;
const READ_RETRY_MS = 1000;
/** Pulls of one stream in flight at most (docs/WATCH.md "Slow consumers"). */
const STREAM_READS_MAX = 4;

export class WatchStream {
  readonly topics: StreamTopic[];
  private readonly byName = new Map<string, StreamTopic>();
  private readonly conn: SseConnection;
  /** The stream's pulls in flight and waiting, within its byte budget. */
  private readonly reads: ReadBudget;
  /** Topics paced under pressure (docs/ARCHITECTURE.md "Admission"): no pushes, one pull per pacing tick. */
  private paced = new Set<string>();
  private isOpen = false;

  constructor(
    readonly session: WatchSession,
    res: ServerResponse,
    private readonly deps: StreamDeps,
  ) {
    this.topics = session.names.map((n, i) => new StreamTopic(n, i));
    for (const t of this.topics) this.byName.set(t.name, t);
    // Socket bytes a stream may hold before it is paused (docs/WATCH.md, slow consumers).
    const highWaterBytes = Math.max(MiB, 4 * session.opts.maxBatchBytes);
    this.conn = new SseConnection(res, deps.pacer, {
      highWaterBytes,
      heartbeatMs: session.opts.heartbeatMs,
      now: () => deps.now(),
      onPause: () => this.onPause(),
      onResume: () => this.onResume(),
      onFlushed: () => this.reads.startWaiting(),
      onClose: () => {
        this.reads.close();
        deps.closed(this);
      },
    });
    this.reads = new ReadBudget({
      highWaterBytes,
      readBytes: session.opts.maxBatchBytes,
      readsMax: STREAM_READS_MAX,
      heldBytes: () => (this.conn.paused ? Infinity : this.conn.queuedBytes),
    });
  }

  private get paused(): boolean {
    return this.conn.paused;
  }

  /** The head and `retry:` are queued and the first reads started (the hub registers a stream before that). */
  get opened(): boolean {
    return this.isOpen;
  }

  private get closed(): boolean {
    return this.conn.closed;
  }

  topic(name: string): StreamTopic | undefined {
    return this.byName.get(name);
  }

  /** Sends the head and `retry:`, then pulls every topic from the session's cursors. */
  open(): void {
    if (this.closed) return; // the client left while the stream was opening
    this.conn.open();
    this.isOpen = true;
    if (this.topics.length === 1) void this.pull(this.topics[0]!);
    else void this.openMany();
  }

  /**
   * Several topics: their first reads go out together, and the `from_seq_too_old` tombstones they
   * bring are sent before any other frame of the stream (docs/WATCH.md, the tombstone decision); then each
   * topic's pull goes on from its first read, or, after its tombstone, reads again from the gap's end.
   * The first reads are probes: records held back until every topic answered would be held
   * beyond the stream's budget (up to 256 reads at once), so records come by the pulls, in turn.
   */
  private async openMany(): Promise<void> {
    const firsts = await Promise.all(this.topics.map((t) => this.firstRead(t)));
    for (let i = 0; i < this.topics.length; i++) {
      const t = this.topics[i]!;
      const f = firsts[i];
      const w = f?.r.ok ? f.r.watch : undefined;
      if (!w?.tombstone || this.closed || this.paused || t.reading || t.mode === 'deleted') continue;
      if (this.session.cursor(t.idx) !== f!.pos || this.gone(t, w)) continue;
      t.instanceId = w.instanceId;
      t.first = false;
      t.lastHead = w.head;
      this.session.setCursor(t.idx, w.tombstone.gapTo);
      this.dataFrame('tombstone', w.tombstone.json);
      firsts[i] = undefined;
    }
    for (let i = 0; i < this.topics.length; i++) void this.pull(this.topics[i]!, firsts[i]);
  }

  /** A topic's first read; pushes to the topic are ignored meanwhile (it is `reading`). */
  private async firstRead(t: StreamTopic): Promise<FirstRead | undefined> {
    if (t.reading || t.mode === 'deleted') return undefined;
    t.reading = true;
    const pos = this.session.cursor(t.idx);
    try {
      return { pos, r: await this.readFrom(t, pos, true) };
    } finally {
      t.reading = false;
    }
  }

  /** One read of `t` from `pos`; a read that throws is an `internal` result, as the actor's errors are. */
  private async readFrom(t: StreamTopic, pos: number, probe = false): Promise<TopicResult> {
    try {
      return await this.deps.read(t.name, pos, t.first, this.session, probe);
    } catch (err) {
      return { ok: false, status: 500, code: 'internal', message: (err as Error).message };
    }
  }

  // ---- frames ------------------------------------------------------------------------------

  /** A data-bearing frame: its id is the whole cursor map as it is after this frame. */
  private dataFrame(event: string, payload: string | Buffer): void {
    const id = this.session.frameId();
    if (typeof payload === 'string') this.conn.write(Buffer.from(frameHead(event, id) + payload + FRAME_END, 'utf8'));
    else this.conn.write(frame(event, id, payload));
  }

  private caughtUp(t: StreamTopic): void {
    this.dataFrame('caught-up', `{"topic":${JSON.stringify(t.name)},"head_seq":${t.lastHead}}`);
  }

  private topicDeleted(t: StreamTopic): void {
    if (t.mode === 'deleted') return;
    t.mode = 'deleted';
    this.dataFrame('topic-deleted', `{"topic":${JSON.stringify(t.name)},"head_seq":${t.lastHead},"reason":"deleted"}`);
    // docs/WATCH.md "GET /v0/watch/:wid": the server ends the stream after the last topic-deleted.
    if (this.topics.every((x) => x.mode === 'deleted')) this.conn.end();
  }

  /** Terminal error frame, then close (shutdown, docs/API.md "Error frames"). */
  fail(e: ErrorFrame): void {
    this.conn.fail(e);
  }

  // ---- pressure pacing (docs/ARCHITECTURE.md "Admission") ---------------------------------------------------------------

  /**
   * Paces these topics (empty: none): they take no pushes and deliver at most one record frame
   * per `pullPaced` call, from their cursor, so they slow down and skip nothing. Topics that
   * stop being paced pull at once. Returns whether the set changed.
   */
  setPaced(names: readonly string[]): boolean {
    const next = new Set(names.filter((n) => this.byName.has(n)));
    const changed = next.size !== this.paced.size || [...next].some((n) => !this.paced.has(n));
    const freed = [...this.paced].filter((n) => !next.has(n));
    this.paced = next;
    for (const n of freed) void this.pull(this.byName.get(n)!);
    return changed;
  }

  pullPaced(): void {
    for (const n of this.paced) void this.pull(this.byName.get(n)!);
  }

  /** The advisory 429 error frame (docs/API.md "Error frames"): the stream stays open. */
  advise(e: ErrorFrame): void {
    this.conn.advise(e);
  }

  // ---- flow control ------------------------------------------------------------------------

  private onPause(): void {
    // Every followed topic drops back to backlog: it resumes by pulling, from its cursor.
    for (const t of this.topics) if (t.mode === 'tailing') t.mode = 'backlog';
  }

  private onResume(): void {
    // Reads that waited through the pause go first; the topics read last queue up behind them.
    this.reads.startWaiting();
    for (const t of this.topics) void this.pull(t);
  }

  // ---- pushes ------------------------------------------------------------------------------

  /** A batch became visible in a topic this stream follows. */
  onBatch(t: StreamTopic, b: WatchBatch, batchNo: number): void {
    if (this.closed || this.paused || t.mode !== 'tailing' || t.reading) return;
    if (this.paced.has(t.name)) {
      t.mode = 'backlog'; // the next pacing tick pulls it from the cursor
      return;
    }
    const cursor = this.session.cursor(t.idx);
    if (b.instanceId !== t.instanceId || b.stale || cursor < b.from || (cursor > b.from && cursor < b.to)) {
      void this.pull(t);
      return;
    }
    if (cursor >= b.to) return; // already delivered by a pull
    if (this.session.opts.strong && b.durableHead < b.to) return; // the durable event pulls it
    t.lastHead = b.head;
    const f = this.deps.pushFrames(b, batchNo, this.session);
    // A push whose records are all filtered out sends nothing and leaves the cursor: the next
    // push then does not start at the cursor and is pulled, as one frame from the cursor.
    if (f.payloads.length === 0) return;
    if (this.topics.length === 1) {
      // The common case shares whole frames: nothing is built per stream.
      for (const fr of this.deps.singleTopicFrames(f, t.name)) this.conn.write(fr);
      this.session.setCursor(t.idx, f.tos[f.tos.length - 1]!);
      return;
    }
    for (let i = 0; i < f.payloads.length; i++) {
      this.session.setCursor(t.idx, f.tos[i]!);
      this.dataFrame('record', f.payloads[i]!);
    }
  }

  /** The durable head moved: a strong stream tops up by pulling. */
  onDurable(t: StreamTopic, instanceId: number, durableHead: number): void {
    if (this.closed || this.paused || t.mode !== 'tailing' || t.reading || !this.session.opts.strong) return;
    if (instanceId === t.instanceId && durableHead > this.session.cursor(t.idx)) void this.pull(t);
  }

  onDeleted(t: StreamTopic, instanceId: number, head: number): void {
    if (this.closed || t.mode === 'deleted') return;
    // An unknown instance is settled by the read in flight (it checks the hub's latest state).
    if (t.instanceId === 0 || instanceId !== t.instanceId) return;
    t.lastHead = Math.max(t.lastHead, head);
    this.topicDeleted(t);
  }

  // ---- pulls -------------------------------------------------------------------------------

  /**
   * Reads a topic from its cursor until it is caught up (or the stream pauses or closes). The
   * session cursor moves only with a frame (record, tombstone, caught-up), so each record
   * frame's `from_seq` is exactly the topic's cursor in the previous frame id; reads that only
   * skip (node filter, deletes, TTL) advance a local position instead. Each read takes a turn
   * of the stream's budget and holds it until its frame is queued.
   */
  private async pull(t: StreamTopic, first?: FirstRead): Promise<void> {
    if (t.reading || t.mode === 'deleted') return;
    t.reading = true;
    let turn = false;
    try {
      let pos = this.session.cursor(t.idx);
      while (!this.closed && !this.paused) {
        const before = this.session.cursor(t.idx);
        let r: TopicResult;
        if (first !== undefined && first.pos === pos) {
          r = first.r; // openMany's probe from here
        } else {
          // The last read's frame is queued: its turn ends, and this read waits behind the others.
          if (turn) this.reads.done();
          turn = false;
          turn = await this.reads.take();
          if (!turn || this.closed || this.paused) return;
          r = await this.readFrom(t, pos);
        }
        first = undefined;
        // The topic may have been deleted by a push while the read was in flight.
        if (this.closed || (t.mode as Mode) === 'deleted') return;
        if (!r.ok) {
          if (r.code === 'topic_not_found') return this.topicDeleted(t);
          this.deps.readFailed(t.name, r.message);
          setTimeout(() => void this.pull(t), READ_RETRY_MS).unref();
          return;
        }
        if (this.paused) return;
        // Another stream of the session moved the cursor meanwhile: read again from there.
        if (this.session.cursor(t.idx) !== before) {
          pos = this.session.cursor(t.idx);
          continue;
        }
        const w = r.watch!;
        if (this.gone(t, w)) return this.topicDeleted(t);
        t.instanceId = w.instanceId;
        t.first = false;
        t.lastHead = w.head;
        if (w.tombstone) {
          this.session.setCursor(t.idx, w.tombstone.gapTo);
          this.dataFrame('tombstone', w.tombstone.json);
        }
        if (w.count > 0) {
          this.session.setCursor(t.idx, w.next);
          this.dataFrame('record', Buffer.from(r.json.buffer, r.json.byteOffset, r.json.byteLength));
        }
        pos = w.next;
        if (!this.caughtUpAt(t, w)) {
          if (this.paced.has(t.name) && w.count > 0) return; // one frame per pacing tick
          continue;
        }
        if (t.mode === 'backlog') {
          t.mode = 'tailing';
          // A resume that found nothing new since the last caught-up says nothing new.
          if (pos !== t.caughtUpCursor) {
            this.session.setCursor(t.idx, pos);
            t.caughtUpCursor = pos;
            this.caughtUp(t);
          }
        }
        return;
      }
    } finally {
      t.reading = false;
      if (turn) this.reads.done();
    }
  }

  /** The instance a read saw is gone: the topic was deleted (and maybe recreated) since. */
  private gone(t: StreamTopic, w: WatchReadMeta): boolean {
    if (!w.exists) return true;
    if (t.instanceId !== 0 && w.instanceId !== t.instanceId) return true;
    const l = this.deps.latest(t.name);
    return l !== undefined && (l.instanceId > w.instanceId || (l.instanceId === w.instanceId && l.deleted));
  }

  /** Drained: the read reached the deliverable head, and no push announced anything newer. */
  private caughtUpAt(t: StreamTopic, w: WatchReadMeta): boolean {
    if (w.next < w.deliverableHead) return false;
    const l = this.deps.latest(t.name);
    if (l === undefined || l.instanceId !== w.instanceId) return true;
    return w.next >= (this.session.opts.strong ? l.durableHead : l.head);
  }
}
