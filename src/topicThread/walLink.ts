// WalLink: a topic worker's side of the WAL port (docs/ARCHITECTURE.md "The life of an append"). Frames queued during one
// event-loop turn leave as one transferred buffer (handed back once written, submitBuffers.ts); cumulative acks come back and are turned
// into per-actor `wal` inputs, and written frames go on to their segments. It also keeps the
// worker's WAL credit (bytes queued or submitted, not yet written), the FIFO of appends waiting for
// credit, and the per-frame timings of the performance block. Runs on the worker thread.
// Invariant: submissions are acked in order; a frame's segment write follows its WAL write.
import type { MessagePort } from 'node:worker_threads';
import type { AppendRequest, PerfFields } from '../protocol/messages/rpc.js';
import type { WalIn, WalOut } from '../protocol/messages/wal.js';
import { assertNever } from '../protocol/errors.js';
import { nowMs, roundMs } from '../core/stopwatch.js';
import type { SegmentPlacement } from '../format/layout.js';
import type { TopicActor } from '../actors/topic/topicActor.js';
import { MinHeap } from '../core/minHeap.js';
import { stageClock } from '../core/stageClock.js';
import { SubmitBuffers } from './submitBuffers.js';

/** Priority points a deferred append gains per ms of waiting (as the HTTP gate's default). */
const DEFER_AGING_PER_MS = 1;

interface Deferred {
  reqId: number;
  req: AppendRequest;
  at: number;
  key: number;
  no: number;
}

export interface QueuedFrame {
  actor: TopicActor;
  frameNo: number;
  buf: Buffer;
  durable: boolean;
  segment: SegmentPlacement | undefined;
  /** Nothing waits for it: it may wait for the next eager frame, at most LAZY_FLUSH_MS. */
  lazy?: boolean;
}

/** A queued frame as the link keeps it until it is durable: its timings and its actor's record. */
interface LinkFrame {
  /** Until written (the WAL and segment writes need its bytes); the record itself stays until durable. */
  frame: QueuedFrame | undefined;
  frameNo: number;
  owner: ActorFrames;
  submitAt: number;
  writtenAt: number;
  /** Stage clock only (µs): posted to the WAL thread, reported written. */
  postUs: number | undefined;
  writtenUs: number | undefined;
}

/**
 * One actor's frames not yet durable, in frame order (frame numbers grow per actor, and
 * submissions become durable in order, so its durable ones are always a prefix), and the
 * watermarks of the ack being handled.
 */
interface ActorFrames {
  actor: TopicActor;
  frames: LinkFrame[];
  /** Index of the first frame not yet durable. */
  first: number;
  ackWritten: number;
  ackDurable: number;
  /** In the current ack's list of actors to tell. */
  acked: boolean;
}

/**
 * Longest a lazy frame (a lease log or a `memory` append, nothing waits for either) is held for
 * the worker's next submission. A SIGKILL inside it loses the frame, which both allow (a lost
 * lease makes its job claimable again; a `memory` topic may lose recent records on a crash); a
 * claim followed by its ack within it costs the WAL thread one write, not two.
 */
export const LAZY_FLUSH_MS = 5;

/** Durable frames are dropped from an actor's array once this many have gathered at its front. */
const DURABLE_COMPACT_AT = 64;

/**
 * Durable frame records and submissions are kept for reuse, up to this many each. A `disk`
 * frame's record lives until the next fdatasync (up to the sync interval), long enough for
 * every young-generation collection to copy and promote it; reused, the records stay put in the
 * old generation instead of being made and promoted afresh for every frame.
 */
const SPARE_MAX = 4096;

/** What stands in an actor's array for a durable frame until the array is compacted. */
const DROPPED = { frame: undefined, frameNo: 0, owner: undefined } as unknown as LinkFrame;

interface Submission {
  seq: number;
  frames: LinkFrame[];
  written: boolean;
  bytes: number;
}

/** What the link needs from its host. */
export interface WalLinkHost {
  /** Frames of `actor` up to `written` are written, up to `durable` fsynced. */
  walAck(actor: TopicActor, written: number, durable: number): void;
  /** A frame the WAL wrote goes on to its segment. */
  writeSegment(place: SegmentPlacement, frame: Buffer): void;
  /** An append that waited for credit is handled again. */
  redeliver(reqId: number, req: AppendRequest): void;
  /** Recovery messages (replay chunks) are not the link's business. */
  onReplay(m: Extract<WalOut, { t: 'replay' | 'replayDone' }>): void;
  /** The WAL failed: nothing submitted and not yet acked ever will be. */
  walFailed(message: string): void;
}

export class WalLink {
  /**
   * Per actor with frames not yet durable, those frames with their submit and write times. A
   * Map, not a WeakMap: an entry lives only until its frames are durable, and WeakMap inserts
   * (with their GC work) were a visible cost of every topic creation.
   */
  private readonly actors = new Map<TopicActor, ActorFrames>();
  /** The actors an ack moved, reused from ack to ack. */
  private readonly acked: ActorFrames[] = [];
  private turnFrames: LinkFrame[] = [];
  /** Durable frame records and submissions (with an empty `frames`), for reuse. */
  private readonly spareFrames: LinkFrame[] = [];
  private readonly spareSubs: Submission[] = [];
  /** What submissions are built in: buffers the WAL thread handed back, or new ones. */
  readonly buffers = new SubmitBuffers();
  private flushScheduled = false;
  /** Some frame of the turn is not lazy: the turn is submitted when it ends. */
  private turnEager = false;
  /** Armed while only lazy frames are queued: submits them LAZY_FLUSH_MS later. */
  private lazyTimer: NodeJS.Timeout | undefined;
  private submitSeq = 0;
  private writtenSeq = 0;
  /** Submissions not yet durable, in order; the first `writtenCount` of them are written. */
  private readonly inflight: Submission[] = [];
  private writtenCount = 0;
  /** Set once the WAL thread reported a write or fsync failure. */
  failed: string | undefined;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly writtenWaiters: { seq: number; resolve: () => void; reject: (err: Error) => void }[] = [];
  inflightBytes = 0;
  /** Appends with disable_backpressure waiting for WAL credit, oldest first. */
  /**
   * Appends waiting for credit (disable_backpressure), served best first (docs/ARCHITECTURE.md "Admission"): effective
   * priority plus one point per ms waited (a static heap key, since all age alike), so a low
   * priority waits longer but is never starved.
   */
  private readonly deferred = new MinHeap<Deferred>((a, b) => a.key > b.key || (a.key === b.key && a.no < b.no));
  private deferredNo = 0;
  private readonly throttleWaits = new Map<number, number>();

  constructor(
    private readonly port: MessagePort,
    private readonly creditBytes: number,
    private readonly host: WalLinkHost,
    /** How long lazy frames alone wait for an eager one (tests set it to take the timer out of a race). */
    private readonly lazyFlushMs = LAZY_FLUSH_MS,
  ) {
    port.on('message', (m: WalOut) => this.onMessage(m));
  }

  creditExhausted(): boolean {
    return this.creditBytes > 0 && this.inflightBytes >= this.creditBytes;
  }

  defer(reqId: number, req: AppendRequest, priority: number): void {
    const at = nowMs();
    this.deferred.push({ reqId, req, at, key: priority - DEFER_AGING_PER_MS * at, no: this.deferredNo++ });
  }

  queueFrame(f: QueuedFrame): void {
    let owner = this.actors.get(f.actor);
    if (!owner) this.actors.set(f.actor, (owner = { actor: f.actor, frames: [], first: 0, ackWritten: 0, ackDurable: 0, acked: false }));
    const lf = this.spareFrames.pop() ?? {
      frame: f,
      frameNo: 0,
      owner,
      submitAt: 0,
      writtenAt: 0,
      postUs: undefined,
      writtenUs: undefined,
    };
    lf.frame = f;
    lf.frameNo = f.frameNo;
    lf.owner = owner;
    lf.submitAt = nowMs();
    lf.writtenAt = 0;
    lf.postUs = undefined;
    lf.writtenUs = undefined;
    owner.frames.push(lf);
    this.turnFrames.push(lf);
    // Credit counts a frame from the moment it is queued, so that the requests of one turn (they
    // arrive from main as one message) cannot together outrun it before the turn is submitted.
    this.inflightBytes += f.buf.length;
    if (!f.lazy) this.turnEager = true;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flushTurn());
    }
  }

  /**
   * Called first when the turn's frames leave for the WAL thread: the worker's request channel
   * sends the results already settled (a `memory` append's, a read's) ahead of the post that
   * wakes the WAL thread, instead of after it.
   */
  beforeSubmit: (() => void) | undefined;

  /**
   * One WAL submission per event-loop turn: all frames of the turn, concatenated. A turn that
   * queued only lazy frames keeps them (and arms one timer) unless `force`d; the next turn with
   * an eager frame, or the timer, submits them ahead of what follows.
   */
  flushTurn(force = false): void {
    this.flushScheduled = false;
    this.beforeSubmit?.();
    const frames = this.turnFrames;
    if (frames.length === 0) return;
    if (!this.turnEager && !force) {
      this.lazyTimer ??= setTimeout(() => {
        this.lazyTimer = undefined;
        this.flushTurn(true);
      }, this.lazyFlushMs);
      return;
    }
    if (this.lazyTimer !== undefined) {
      clearTimeout(this.lazyTimer);
      this.lazyTimer = undefined;
    }
    const sub = this.spareSubs.pop() ?? { seq: 0, frames: [], written: false, bytes: 0 };
    this.turnFrames = sub.frames; // empty
    sub.frames = frames;
    this.turnEager = false;
    let total = 0;
    let durable = false;
    for (const { frame } of frames) {
      total += frame!.buf.length;
      durable ||= frame!.durable;
    }
    const out = new Uint8Array(this.buffers.take(total), 0, total);
    let p = 0;
    for (const { frame } of frames) {
      out.set(frame!.buf, p);
      p += frame!.buf.length;
    }
    const seq = ++this.submitSeq;
    sub.seq = seq;
    sub.written = false;
    sub.bytes = total;
    this.inflight.push(sub);
    const msg: WalIn = { t: 'submit', seq, buf: out.buffer, bytes: total, durable, frames: frames.length, handBack: true };
    if (stageClock.on) this.stampFrames(frames, 'postUs'); // before the post, like every stamp
    this.port.postMessage(msg, [out.buffer]);
  }

  private onMessage(m: WalOut): void {
    switch (m.t) {
      case 'ack':
        if (m.spare) this.buffers.give(m.spare);
        return this.onAck(m.writtenThrough, m.durableThrough);
      case 'failed':
        return this.onFailed(m.message);
      case 'replay':
      case 'replayDone':
        return this.host.onReplay(m);
      default:
        assertNever(m);
    }
  }

  /**
   * A cumulative ack. Work is per newly written and newly durable submission only: `inflight`
   * holds every submission not yet durable (with `disk` topics, all those since the last
   * fdatasync: tens to hundreds), and its first `writtenCount` entries are written. Walking all
   * of them on every ack was the top self-time frame of the worker at one client.
   */
  private onAck(writtenThrough: number, durableThrough: number): void {
    // A durable submission is written (the WAL syncs only what it wrote).
    if (durableThrough > writtenThrough) writtenThrough = durableThrough;
    const now = nowMs();
    const inflight = this.inflight;
    let i = this.writtenCount;
    for (; i < inflight.length && inflight[i]!.seq <= writtenThrough; i++) {
      const s = inflight[i]!;
      for (const lf of s.frames) {
        lf.writtenAt = now;
        const f = lf.frame!;
        if (f.segment) this.host.writeSegment(f.segment, f.buf);
        lf.frame = undefined;
        this.noteAck(lf, false);
      }
      this.inflightBytes -= s.bytes;
      s.written = true;
    }
    if (stageClock.on) for (let k = this.writtenCount; k < i; k++) this.stampFrames(inflight[k]!.frames, 'writtenUs');
    this.writtenCount = i;
    let durable = 0;
    for (; durable < this.writtenCount && inflight[durable]!.seq <= durableThrough; durable++) {
      for (const lf of inflight[durable]!.frames) this.noteAck(lf, true);
    }
    if (writtenThrough > this.writtenSeq) this.writtenSeq = writtenThrough;
    for (const a of this.acked) {
      a.acked = false;
      this.host.walAck(a.actor, a.ackWritten, a.ackDurable);
    }
    this.acked.length = 0;
    this.releaseDeferred();
    if (durable > 0) {
      for (let k = 0; k < durable; k++) this.recycle(inflight[k]!);
      inflight.splice(0, durable);
      this.writtenCount -= durable;
    }
    for (let k = this.writtenWaiters.length - 1; k >= 0; k--) {
      if (this.writtenWaiters[k]!.seq <= this.writtenSeq) this.writtenWaiters.splice(k, 1)[0]!.resolve();
    }
    if (inflight.length === 0 && this.turnFrames.length === 0) {
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  /** Raises the watermarks an ack tells `lf`'s actor (frame numbers grow per actor: a later frame's ack covers the earlier ones). */
  private noteAck(lf: LinkFrame, durable: boolean): void {
    const a = lf.owner;
    if (!a.acked) {
      a.acked = true;
      a.ackWritten = 0;
      a.ackDurable = 0;
      this.acked.push(a);
    }
    const no = lf.frameNo;
    if (no > a.ackWritten) a.ackWritten = no;
    if (durable && no > a.ackDurable) a.ackDurable = no;
  }

  /** A durable submission: its frames leave their actors' arrays, and it and they are kept for reuse. */
  private recycle(sub: Submission): void {
    for (const lf of sub.frames) {
      this.dropDurable(lf.owner);
      if (this.spareFrames.length < SPARE_MAX) {
        lf.frame = undefined;
        lf.owner = undefined as unknown as ActorFrames;
        this.spareFrames.push(lf);
      }
    }
    sub.frames.length = 0;
    if (this.spareSubs.length < SPARE_MAX) this.spareSubs.push(sub);
  }

  /** The first not-durable frame of `a` became durable; an idle actor keeps no record (~190 bytes per topic ever written). */
  private dropDurable(a: ActorFrames): void {
    a.frames[a.first++] = DROPPED; // its bytes are not held until the array is compacted
    if (a.first === a.frames.length) {
      if (this.actors.get(a.actor) === a) this.actors.delete(a.actor);
    } else if (a.first >= DURABLE_COMPACT_AT && a.first * 2 >= a.frames.length) {
      a.frames.splice(0, a.first);
      a.first = 0;
    }
  }

  /** The kept timing of `actor`'s frame `frameNo` (not yet durable), found by halving. */
  private frameOf(actor: TopicActor, frameNo: number | undefined): LinkFrame | undefined {
    const a = frameNo === undefined ? undefined : this.actors.get(actor);
    if (!a) return undefined;
    let lo = a.first;
    let hi = a.frames.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const no = a.frames[mid]!.frameNo;
      if (no === frameNo) return a.frames[mid];
      if (no < frameNo!) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  /**
   * The WAL failed: no ack will come for what is in flight. Checkpoints waiting for a write
   * fail, a drain finishes, appends waiting for credit are handed back (their actors refuse
   * them now), and the host fails every reply that waited for a frame.
   */
  private onFailed(message: string): void {
    if (this.failed !== undefined) return;
    this.failed = message;
    this.actors.clear(); // nothing in flight will become durable now
    for (const w of this.writtenWaiters.splice(0)) w.reject(new Error(`the WAL failed: ${message}`));
    for (const w of this.idleWaiters.splice(0)) w();
    for (let d = this.deferred.pop(); d; d = this.deferred.pop()) this.host.redeliver(d.reqId, d.req);
    this.host.walFailed(message);
  }

  /** Re-sends deferred appends, best first, while WAL credit lasts. */
  private releaseDeferred(): void {
    while (this.deferred.size > 0 && !this.creditExhausted()) {
      const d = this.deferred.pop()!;
      this.throttleWaits.set(d.reqId, nowMs() - d.at);
      this.host.redeliver(d.reqId, d.req);
    }
  }

  /**
   * The performance fields of a reply: the time a deferred append waited for credit, and for a
   * reply tied to a frame, `wal_append_ms` (submission to the reply point for non-fsync classes,
   * to the write for fsync) and `fsync_ms` (time parked on the group fsync, 0 unless fsync).
   */
  perf(actor: TopicActor, reqId: number, frameNo: number | undefined, fsync: boolean): PerfFields | undefined {
    let out: PerfFields | undefined;
    const waited = this.throttleWaits.get(reqId);
    if (waited !== undefined) {
      this.throttleWaits.delete(reqId);
      out = { throttle_wait_ms: roundMs(waited) };
    }
    const t = this.frameOf(actor, frameNo);
    if (t) {
      const now = nowMs();
      if (!fsync) out = { ...out, wal_append_ms: roundMs(now - t.submitAt), fsync_ms: 0 };
      else {
        const written = t.writtenAt || now;
        out = { ...out, wal_append_ms: roundMs(written - t.submitAt), fsync_ms: roundMs(now - written) };
      }
    }
    return out;
  }

  private stampFrames(frames: LinkFrame[], key: 'postUs' | 'writtenUs'): void {
    const now = stageClock.now();
    for (const lf of frames) lf[key] = now;
  }

  /** The stage clock's WAL stamps of a reply's frame, while its timing is kept. */
  stamps(actor: TopicActor, frameNo: number | undefined): { walSubmit?: number; walWritten?: number } | undefined {
    const t = this.frameOf(actor, frameNo);
    return t && { walSubmit: t.postUs, walWritten: t.writtenUs };
  }

  /** Checkpoint: marks the stream and resolves once everything submitted before it is written. */
  async markAndWaitWritten(markId: number): Promise<void> {
    this.flushTurn(true);
    if (this.failed !== undefined) throw new Error(`the WAL failed: ${this.failed}`);
    const s = this.submitSeq;
    this.port.postMessage({ t: 'mark', id: markId } satisfies WalIn);
    if (this.writtenSeq < s) await new Promise<void>((resolve, reject) => this.writtenWaiters.push({ seq: s, resolve, reject }));
  }

  /** Resolves once every submitted frame is durable (shutdown). */
  whenIdle(): Promise<void> {
    this.flushTurn(true);
    if (this.inflight.length === 0 || this.failed !== undefined) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  replayAck(bytes: number, buf: ArrayBuffer): void {
    this.port.postMessage({ t: 'replayAck', bytes, buf } satisfies WalIn, [buf]);
  }
}
