// PackStore: a topic worker's writer and reader of pack files (docs/FORMAT.md "Pack files"), the
// shared files that hold small topics' first segments. Frames of every packed topic are appended,
// in arrival order, to the worker's one current pack, many frames per writev; the PackMap
// remembers where each topic's logical bytes went. Runs in a topic worker thread, async fs.
// Durability is the segment store's (segmentStore.ts), per pack instead of per topic:
// - a frame counts as written (onWritten, a run in the map) only once it is whole in its pack;
//   a write the disk fills part-way is finished from where it stopped, ENOSPC keeps the frames
//   (in order: nothing after them is written) and retries every 500 ms, any other error is
//   fatal for writes (onFatal, storage FAILED);
// - a new pack's name is durable (its directory fsynced) before any frame goes into it, and a
//   pack is fsynced before the next one is created, so a crash can tear only the newest pack
//   of each writer, and only after the last flush;
// - flush (the checkpoint's step) waits for queued writes, fsyncs the current pack, and fails
//   while any frame waits, so the WAL is never trimmed past a frame that lives only there.
// Packs are append-only: bytes in a pack never change once written.
import path from 'node:path';
import { CorruptionError } from '../core/corruption.js';
import { fsyncDir, isDiskFull, mkdirDurable, unwritten, type Fs, type FsFile } from './fs.js';
import { packsDir } from '../format/layout.js';
import { PackMap, type PackInfo } from './packMap.js';
import { PackReaders } from './packReaders.js';
import { DELAYED_DRAIN_BYTES } from './writeDelay.js';
import type { SpaceWaits } from './storageState.js';
import type { SectionPacks } from './snapshotSectionFormat.js';
import { InvariantError } from '../core/invariant.js';

/** How soon a pack write that hit a full disk is tried again. */
const PACK_RETRY_MS = 500;
/** Frames per writev (the kernel's IOV_MAX is 1024). */
const WRITEV_FRAMES_MAX = 1024;
/**
 * The pack being written is given up once nothing live is left in it and it holds at least
 * this much (a checkpoint then reports it dead and the next frame starts a new pack): without
 * it, a worker's current pack was never unlinked, however dead (a topic compacted out of it).
 */
export const RETIRE_DEAD_PACK_BYTES = 64 * 1024;

export interface PackStoreOptions {
  workerIndex: number;
  workers: number;
  /** A pack is sealed once the next frame would take it past this size (one frame always fits). */
  fileBytes: number;
  /** A fresh pack number (one sequence for the data dir, shared by the workers). */
  nextPackNo: () => number;
  /** How long frames may wait to be written (0 or absent: at once); as SegmentStore's. */
  writeDelayMs?: number;
  /** Counts this store while its frames wait for disk space (writes are refused meanwhile). */
  spaceWaits?: SpaceWaits;
}

interface PendingFrame {
  /** Arrival number: frames are written in this order. */
  no: number;
  topicId: number;
  /** Logical offset the actor placed the frame at: always the end of its packed segment. */
  offset: number;
  frame: Buffer;
  onWritten: (() => void) | undefined;
}

interface CurrentPack {
  info: PackInfo;
  fd: FsFile;
  /** End of the last frame written whole. */
  tail: number;
  /** Holds bytes not fsynced yet. */
  dirty: boolean;
  /** Bytes known fsynced: the tail when the last fsync began (sectionPacks). */
  synced: number;
  /** The pack's directory entry is durable (false between its creation and the dir fsync). */
  nameDurable: boolean;
}

export class PackStore {
  readonly map = new PackMap();
  readonly readers: PackReaders;
  private chain: Promise<void> = Promise.resolve();
  private pending: PendingFrame[] = [];
  /** Frames appended so far (the next frame's arrival number). */
  private appended = 0;
  private drainQueued = false;
  /** Bytes in `pending` (past DELAYED_DRAIN_BYTES they are written without waiting). */
  private pendingBytes = 0;
  /** A drain waits for the write delay (not on the chain yet). */
  private delayTimer: NodeJS.Timeout | undefined;
  private current: CurrentPack | undefined;
  private failed: Error | undefined;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;
  private dirMade = false;
  private readonly dir: string;

  constructor(
    private readonly fsx: Fs,
    dataDir: string,
    private readonly opts: PackStoreOptions,
    /** A write failed for another reason than space: writes must stop (storage FAILED). */
    private readonly onFatal: (err: Error) => void = () => undefined,
  ) {
    this.dir = packsDir(dataDir);
    this.readers = new PackReaders(fsx, (idx) => path.join(this.dir, this.map.pack(idx).name));
  }

  /** Queues a frame for the end of the topic's packed segment. */
  append(topicId: number, offset: number, frame: Buffer, onWritten?: () => void): void {
    this.pending.push({ no: this.appended++, topicId, offset, frame, onWritten });
    this.pendingBytes += frame.length;
    // Waiting for space, the retry writes it with the rest (see SegmentStore.append).
    if (this.drainQueued || this.retry) return;
    const delayMs = this.opts.writeDelayMs ?? 0;
    if (delayMs > 0 && this.pendingBytes < DELAYED_DRAIN_BYTES && !this.closed) {
      this.delayTimer ??= setTimeout(() => this.queueDrain(), delayMs);
      return;
    }
    this.queueDrain();
  }

  private queueDrain(): void {
    clearTimeout(this.delayTimer);
    this.delayTimer = undefined;
    this.drainQueued = true;
    this.enqueue(() => this.drain());
  }

  /** Puts a delayed drain on the chain now (before an operation that follows the writes). */
  private settle(): void {
    if (this.delayTimer) this.queueDrain();
  }

  /** True while frames of the topic wait to be written. */
  private waiting(topicId: number): boolean {
    return this.pending.some((p) => p.topicId === topicId);
  }

  /** Frames of the topic wait to be written. */
  hasPending(topicId: number): boolean {
    return this.waiting(topicId);
  }

  /** The topic has packed frames, written or queued. */
  holds(topicId: number): boolean {
    return this.map.has(topicId) || this.waiting(topicId);
  }

  private enqueue(op: () => Promise<void>): void {
    this.chain = this.chain.then(op).catch((err: Error) => {
      // Not data loss (the WAL still holds the frames), but no checkpoint may trim past them.
      if (!this.failed) this.onFatal(err);
      this.failed = err;
    });
  }

  /** Runs `op` after every queued operation; its failure goes to the caller only. */
  private onChain<T>(op: () => Promise<T>): Promise<T> {
    const p = this.chain.then(op);
    this.chain = p.then(
      () => undefined,
      () => undefined,
    );
    return p;
  }

  private async drain(): Promise<void> {
    this.drainQueued = false;
    try {
      while (this.pending.length > 0 && !this.failed) await this.writeSome();
      this.opts.spaceWaits?.set(this, false);
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      this.opts.spaceWaits?.set(this, true);
      this.retryLater();
    }
  }

  private retryLater(): void {
    if (this.retry || this.closed) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      if (this.drainQueued || this.pending.length === 0) return;
      this.drainQueued = true;
      this.enqueue(() => this.drain());
    }, PACK_RETRY_MS);
  }

  /**
   * Writes the longest prefix of the pending frames that fits the current pack with one writev.
   * Only frames that landed whole count; a torn one stays first in line and is written again,
   * whole, at the same place (the tail moves only past whole frames).
   */
  private async writeSome(): Promise<void> {
    const cur = await this.packFor(this.pending[0]!.frame.length);
    let end = cur.tail;
    let j = 0;
    while (j < this.pending.length && j < WRITEV_FRAMES_MAX && (j === 0 || end + this.pending[j]!.frame.length <= this.opts.fileBytes)) {
      end += this.pending[j]!.frame.length;
      j++;
    }
    const batch = this.pending.slice(0, j);
    const frames = batch.map((p) => p.frame);
    const size = end - cur.tail;
    let done = 0;
    try {
      while (done < size) {
        const n = await cur.fd.writev(done === 0 ? frames : unwritten(frames, done), cur.tail + done);
        if (!(n > 0)) throw new Error(`pack writev at ${cur.tail + done} wrote ${n} of ${size - done} bytes`);
        done += n;
        cur.dirty = true;
      }
    } finally {
      let k = 0;
      let at = cur.tail;
      for (; k < batch.length && at + batch[k]!.frame.length <= cur.tail + done; k++) {
        const w = batch[k]!;
        const len = w.frame.length;
        if (this.map.size(w.topicId) !== w.offset) {
          // eslint-disable-next-line no-unsafe-finally -- a frame placed at the wrong offset is a bug that outranks the write's own error
          throw new InvariantError(
            `pack: topic ${w.topicId.toString(16)} placed a frame at ${w.offset}, its packed segment ends at ${this.map.size(w.topicId)}`,
          );
        }
        this.map.add(w.topicId, cur.info.idx, at, len);
        at += len;
      }
      cur.tail = at;
      this.pending.splice(0, k);
      for (let i = 0; i < k; i++) this.pendingBytes -= batch[i]!.frame.length;
      for (let i = 0; i < k; i++) batch[i]!.onWritten?.();
    }
  }

  /** The pack the next frame goes to: the current one, or a new one once it would overflow. */
  private async packFor(frameLen: number): Promise<CurrentPack> {
    let cur = this.current;
    if (cur && cur.tail > 0 && cur.tail + frameLen > this.opts.fileBytes) {
      // Sealing: its frames durable before a later pack can hold frames that follow them.
      if (cur.dirty) await cur.fd.sync();
      cur.dirty = false;
      this.current = undefined;
      await cur.fd.close();
      cur = undefined;
    }
    if (!cur) {
      if (!this.dirMade) {
        await mkdirDurable(this.fsx, this.dir);
        this.dirMade = true;
      }
      const info = this.map.register({ no: this.opts.nextPackNo(), writer: this.opts.workerIndex, workers: this.opts.workers });
      const fd = await this.fsx.open(path.join(this.dir, info.name), 'wx');
      cur = this.current = { info, fd, tail: 0, dirty: false, synced: 0, nameDurable: false };
    }
    if (!cur.nameDurable) {
      // Before any frame depends on it (a flag, so a retry after a failure here still does it).
      await fsyncDir(this.fsx, this.dir);
      cur.nameDurable = true;
    }
    return cur;
  }

  /**
   * Makes the topic's packed frames durable: its first own segment may be created only then
   * (recovery takes packed frames, then own segments, as one run without a gap).
   */
  sealTopic(topicId: number): Promise<void> {
    this.settle();
    return this.onChain(async () => {
      if (this.failed) throw this.failed;
      if (this.waiting(topicId)) throw Object.assign(new Error('packed frames are waiting for disk space'), { code: 'ENOSPC' });
      const cur = this.current;
      if (cur?.dirty) await this.syncCurrent(cur);
    });
  }

  /** fsyncs the pack being written (on the chain: no write runs meanwhile). */
  private async syncCurrent(cur: CurrentPack): Promise<void> {
    const tail = cur.tail;
    await cur.fd.sync();
    cur.dirty = false;
    cur.synced = tail;
  }

  /**
   * Waits for every write queued before the call, then fsyncs the current pack (the checkpoint's
   * step). Frames that arrive meanwhile are not waited for (nor refused over): they come after
   * the checkpoint's mark.
   */
  async flush(): Promise<void> {
    this.settle();
    const before = this.appended;
    await this.onChain(async () => {
      const cur = this.current;
      if (cur?.dirty) await this.syncCurrent(cur);
      if (cur && !cur.nameDurable) {
        await fsyncDir(this.fsx, this.dir);
        cur.nameDurable = true;
      }
    });
    if (this.failed) throw this.failed;
    // Pending frames are in arrival order: one from before the call waits for space.
    if (this.pending.length > 0 && this.pending[0]!.no < before)
      throw Object.assign(new Error('pack writes are waiting for disk space'), { code: 'ENOSPC' });
  }

  /** Logical bytes [offset, offset + len) of a topic's packed segment (cold reads). */
  async read(topicId: number, offset: number, len: number): Promise<Buffer> {
    const pieces = this.map.pieces(topicId, offset, len);
    const out = Buffer.allocUnsafeSlow(len);
    let at = 0;
    for (const p of pieces) {
      await this.readers.read(p.idx, out, at, p.len, p.offset);
      at += p.len;
    }
    return out;
  }

  /**
   * Damage found at logical byte `offset` of a topic's packed segment, as a CorruptionError
   * naming the pack file and the byte in it (what `spool verify` names), the topic in the detail.
   */
  damageAt(topicId: number, what: string, offset: number, detail: string): CorruptionError {
    const [p] = offset < this.map.size(topicId) ? this.map.pieces(topicId, offset, 1) : [];
    if (!p) return new CorruptionError(`${what} packed segment`, detail, offset);
    return new CorruptionError(
      path.join(this.dir, this.map.pack(p.idx).name),
      `${detail} (${what}, byte ${offset} of its packed segment)`,
      p.offset,
    );
  }

  /** Forgets a topic's packed segment (after its queued writes; waiting frames are dropped). */
  release(topicId: number): void {
    // On the chain: a write in flight may still hold the topic's frames (and count them).
    this.enqueue(async () => {
      this.pending = this.pending.filter((p) => p.topicId !== topicId);
      this.pendingBytes = this.pending.reduce((n, p) => n + p.frame.length, 0);
      this.map.release(topicId);
    });
  }

  /**
   * What this worker's packs hold at a checkpoint's cut (called right after its flush): every
   * registered pack but the one being written is whole (fsynced before the next was made); the
   * one being written holds `tail` bytes, of which the flush fsynced the third number. Recovery
   * scans only what lies past the fsynced bytes, trusts the runs of the parts (taken later: they
   * may name bytes written since) only up to them, and never cuts below them (docs/FORMAT.md
   * "Snapshots").
   */
  sectionPacks(): SectionPacks {
    const cur = this.current;
    return {
      whole: this.map
        .all()
        .filter((p) => p.idx !== cur?.info.idx)
        .map((p) => p.name),
      tail: cur ? [cur.info.name, cur.tail, cur.synced] : null,
    };
  }

  /**
   * Names of packs that hold nothing live and are not being written (a checkpoint's report, after
   * its flush). The pack being written is given up first when it is dead, whole and durable, and
   * holds at least RETIRE_DEAD_PACK_BYTES: the next frame starts a new pack.
   */
  /**
   * A pack holds nothing live and is not the one being written (deadPacks would report it), or the
   * one being written is dead and big enough to give up: the next checkpoint has it to unlink.
   */
  get deadWaiting(): boolean {
    const cur = this.current;
    if (cur && cur.info.live === 0 && cur.tail >= RETIRE_DEAD_PACK_BYTES) return true;
    return this.map.dead(cur?.info.idx).length > 0;
  }

  deadPacks(): string[] {
    const cur = this.current;
    if (
      cur &&
      cur.info.live === 0 &&
      cur.tail >= RETIRE_DEAD_PACK_BYTES &&
      !cur.dirty &&
      cur.nameDurable &&
      this.pending.length === 0 &&
      !this.drainQueued
    ) {
      this.current = undefined;
      // On the chain: nothing else uses the descriptor meanwhile (a failed close loses nothing).
      this.enqueue(() => cur.fd.close().catch(() => undefined));
    }
    return this.map.dead(this.current?.info.idx).map((p) => p.name);
  }

  /** Packs the checkpoint unlinked: forgotten (their read descriptors closed). */
  async forget(names: readonly string[]): Promise<void> {
    for (const n of names) {
      const p = this.map.forget(n);
      if (p) await this.readers.drop(p.idx);
    }
  }

  /** Stops retrying frames that wait for space, for good; no I/O (the WAL still holds them). */
  stop(): void {
    this.closed = true;
    clearTimeout(this.retry);
    clearTimeout(this.delayTimer);
  }

  async close(): Promise<void> {
    this.stop();
    await this.flush().catch(() => undefined);
    await this.onChain(async () => {
      const cur = this.current;
      this.current = undefined;
      await cur?.fd.close();
    }).catch(() => undefined);
    await this.readers.closeAll();
  }
}
