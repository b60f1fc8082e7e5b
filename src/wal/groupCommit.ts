// GroupCommit: the WAL writer's policy (docs/ARCHITECTURE.md "The life of an append"), run by the WAL thread; the files and
// syscalls are WalWriter's. Submissions from every topic worker queue up while the thread writes
// or syncs, so batches grow with load without a timer window: one writev per flush, at most one
// fdatasync in flight, covering exactly the bytes written before it started. Acks are
// cumulative per submitter.
// Storage faults (docs/ARCHITECTURE.md): the writer keeps the next file pre-allocated as a space
// reserve; when it cannot (ENOSPC, EDQUOT) the storage state turns FULL, the actors refuse new
// writes, and the reserve is retried until space returns (state OK again). A rotation only ever
// moves into the reserve: without it, submissions that do not fit wait (FULL) instead of
// creating a file on a full disk. A write past the pre-allocated end (a batch larger than the
// room a file has) that the disk cannot take is FULL too: refused before a byte is written when
// the volume's free space is short, undone by the writer when the disk says ENOSPC part-way;
// its submissions stay queued, unwritten and unacknowledged, and are written at the same offset
// once space returns (a full disk first frees the WAL files the newest snapshot covers). Any
// other write or fsync error is FAILED: nothing more is written
// or synced, every submission not yet durable is failed ('failed' to each port, the last
// message a port gets), checkpoint marks are rejected, and writes stay refused until a
// restart. Never a crash, never an ack for bytes the disk did not take.
// On a full disk the WAL still takes what gives space back (docs/ARCHITECTURE.md "Deleting on a
// full disk"): it tells the actors the room it has without new space (walRoom.ts), and a file it
// cannot make (the run's first, or the next one when the current file has no room left) is made
// small instead, of its spare (walSpare.ts) when there is one.
// Invariants: a submission is reported written only after its bytes were written, durable only
// after an fdatasync that began after its write; nothing is posted to a port after 'failed'.
import { FSYNC_BUCKETS_US, GROUP_FRAMES_BUCKETS, LatencyBuckets, type BucketCounts } from '../core/latencyBuckets.js';
import type { MessagePort } from 'node:worker_threads';
import type { WalIn, WalOut, WalPosition } from '../protocol/messages/wal.js';
import { nowMs } from '../core/stopwatch.js';
import type { WalWriter } from './walWriter.js';
import type { WalSpace } from './walSpace.js';
import { isDiskFull } from '../storage/fs.js';
import { WAL_HEADER_BYTES } from '../format/constants.js';
import { StorageState, storageStateOf } from '../storage/storageState.js';
import { STORAGE_STATE_SLOT } from '../core/sharedCounters.js';
import { mib } from './walSizing.js';
import { publishWalRoom } from './walRoom.js';

/** How often a missing space reserve (or first file) is tried again while the disk is full. */
const RESERVE_RETRY_MS = 500;

const WRITEV_MAX_BYTES = 8 * 1024 * 1024;

/** Free space a write past the pre-allocated end leaves at least (file-system blocks, rounding). */
const OVERRUN_MARGIN_BYTES = 256 * 1024;

interface Item {
  port: number;
  msg: WalIn;
}

interface PortState {
  port: MessagePort;
  written: number;
  durable: number;
  /** Highest written seq that asked for durability and is not yet durable. */
  wantsDurable: number;
  lastAckedWritten: number;
  lastAckedDurable: number;
  /** Written submissions' buffers to hand back with the next ack (`handBack`). */
  spare: ArrayBuffer[];
}

export interface WalStats {
  frames: number;
  batches: number;
  fsyncs: number;
  bytesWritten: number;
  queueDepth: number;
  fileNo: number;
  offset: number;
  /** Fixed size, cumulative since start. */
  fsyncLatencyUs: BucketCounts;
  /** Frames per write, fixed size, cumulative. */
  groupFrames: BucketCounts;
}

export class GroupCommit {
  private readonly ports: PortState[];
  private queue: Item[] = [];
  private flushScheduled = false;
  private syncing = false;
  private syncTimer: NodeJS.Timeout | undefined;
  private unsyncedSince = 0;
  private unsyncedBytes = 0;
  private readonly marks = new Map<number, WalPosition[]>();
  private readonly markWaiters = new Map<number, { done: () => void; reject: (err: Error) => void }>();
  readonly stats: WalStats = {
    frames: 0,
    batches: 0,
    fsyncs: 0,
    bytesWritten: 0,
    queueDepth: 0,
    fileNo: 0,
    offset: 0,
    fsyncLatencyUs: { counts: [], sum: 0, count: 0 },
    groupFrames: { counts: [], sum: 0, count: 0 },
  };
  private readonly fsyncLatency = new LatencyBuckets(FSYNC_BUCKETS_US);
  /** Frames per write (the group of a group commit). */
  private readonly groupFrames = new LatencyBuckets(GROUP_FRAMES_BUCKETS);
  private failed: Error | undefined;
  /** Bytes written since the last checkpoint (drives the WAL-size checkpoint trigger). */
  bytesSinceCheckpoint = 0;

  /** File to open once space allows (a start on a full disk), and the frame that goes first in it. */
  private pendingOpen: { fileNo: number; first: Buffer | undefined } | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  /** A write the disk could not take waits for space (its submissions are at the queue's head). */
  private writeWaits = false;
  private writeRetryTimer: NodeJS.Timeout | undefined;
  /** Gives back what the newest snapshot covers whenever storage is FULL (spaceWatch). */
  private spaceWatchTimer: NodeJS.Timeout | undefined;
  /** stop() was called: no timer is armed again. */
  private timersStopped = false;
  /** Submissions were left queued by the last flush: they wait for a file or for space. */
  private blocked = false;
  /** How long the last fdatasync took (µs; none yet: unknown, so the first runs on the pool). */
  private lastSyncUs = Infinity;

  constructor(
    private readonly writer: WalWriter,
    ports: MessagePort[],
    private readonly syncIntervalMs: number,
    /** Shared with every thread; [STORAGE_STATE_SLOT] is the storage state, written here. */
    private readonly counters: Int32Array,
    private readonly log: (msg: string) => void,
    /** Frees what the newest checkpoint covers when a file cannot be made (none in some tests). */
    private readonly space?: WalSpace,
    /**
     * An urgent sync runs on this thread while the last one took less than this (µs); 0: every
     * sync runs on the libuv pool (see startSync).
     */
    private readonly inlineSyncBelowUs = 0,
  ) {
    this.ports = ports.map((port) => ({
      port,
      written: 0,
      durable: 0,
      wantsDurable: 0,
      lastAckedWritten: 0,
      lastAckedDurable: 0,
      spare: [],
    }));
  }

  get fileNo(): number {
    return this.writer.fileNo;
  }

  /**
   * Opens a fresh file (never appends after a recovered tail), with `first` (the BOOT frame)
   * as its first, durable frame, and starts taking submissions. On a full disk it starts
   * anyway (reads must be served): the state is FULL, and the file opens once space returns.
   */
  start(fileNo: number, first: Buffer): void {
    this.ports.forEach((p, i) => p.port.on('message', (msg: WalIn) => this.onMessage(i, msg)));
    this.pendingOpen = { fileNo, first };
    this.tryOpen();
    this.watchSpace();
  }

  /**
   * Whenever storage is FULL, whatever waits (this writer for a file, or topic workers' segment
   * writes for space), the WAL files the newest snapshot covers go, every RESERVE_RETRY_MS. The
   * writer's own waits free them at once; segment writes that fill the disk do not reach here
   * otherwise, and a checkpoint cannot complete while they wait, so nothing else would free them
   * until a restart (docs/ARCHITECTURE.md "Storage faults", "Giving space back").
   */
  private watchSpace(): void {
    if (!this.space || this.timersStopped) return;
    this.spaceWatchTimer = setInterval(() => {
      if (!this.failed && storageStateOf(this.counters) === StorageState.FULL) this.reclaimed();
    }, RESERVE_RETRY_MS);
    this.spaceWatchTimer.unref();
  }

  private tryOpen(): void {
    const p = this.pendingOpen;
    if (!p || this.failed) return;
    try {
      this.writer.open(p.fileNo);
    } catch (err) {
      if (!isDiskFull(err)) return this.fail(err as Error);
      if (this.reclaimed()) return this.tryOpen();
      this.setFull(true, `cannot create WAL file ${p.fileNo}: ${this.shortfall()} (${(err as Error).message})`);
      let inSpare: boolean;
      try {
        inSpare = this.intoSmallFile(() => this.writer.openSmall(p.fileNo));
      } catch (err2) {
        return this.fail(err2 as Error);
      }
      if (!inSpare) {
        this.retryLater(() => this.tryOpen());
        return;
      }
    }
    this.pendingOpen = undefined;
    if (p.first) {
      try {
        this.writeBuffers([p.first]);
      } catch (err) {
        return this.fail(err as Error);
      }
      this.startSync();
    }
    this.ensureReserve();
    this.scheduleFlush();
    this.publishRoom();
  }

  /**
   * On a full disk (the state is FULL already, so the actors send only frames that give space
   * back), a file the WAL cannot make is made small instead: `open` makes it, of the spare or in
   * what space is left. True if it was; false when even that meets a full disk; throws any
   * other error.
   */
  private intoSmallFile(open: () => 'spare' | 'created'): boolean {
    if (this.writer.spare.bytes === 0) return false; // a writer without a spare has no small files either
    let how: 'spare' | 'created';
    try {
      how = open();
    } catch (err) {
      if (isDiskFull(err)) return false;
      throw err;
    }
    this.log(
      `spool: disk full: WAL file ${this.writer.fileNo} is a small one (${Math.round(this.writer.spare.bytes / 1024)} KiB` +
        `${how === 'spare' ? ', made of the spare' : ''}); it takes topic and record deletes (they give space back) while other writes wait`,
    );
    return true;
  }

  /**
   * A rotation with no reserve while the WAL's own state is FULL goes into a small file when the
   * submission fits there and no preparation is under way (it may be making the spare): what
   * waits then is frames let through the full-disk gate, or accepted just before it closed.
   */
  private rotateIntoSmallFile(bytes: number): boolean {
    const w = this.writer;
    if (Atomics.load(this.counters, STORAGE_STATE_SLOT) !== StorageState.FULL || w.preparingNext) return false;
    if (bytes > w.spare.bytes - WAL_HEADER_BYTES || !this.intoSmallFile(() => w.rotateSmall())) return false;
    this.markAllDurable();
    this.ensureReserve();
    return true;
  }

  /** Makes the spare again once it is gone (used, or never made), whenever there is room for it. */
  private ensureSpare(): void {
    if (this.failed || this.writer.spare.available) return;
    this.writer.spare
      .make(() => this.failed !== undefined)
      .then(
        (made) => {
          if (!made || this.failed) return;
          this.publishRoom();
          this.scheduleFlush(); // a rotation may be waiting for it
        },
        (err: Error) => this.fail(err),
      );
  }

  /** Tells the actors the room the WAL has without new space (walRoom.ts). */
  private publishRoom(): void {
    const w = this.writer;
    let room = 0;
    if (!this.failed && w.isOpen && !this.blocked) {
      const next = w.reserveReady ? w.fileBytes : w.spare.available ? w.spare.bytes : WAL_HEADER_BYTES;
      room = w.room() + next - WAL_HEADER_BYTES;
    }
    publishWalRoom(this.counters, room);
  }

  /** Keeps the next file pre-allocated; without it the disk counts as full. */
  private ensureReserve(): void {
    if (this.failed || !this.writer.isOpen || this.writer.reserveReady) return;
    this.writer.prepareNext().then(
      (ready) => {
        if (this.failed) return;
        this.ensureSpare();
        this.publishRoom();
        if (ready) {
          if (!this.writeWaits) this.setFull(false, 'space is back: the WAL has its reserve again');
          this.scheduleFlush(); // a rotation may be waiting for this file
          return;
        }
        if (this.reclaimed()) return this.ensureReserve();
        this.setFull(true, `cannot pre-allocate WAL file ${this.writer.fileNo + 1}: ${this.shortfall()}`);
        this.retryLater(() => this.ensureReserve());
      },
      (err: Error) => this.fail(err),
    );
  }

  /** A file could not be made: frees what the newest checkpoint covers; true if anything went. */
  private reclaimed(): boolean {
    if (!this.space) return false;
    try {
      return this.space.reclaim(this.writer.fileNo) > 0;
    } catch (err) {
      this.log(`spool: could not remove WAL files the checkpoint covers: ${(err as Error).message}`);
      return false;
    }
  }

  private shortfall(): string {
    return this.space?.shortfall(this.writer.fileBytes) ?? `needs ${this.writer.fileBytes} bytes for a WAL file`;
  }

  private retryLater(fn: () => void): void {
    if (this.retryTimer || this.timersStopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      fn();
    }, RESERVE_RETRY_MS);
  }

  /** FULL and OK only replace each other; FAILED is final (until a restart). */
  private setFull(full: boolean, why: string): void {
    const from = full ? StorageState.OK : StorageState.FULL;
    const to = full ? StorageState.FULL : StorageState.OK;
    if (Atomics.compareExchange(this.counters, STORAGE_STATE_SLOT, from, to) === from) {
      this.log(
        full
          ? `spool: disk full: ${why}; writes are refused (429 disk_space) until space returns`
          : `spool: ${why}; writes are accepted again`,
      );
    }
  }

  private onMessage(port: number, msg: WalIn): void {
    if (msg.t === 'replayAck') return; // recovery flow control, handled by the scan
    if (this.failed) return; // nothing more is written; the host failed what it had in flight
    this.queue.push({ port, msg });
    this.stats.queueDepth = this.queue.length;
    // Let everything already waiting on the ports land first.
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.queue.length === 0) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.failed) return;
    // No file yet (a start on a full disk): submissions wait for it, marks before them do not.
    if (!this.writer.isOpen) return this.markBeforeOpen();
    try {
      // flushSome returns false when a rotation must wait for the next file to be prepared.
      while (this.queue.length > 0) if (!this.flushSome()) break;
    } catch (err) {
      this.fail(err as Error);
      return;
    }
    this.stats.queueDepth = this.queue.length; // submissions waiting for the next file stay queued
    this.blocked = this.queue.length > 0;
    this.publishRoom();
    this.postAcks();
    this.maybeSync();
  }

  private flushSome(): boolean {
    const bufs: Buffer[] = [];
    const batch: Extract<WalIn, { t: 'submit' }>[] = [];
    const batchPorts: PortState[] = [];
    const batchItems: Item[] = [];
    let size = 0;
    let taken = 0;
    let blocked = false;
    for (const it of this.queue) {
      if (it.msg.t === 'submit') {
        const b = Buffer.from(it.msg.buf, 0, it.msg.bytes ?? it.msg.buf.byteLength);
        if (bufs.length > 0 && size + b.length > WRITEV_MAX_BYTES) break;
        if (!this.writer.fits(size + b.length, bufs.length === 0)) {
          if (bufs.length > 0) break; // write what we have, rotate on the next round
          if (this.writer.reserveReady) this.rotate();
          else if (!this.rotateIntoSmallFile(b.length)) {
            this.waitForReserve();
            blocked = true;
            break;
          }
        }
        bufs.push(b);
        size += b.length;
        batch.push(it.msg);
        batchPorts.push(this.ports[it.port]!);
        batchItems.push(it);
      } else if (it.msg.t === 'mark') {
        // A mark's position is right after everything this port submitted before it.
        this.placeMark(it.msg.id, { fileNo: this.writer.fileNo, offset: this.writer.offset + size });
      }
      taken++;
    }
    this.queue.splice(0, taken);
    if (bufs.length > 0 && !this.writeOrWait(bufs, size)) {
      // Not written: the submissions go back to the head of the queue, in order, for the same
      // offset (the marks among them stay placed: their positions hold once these are written).
      this.queue.unshift(...batchItems);
      return false;
    }
    // Only now that the disk took the bytes do the submissions count as written (a write that
    // throws leaves them unwritten, so no later ack can cover them).
    batch.forEach((m, i) => {
      const ps = batchPorts[i]!;
      ps.written = m.seq;
      // Written: the buffer is no longer read here (writes are synchronous), so it can go back.
      if (m.handBack) ps.spare.push(m.buf);
      if (m.durable) ps.wantsDurable = m.seq;
      this.stats.batches++;
      this.stats.frames += m.frames;
    });
    if (batch.length > 0) this.groupFrames.observe(batch.reduce((n, m) => n + m.frames, 0));
    return !blocked;
  }

  /**
   * Writes a round's buffers, or leaves them unwritten when the disk cannot take them: a write
   * past the pre-allocated end needs that much free space (checked first, so nothing is written
   * on a volume known to be short), and an ENOSPC part-way is undone by the writer. Then the WAL
   * files the newest snapshot covers are freed and the write tried again at once; failing that,
   * the state is FULL and the write is retried every RESERVE_RETRY_MS. Any other error throws.
   */
  private writeOrWait(bufs: Buffer[], size: number): boolean {
    for (;;) {
      const why = this.writeRefused(bufs, size);
      if (why === undefined) break;
      if (this.reclaimed()) continue;
      this.writeWaits = true;
      this.setFull(true, `cannot write ${size} bytes of frames to WAL file ${this.writer.fileNo}: ${why}`);
      this.retryWriteLater();
      return false;
    }
    if (this.writeWaits) {
      this.writeWaits = false;
      if (this.writer.reserveReady) this.setFull(false, 'space is back: the WAL wrote the frames that waited');
    }
    return true;
  }

  /** Writes the buffers; the reason the disk did not take them, or undefined once written. */
  private writeRefused(bufs: Buffer[], size: number): string | undefined {
    const overrun = this.writer.overrunBytes(size);
    const free = overrun > 0 ? this.space?.freeBytes() : undefined;
    if (free !== undefined && free < overrun + OVERRUN_MARGIN_BYTES) return `${mib(overrun)} past the pre-allocated end, ${mib(free)} free`;
    try {
      this.writeBuffers(bufs);
      return undefined;
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      return `${(err as NodeJS.ErrnoException).code} part-way, undone`;
    }
  }

  private retryWriteLater(): void {
    if (this.writeRetryTimer || this.timersStopped) return;
    this.writeRetryTimer = setTimeout(() => {
      this.writeRetryTimer = undefined;
      this.scheduleFlush();
    }, RESERVE_RETRY_MS);
  }

  /**
   * Checkpoint marks at the head of the queue while the run's first file cannot be made yet: no
   * frame of this run is written, so they sit at the start of that file. Recovery's own
   * checkpoint can then complete on a disk too full for the file, and its snapshot lets the WAL
   * files it covers go (WalSpace), which is what makes room for the file.
   */
  private markBeforeOpen(): void {
    const p = this.pendingOpen;
    if (!p) return;
    let taken = 0;
    for (const it of this.queue) {
      if (it.msg.t !== 'mark') break;
      this.placeMark(it.msg.id, { fileNo: p.fileNo, offset: WAL_HEADER_BYTES });
      taken++;
    }
    this.queue.splice(0, taken);
    this.stats.queueDepth = this.queue.length;
  }

  /** Records where one submitter's mark `id` sits; the last one resolves waitMark. */
  private placeMark(id: number, at: WalPosition): void {
    let list = this.marks.get(id);
    if (!list) this.marks.set(id, (list = []));
    list.push(at);
    if (list.length === this.ports.length) this.markWaiters.get(id)?.done();
  }

  /**
   * A rotation needs the next file, and takes it only from the reserve: creating it on the spot
   * would, on a full disk, fail the WAL for what is only FULL. While the file is being prepared
   * the rotation waits for it (never racing for its name); on a full disk it waits for the
   * reserve retry, which flushes once the file is there.
   */
  private waitForReserve(): void {
    const preparing = this.writer.preparingNext;
    if (preparing) {
      // Its failure is ensureReserve's to handle (FULL or FAILED); here it only ends the wait.
      this.rotationWait ??= preparing
        .then(
          () => undefined,
          () => undefined,
        )
        .then(() => {
          this.rotationWait = undefined;
          this.scheduleFlush();
        });
    } else if (!this.retryTimer) {
      this.ensureReserve();
    }
  }

  private writeBuffers(bufs: Buffer[]): void {
    const size = this.writer.write(bufs);
    this.stats.bytesWritten += size;
    this.bytesSinceCheckpoint += size;
    if (this.unsyncedBytes === 0) this.unsyncedSince = nowMs();
    this.unsyncedBytes += size;
  }

  private rotationWait: Promise<unknown> | undefined;

  private rotate(): void {
    // The old file's last sync completes before the switch, so a valid frame in a later file
    // proves every earlier file was synced (the torn-tail vs corruption rule of recovery).
    // Called only with the reserve ready (flushSome), so the switch creates no file.
    this.writer.rotate();
    this.markAllDurable();
    this.ensureReserve();
  }

  private markAllDurable(): void {
    for (const p of this.ports) p.durable = p.written;
    this.unsyncedBytes = 0;
  }

  private maybeSync(): void {
    if (this.syncing || this.failed) return;
    const urgent = this.ports.some((p) => p.wantsDurable > p.durable);
    if (urgent) return this.startSync(this.lastSyncUs < this.inlineSyncBelowUs);
    if (this.unsyncedBytes > 0 && !this.syncTimer && !this.timersStopped) {
      const wait = Math.max(0, this.syncIntervalMs - (nowMs() - this.unsyncedSince));
      this.syncTimer = setTimeout(() => {
        this.syncTimer = undefined;
        if (this.unsyncedBytes > 0) this.startSync();
      }, wait);
    }
  }

  /**
   * One fdatasync of what is written so far. On the libuv pool, so frames go on being written
   * while it runs; or, `inline`, on this thread: a submitter waits for it, and the pool would
   * cost two more thread wake-ups (the pool's, then this thread's for the completion) on top of
   * the disk's own wait, while frames submitted meanwhile wait at most one short sync (inline
   * only while the last sync was short: docs/PERFORMANCE.md "An urgent fdatasync on the WAL
   * thread itself").
   */
  private startSync(inline = false): void {
    if (this.failed) return; // e.g. the interval timer: a failed WAL is never synced again
    this.syncing = true;
    const targets = this.ports.map((p) => p.written);
    const started = nowMs();
    this.unsyncedBytes = 0;
    if (inline) {
      try {
        this.writer.syncNow();
      } catch (err) {
        this.syncing = false;
        return this.fail(err as Error);
      }
      return this.synced(targets, started);
    }
    this.writer.syncAsync().then(
      () => this.synced(targets, started),
      (err: Error) => {
        this.syncing = false;
        this.fail(err);
      },
    );
  }

  private synced(targets: number[], started: number): void {
    this.syncing = false;
    // The WAL failed while this sync ran: 'failed' was the last word to every port, whose hosts
    // have failed what was in flight; nothing more is acked.
    if (this.failed) return;
    this.stats.fsyncs++;
    this.recordLatency(Math.round((nowMs() - started) * 1000));
    this.ports.forEach((p, i) => {
      if (targets[i]! > p.durable) p.durable = targets[i]!;
    });
    this.postAcks();
    this.maybeSync();
  }

  private recordLatency(us: number): void {
    this.lastSyncUs = us;
    this.fsyncLatency.observe(us);
  }

  private postAcks(): void {
    for (const p of this.ports) {
      if (p.written === p.lastAckedWritten && p.durable === p.lastAckedDurable) continue;
      p.lastAckedWritten = p.written;
      p.lastAckedDurable = p.durable;
      const m: Extract<WalOut, { t: 'ack' }> = { t: 'ack', writtenThrough: p.written, durableThrough: p.durable };
      if (p.spare.length === 0) {
        p.port.postMessage(m);
        continue;
      }
      m.spare = p.spare;
      p.spare = [];
      p.port.postMessage(m, m.spare);
    }
  }

  /**
   * A write or fsync failed: the page cache can no longer be trusted (a failed fdatasync is
   * never retried as if the data were safe). Nothing more is written; every submission not yet
   * durable is failed by its host, whose actors refuse writes from now on (storage FAILED).
   */
  private fail(err: Error): void {
    if (this.failed) return;
    this.failed = err;
    // Nothing more is written or synced: no reserve preparation goes on, no timed sync runs.
    this.writer.halt();
    clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    this.stop();
    Atomics.store(this.counters, STORAGE_STATE_SLOT, StorageState.FAILED);
    this.log(
      `spool: WAL ${(err as NodeJS.ErrnoException).code ?? 'error'} in file ${this.writer.fileNo}: ${err.message}; writes are refused until a restart (reads go on)`,
    );
    this.queue = [];
    publishWalRoom(this.counters, 0);
    // A checkpoint waiting for a mark would wait forever (the marks still queued are dropped).
    for (const w of this.markWaiters.values()) w.reject(this.markError());
    this.markWaiters.clear();
    this.marks.clear();
    for (const p of this.ports) p.port.postMessage({ t: 'failed', message: err.message } satisfies WalOut);
  }

  private markError(): Error {
    return new Error(`the WAL failed: ${this.failed!.message}`);
  }

  get storageFailed(): boolean {
    return this.failed !== undefined;
  }

  /**
   * Resolves with the log position of checkpoint mark `id` once every submitter's mark arrived;
   * rejects once the WAL failed (the checkpoint fails; storage is FAILED already).
   */
  waitMark(id: number): Promise<WalPosition> {
    return new Promise((resolve, reject) => {
      if (this.failed) return reject(this.markError());
      const done = () => {
        const list = this.marks.get(id)!;
        this.marks.delete(id);
        this.markWaiters.delete(id);
        let min = list[0]!;
        for (const p of list) if (p.fileNo < min.fileNo || (p.fileNo === min.fileNo && p.offset < min.offset)) min = p;
        resolve(min);
      };
      if ((this.marks.get(id)?.length ?? 0) === this.ports.length) done();
      else this.markWaiters.set(id, { done, reject });
    });
  }

  /**
   * Flushes and fsyncs everything queued (shutdown). On a full disk, submissions waiting for the
   * next file stay unwritten (none was acknowledged: an ack needs its frame written) and what is
   * written is fsynced.
   */
  async drain(): Promise<void> {
    this.flush();
    while (this.rotationWait && !this.failed && Atomics.load(this.counters, STORAGE_STATE_SLOT) !== StorageState.FULL) {
      await this.rotationWait;
      this.flush();
    }
    while (this.syncing) await new Promise((r) => setTimeout(r, 1));
    if (this.failed || !this.writer.isOpen) return;
    try {
      this.writer.syncNow();
    } catch (err) {
      return this.fail(err as Error);
    }
    this.markAllDurable();
    this.postAcks();
  }

  /**
   * Clears the reserve retries and the sync-interval timer for good; no I/O. Shutdown calls it
   * after the drain (checkpoint marks are still served); an in-process world abandoned after a
   * simulated crash calls it so nothing of the old writer runs on.
   */
  stop(): void {
    this.timersStopped = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.syncTimer);
    clearTimeout(this.writeRetryTimer);
    clearInterval(this.spaceWatchTimer);
    this.spaceWatchTimer = undefined;
    this.retryTimer = undefined;
    this.syncTimer = undefined;
    this.writeRetryTimer = undefined;
  }

  snapshotStats(): WalStats {
    return {
      ...this.stats,
      fileNo: this.writer.fileNo,
      offset: this.writer.offset,
      fsyncLatencyUs: this.fsyncLatency.snapshot(),
      groupFrames: this.groupFrames.snapshot(),
    };
  }
}
