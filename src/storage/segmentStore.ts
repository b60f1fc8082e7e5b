// SegmentStore: the topic worker's writer of segment files (docs/FORMAT.md "Segment files"). Frames are written at
// the offset their actor placed them (so the actor can find them again without asking), after
// the WAL reported them written, with async fs on libuv's pool. Runs in a topic worker thread.
// A write that fails for lack of space is kept and retried (the WAL holds the frame meanwhile,
// and its texts stay in memory), and so is the rest of a write the disk filled part-way through
// (a short count); any other failure is fatal for writes (storage FAILED).
// Invariants: operations on one topic run in order (a promise chain per topic); a frame counts
// as written only once it is whole in its segment; flushAll (the checkpoint's step, called once
// every frame before the checkpoint's WAL mark is queued here) fails while any frame queued before
// the call is not, so the WAL is never trimmed past a frame that lives only there; a segment is
// synced and its name durable before the next segment of its topic is created (so the files
// that survive a crash are a run without a gap).
// Open files are bounded (`maxOpenFiles`, least recently written closed first): a topic keeps no
// descriptor while idle, so the count of topics is not limited by `ulimit -n`. A file closed
// with unsynced writes stays dirty and is reopened to be fsynced (Linux reports a writeback
// error to a descriptor opened after it, as long as no one has seen it yet).
// Packed placements (a small topic's first segment, docs/FORMAT.md "Pack files") go to the
// worker's PackStore instead; a topic's packed frames are made durable before its first own
// segment file is created.
// What is durable (docs/FORMAT.md "Snapshots", `own`): per topic, the bytes of its newest own file
// known fsynced (`synced`): the end of the whole frames written when a sync began, set when it
// succeeds (flushAll, a roll-over's seal), or, for a file no write of this boot has touched, what
// recovery or a wake found (noteLoaded). Never a size of writes still in flight: a checkpoint
// records it, and recovery refuses damage below it rather than cut it as a torn tail.
// Compacted segments (docs/ARCHITECTURE.md "Compaction"): a sealed segment's compacted copy is
// renamed over it (`swapCompacted`) only while no cold read of that segment is in flight, and its
// relocation (original offsets → the copy's) is switched in the same turn as the rename
// completes; reads that arrive meanwhile wait for the swap (the bookkeeping is SegmentGates,
// segmentGates.ts). Reads therefore always map offsets with the relocation of the file they
// open. A topic's packed first segment can be compacted into an own file the same way
// (`seg-<its first seq>.log`): from the swap on, reads the actor still addresses to the packed
// segment go to that file, and its pack runs are released.
import path from 'node:path';
import type { Relocation } from './compactFrames.js';
import type { PackStore } from './packStore.js';
import { SegmentGates } from './segmentGates.js';
import { errnoOf, fsyncDir, isDiskFull, newDirParents, unwritten, type Fs, type FsFile } from './fs.js';

/** How soon a segment write that hit a full disk is tried again. */
const SEGMENT_RETRY_MS = 500;
import type { SegmentPlacement } from '../format/layout.js';
import { compactTempName, deletedTopicDir, segmentFileName, topicDir } from '../format/layout.js';
import { DELAYED_DRAIN_BYTES } from './writeDelay.js';
import type { SpaceWaits } from './storageState.js';
import { lanes } from '../core/lanes.js';
import { invariant } from '../core/invariant.js';

interface PendingWrite {
  place: SegmentPlacement;
  frame: Buffer;
  onWritten: (() => void) | undefined;
  /** The topic's count of frames appended before this one (pending frames stay in this order). */
  no: number;
}

interface TopicFiles {
  id: number;
  chain: Promise<void>;
  /** Frames waiting for the topic's next write; consecutive ones go out in one writev. */
  pending: PendingWrite[];
  /** Frames appended so far (numbers them, so flushAll can tell old frames from new ones). */
  appended: number;
  /** Frames wholly written so far (all of them once it equals `appended`). */
  written: number;
  drainQueued: boolean;
  /** The segment frames go to (-1: none written since the start). */
  segFirstSeq: number;
  /** Open on segFirstSeq, or closed to bound open files (then reopened on the next write). */
  fd: FsFile | undefined;
  /** segFirstSeq holds writes not fsynced yet (whether or not fd is open). */
  dirty: boolean;
  dirCreated: boolean;
  /** False from sealing a segment until its name is durable (the next one waits for that). */
  sealedNameDurable: boolean;
  /** A retry after a full disk is scheduled. */
  retry: NodeJS.Timeout | undefined;
  /** Bytes in `pending` (a topic past DELAYED_DRAIN_BYTES is written without waiting). */
  pendingBytes: number;
  /** The topic's packed frames are durable (checked before its first own segment is created). */
  packSealed: boolean;
  /** The topic went to sleep: the entry goes once nothing of it is left to write or sync. */
  released: boolean;
  /** End of the whole frames in segFirstSeq's file (written, or there when it was loaded). */
  end: number;
  /** [first seq, bytes] of a file of the topic known fsynced up to bytes (durableOwn). */
  synced: readonly [number, number] | undefined;
}

/** Topics flushAll syncs at a time (each may reopen its file: a bound on descriptors). */
export const FLUSH_LANES = 64;

/** Segment files a worker keeps open for writing, by default. */
export const DEFAULT_MAX_OPEN_SEGMENTS = 1024;

export class SegmentStore {
  private readonly topics = new Map<number, TopicFiles>();
  /**
   * Topics with no entry whose newest own file is durable whole, as recovery loaded it or a wake
   * read it back: [first seq, bytes] (durableOwn). An entry made later starts from it.
   */
  private readonly loaded = new Map<number, readonly [number, number]>();
  /** Topics with an open fd, least recently written first (a Map keeps insertion order). */
  private readonly openFiles = new Map<number, TopicFiles>();
  /** Directories holding a directory created since the last flushAll. */
  private readonly newDirParents = new Set<string>();
  private failed: Error | undefined;
  /** Closing: frames waiting for space are not retried any more (the WAL still holds them). */
  private closed = false;
  /** Topics whose drain waits for the write delay (not on their chain yet). */
  private readonly delayed = new Set<TopicFiles>();
  private delayTimer: NodeJS.Timeout | undefined;
  /** Sealed segments: cold reads in flight, swaps, compactions and relocations. */
  readonly sealed = new SegmentGates();

  constructor(
    private readonly fsx: Fs,
    private readonly dataDir: string,
    /** A write failed for another reason than space: writes must stop (storage FAILED). */
    private readonly onFatal: (err: Error) => void = () => undefined,
    private readonly maxOpenFiles = DEFAULT_MAX_OPEN_SEGMENTS,
    /** Where packed placements go (none: every placement must be an own file). */
    readonly packs?: PackStore,
    /**
     * How long a topic's frames may wait to be written (0: at once). Segment writes are not on
     * any ack path (the WAL holds the frame, its texts stay in memory until written), and one
     * writev per window instead of one per frame saves the worker a libuv round trip per append
     * under light, latency-bound load (docs/PERFORMANCE.md).
     */
    private readonly writeDelayMs = 0,
    /** Counts the topics whose frames wait for disk space (writes are refused meanwhile). */
    private readonly spaceWaits?: SpaceWaits,
  ) {}

  /** Topics the store keeps an entry for (tests: a released topic's entry goes). */
  get topicCount(): number {
    return this.topics.size;
  }

  /** Open fds right now (for tests and metrics). */
  get openCount(): number {
    let n = 0;
    for (const t of this.topics.values()) if (t.fd) n++;
    return n;
  }

  /**
   * Every frame of the topic's segment that starts at `firstSeq` is written whole: a write has
   * moved on to a later segment (a topic's frames are written in order, a segment's before the
   * next one is opened; for its packed first segment, the pack's frames are fsynced before that).
   */
  wroteAfter(topicId: number, firstSeq: number): boolean {
    return (this.topics.get(topicId)?.segFirstSeq ?? -1) > firstSeq;
  }

  /** Every frame appended for the topic's own segment files is wholly written (a sleeping topic's must be). */
  allWritten(topicId: number): boolean {
    const t = this.topics.get(topicId);
    return t === undefined || t.written === t.appended;
  }

  /**
   * The topic went to sleep (every frame of it written, dormant.ts): its descriptor closes, and
   * once nothing is left to sync (now, or after the next flushAll) the store forgets it, as after
   * a restart. A later append starts afresh: the directory exists, the active file is reopened.
   */
  release(topicId: number): void {
    this.loaded.delete(topicId); // its row keeps the file's size (dormant.ts)
    const t = this.topics.get(topicId);
    if (!t) return;
    t.released = true;
    this.enqueue(t, async () => {
      if (!t.released) return; // appended to since
      await this.closeFile(t);
      this.forgetIfIdle(t);
    });
  }

  /**
   * The topic's newest own segment file as far as it is known fsynced: [its first seq, bytes]
   * (bytes 0: the file being written holds nothing fsynced yet), or undefined when the store
   * knows no file of it. What a checkpoint records (docs/FORMAT.md "Snapshots", `own`): after its
   * flushAll, at least every frame before its mark. It may name the file before a roll whose new
   * file holds nothing fsynced yet (the older one is then sealed, and whole).
   */
  durableOwn(topicId: number): readonly [number, number] | undefined {
    const t = this.topics.get(topicId);
    if (!t) return this.loaded.get(topicId);
    return t.synced ?? (t.segFirstSeq > 0 ? [t.segFirstSeq, 0] : undefined);
  }

  /**
   * Recovery loaded the topic's newest own segment file (`bytes` of whole frames), or a wake read
   * it back, before any write of this boot: `durable` of them are known fsynced (what the
   * snapshot recorded; all of them for a sleeping topic's file, synced before its entry went).
   * Bytes past that came from the page cache of a process that died: they are fsynced by the
   * next flushAll, so that a checkpoint can record them as durable.
   */
  noteLoaded(topicId: number, firstSeq: number, bytes: number, durable: number): void {
    if (this.topics.has(topicId)) return;
    if (bytes <= durable) {
      this.loaded.set(topicId, [firstSeq, bytes]);
      return;
    }
    const t = this.files(topicId);
    t.segFirstSeq = firstSeq;
    t.end = bytes;
    t.synced = durable > 0 ? [firstSeq, durable] : undefined;
    t.dirty = true;
    t.dirCreated = true;
    t.packSealed = true; // its packed frames were durable before this file was made
  }

  /** Forgets a released topic with nothing pending, unsynced or retried (on its chain). */
  private forgetIfIdle(t: TopicFiles): void {
    if (!t.released || t.dirty || t.pending.length > 0 || t.written !== t.appended || t.retry || t.fd || this.delayed.has(t)) return;
    if (this.topics.get(t.id) === t) this.topics.delete(t.id);
  }

  private segPath(t: TopicFiles, firstSeq = t.segFirstSeq): string {
    return path.join(topicDir(this.dataDir, t.id), segmentFileName(firstSeq));
  }

  /** Marks `t`'s fd as just used; past the bound, the least recently used one is closed. */
  private touchOpen(t: TopicFiles): void {
    this.openFiles.delete(t.id);
    this.openFiles.set(t.id, t);
    while (this.openFiles.size > this.maxOpenFiles) {
      const [id, lru] = this.openFiles.entries().next().value as [number, TopicFiles];
      this.openFiles.delete(id);
      // After the topic's queued operations; skipped if a write reopened or used it meanwhile.
      this.enqueue(lru, async () => {
        if (!this.openFiles.has(lru.id)) await this.closeFile(lru);
      });
    }
  }

  /**
   * fsyncs the file writes went to, through its open fd or a fresh one; then every whole frame
   * written to it before is durable (on the topic's chain: no write runs meanwhile).
   */
  private async syncFile(t: TopicFiles): Promise<void> {
    const synced = [t.segFirstSeq, t.end] as const;
    if (t.fd) await t.fd.sync();
    else {
      const fh = await this.fsx.open(this.segPath(t), 'r');
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
    }
    if (synced[1] > 0) t.synced = synced;
  }

  private files(topicId: number): TopicFiles {
    let t = this.topics.get(topicId);
    if (!t) {
      t = {
        id: topicId,
        chain: Promise.resolve(),
        pending: [],
        appended: 0,
        written: 0,
        drainQueued: false,
        pendingBytes: 0,
        segFirstSeq: -1,
        fd: undefined,
        dirty: false,
        dirCreated: false,
        sealedNameDurable: true,
        retry: undefined,
        packSealed: false,
        released: false,
        end: 0,
        synced: this.loaded.get(topicId),
      };
      this.loaded.delete(topicId);
      this.topics.set(topicId, t);
    }
    return t;
  }

  private enqueue(t: TopicFiles, op: () => Promise<void>): void {
    t.chain = t.chain.then(op).catch((err: Error) => {
      // A failed segment write is not data loss (the WAL still holds the frame) but the
      // checkpoint must not trim the WAL past it; remember the failure and refuse checkpoints.
      if (!this.failed) this.onFatal(err);
      this.failed = err;
    });
  }

  /** Runs `op` after the topic's queued operations; its failure goes to the caller only. */
  private onChain<T>(t: TopicFiles, op: () => Promise<T>): Promise<T> {
    const p = t.chain.then(op);
    t.chain = p.then(
      () => undefined,
      () => undefined,
    );
    return p;
  }

  append(place: SegmentPlacement, frame: Buffer, onWritten?: () => void): void {
    if (place.packed) return this.packStore().append(place.topicId, place.offset, frame, onWritten);
    const t = this.files(place.topicId);
    t.released = false;
    t.pending.push({ place, frame, onWritten, no: t.appended++ });
    t.pendingBytes += frame.length;
    // Waiting for space, the retry writes it with the rest (a write per new frame, each failing
    // again, made a recovery on a full disk quadratic in the frames replayed).
    if (t.drainQueued || t.retry) return;
    if (this.writeDelayMs > 0 && t.pendingBytes < DELAYED_DRAIN_BYTES && !this.closed) {
      this.delayed.add(t);
      this.delayTimer ??= setTimeout(() => this.drainDelayed(), this.writeDelayMs);
      return;
    }
    this.queueDrain(t);
  }

  private queueDrain(t: TopicFiles): void {
    this.delayed.delete(t);
    t.drainQueued = true;
    this.enqueue(t, () => this.drain(t));
  }

  private drainDelayed(): void {
    this.delayTimer = undefined;
    for (const t of this.delayed) this.queueDrain(t);
  }

  /** Puts a delayed drain of the topic on its chain now (before an operation that follows its writes). */
  private settle(t: TopicFiles | undefined): void {
    if (t && this.delayed.has(t)) this.queueDrain(t);
  }

  /** Writes every pending frame of a topic: one writev per run of contiguous frames. */
  private async drain(t: TopicFiles): Promise<void> {
    const batch = t.pending;
    t.pending = [];
    t.pendingBytes = 0;
    t.drainQueued = false;
    const progress = { written: 0 };
    try {
      await this.writeRuns(t, batch, progress);
      this.spaceWaits?.set(t, false);
    } catch (err) {
      // What was not written goes back in front of whatever queued meanwhile.
      t.pending = batch.slice(progress.written).concat(t.pending);
      for (const w of t.pending) t.pendingBytes += w.frame.length;
      if (!isDiskFull(err)) throw err;
      this.spaceWaits?.set(t, true);
      this.retryLater(t);
    }
  }

  private retryLater(t: TopicFiles): void {
    if (t.retry || this.closed) return;
    t.retry = setTimeout(() => {
      t.retry = undefined;
      if (t.drainQueued || t.pending.length === 0) return;
      t.drainQueued = true;
      this.enqueue(t, () => this.drain(t));
    }, SEGMENT_RETRY_MS);
  }

  /**
   * Writes the batch, one writev per run of contiguous frames; `progress` counts the frames
   * written whole. A writev that runs out of space part-way returns a short count (Linux reports
   * ENOSPC only when nothing fits): the rest of the run is written from there, and when that
   * fails only the frames that landed whole count as written; the torn one is written again,
   * whole, by the retry.
   */
  private async writeRuns(t: TopicFiles, batch: PendingWrite[], progress: { written: number }): Promise<void> {
    let i = 0;
    while (i < batch.length) {
      const first = batch[i]!.place;
      let end = first.offset + batch[i]!.frame.length;
      let j = i + 1;
      while (j < batch.length && batch[j]!.place.segFirstSeq === first.segFirstSeq && batch[j]!.place.offset === end) {
        end += batch[j]!.frame.length;
        j++;
      }
      const fd = await this.openSegment(t, first);
      const frames = batch.slice(i, j).map((w) => w.frame);
      const size = end - first.offset;
      let done = 0;
      try {
        while (done < size) {
          const n = await fd.writev(done === 0 ? frames : unwritten(frames, done), first.offset + done);
          if (!(n > 0)) throw new Error(`segment writev at ${first.offset + done} wrote ${n} of ${size - done} bytes`);
          done += n;
          t.dirty = true;
        }
      } finally {
        // Only frames wholly on disk are written: a torn one must never count (flushAll would
        // let the checkpoint trim the WAL that still holds it, and recovery cuts the segment there).
        let k = i;
        for (let at = first.offset; k < j && at + batch[k]!.frame.length <= first.offset + done; k++) {
          at += batch[k]!.frame.length;
          t.end = at;
          t.written++;
          batch[k]!.onWritten?.();
        }
        progress.written = k;
      }
      i = j;
    }
  }

  private async openSegment(t: TopicFiles, place: SegmentPlacement): Promise<FsFile> {
    if (t.segFirstSeq === place.segFirstSeq && t.fd) {
      this.touchOpen(t);
      return t.fd;
    }
    const dir = topicDir(this.dataDir, place.topicId);
    if (t.segFirstSeq !== -1 && t.segFirstSeq !== place.segFirstSeq) {
      // Sealing the previous segment: its data durable first.
      if (t.fd || t.dirty) await this.syncFile(t);
      t.dirty = false;
      // Forget the old fd before anything can fail: when opening the next segment meets a full
      // disk, the retry (and flushAll) must not sync a closed fd (EBADF would count as fatal).
      const old = t.fd;
      t.fd = undefined;
      this.openFiles.delete(t.id);
      t.sealedNameDurable = false;
      await old?.close();
    }
    if (!t.sealedNameDurable) {
      // The sealed segment's name is durable before the next segment's name can be: recovery
      // takes a topic's segment files as one run and replays only the appends after its end, so
      // a later segment that survives a crash without an earlier one would hide the WAL's copy
      // of everything in between. (A flag, so that a retry after a failure here still does it.)
      await fsyncDir(this.fsx, dir);
      t.sealedNameDurable = true;
    }
    if (!t.packSealed) {
      // Recovery reads a topic's packed frames, then its own segments, as one run: the packed
      // ones must not be lost in a crash that keeps this new file. A frame past offset 0 goes to
      // a file that exists already (this entry is new since a restart or a sleep): sealed then.
      if (place.offset === 0 && this.packs?.holds(t.id)) await this.packs.sealTopic(t.id);
      t.packSealed = true;
    }
    if (!t.dirCreated) {
      const first = await this.fsx.mkdir(dir);
      // New directory entries become durable with the next flushAll, like the files in them.
      if (first !== undefined) for (const parent of newDirParents(first, dir)) this.newDirParents.add(parent);
      t.dirCreated = true;
    }
    t.fd = await this.fsx.open(this.segPath(t, place.segFirstSeq), 'r+c');
    // Whole frames lie before the first write of a file: it is new, or loaded whole (recovery).
    if (t.segFirstSeq !== place.segFirstSeq) t.end = place.offset;
    t.segFirstSeq = place.segFirstSeq;
    t.dirty = true;
    this.touchOpen(t);
    return t.fd;
  }

  private packStore(): PackStore {
    invariant(this.packs, 'a packed placement, but this store has no pack store');
    return this.packs;
  }

  /**
   * Waits for every write queued before the call, then fsyncs dirty files and their directories.
   * Fails while a frame queued before the call is still unwritten (it waits for space); frames
   * that arrive meanwhile are the next checkpoint's (under steady appends some always do). At
   * most FLUSH_LANES topics are synced at a time: a file closed while dirty is reopened for its
   * fsync, and tens of thousands of them at once ran out of descriptors (EMFILE, many topics).
   */
  async flushAll(): Promise<void> {
    for (const t of this.delayed) this.queueDrain(t);
    const before = new Map<number, number>();
    for (const [id, t] of this.topics) before.set(id, t.appended);
    const topicDirs: string[] = [];
    const packs = this.packs?.flush();
    packs?.catch(() => undefined); // awaited below
    await lanes(FLUSH_LANES, [...this.topics.entries()], async ([id, t]) => {
      // On the topic's chain, so that no write, rotation or close of its fd runs meanwhile.
      const synced = await this.onChain(t, async () => {
        if (!t.dirty || t.segFirstSeq === -1) return false;
        await this.syncFile(t);
        t.dirty = false;
        this.forgetIfIdle(t);
        return true;
      });
      if (synced) topicDirs.push(topicDir(this.dataDir, id));
    });
    // Parents first (topics/ before topics/<id>/): a directory is durable before what it holds.
    // The topic directories then go FLUSH_LANES at a time (one at a time, 20k of them were most
    // of a 10 s final checkpoint).
    const parents = [...this.newDirParents];
    for (const d of parents) await fsyncDir(this.fsx, d);
    const inParents = new Set(parents);
    await lanes(
      FLUSH_LANES,
      topicDirs.filter((d) => !inParents.has(d)),
      (d) => fsyncDir(this.fsx, d),
    );
    for (const d of parents) this.newDirParents.delete(d);
    await packs;
    if (this.failed) throw this.failed;
    for (const t of this.topics.values()) {
      if (t.pending.length > 0 && t.pending[0]!.no < (before.get(t.id) ?? 0))
        throw Object.assign(new Error('segment writes are waiting for disk space'), { code: 'ENOSPC' });
    }
  }

  /** Unlinks a segment whose records are all gone (after the queued writes of its topic). */
  async unlinkSegment(topicId: number, firstSeq: number, packed = false): Promise<void> {
    if (packed && !this.sealed.isUnpacked(topicId)) {
      this.sealed.markGone(topicId, firstSeq);
      return this.packs?.release(topicId);
    }
    const t = this.topics.get(topicId);
    this.settle(t);
    if (t) await t.chain;
    if (t && t.segFirstSeq === firstSeq) {
      // The last segment written, but the topic's actor sealed it since (a reclaim never names
      // its active segment): a dead active segment sealed by compaction, with no frame in the
      // next one yet. Closed here, as a roll would; the next write opens the next segment.
      const old = t.fd;
      t.fd = undefined;
      this.openFiles.delete(t.id);
      t.dirty = false;
      t.segFirstSeq = -1;
      await old?.close();
    }
    if (t?.synced?.[0] === firstSeq) t.synced = undefined;
    if (this.loaded.get(topicId)?.[0] === firstSeq) this.loaded.delete(topicId);
    await this.sealed.exclusive(topicId, firstSeq, async (gate) => {
      gate.gone = true;
      this.sealed.setRelocation(topicId, firstSeq, undefined);
      await this.fsx.rm(path.join(topicDir(this.dataDir, topicId), segmentFileName(firstSeq)));
    });
  }

  /** Path of the copy a compaction writes for the segment. */
  compactTempPath(topicId: number, firstSeq: number): string {
    return path.join(topicDir(this.dataDir, topicId), compactTempName(firstSeq));
  }

  /**
   * Swaps a sealed segment for its compacted copy (already written whole and fsynced at
   * compactTempPath), or unlinks it when `relocation` is undefined (nothing of it lives): once no
   * read of it is in flight, the rename (or unlink), the relocation switch in the same turn, then
   * the directory fsync. `packed`: the topic's packed first segment, whose copy becomes its own
   * file `seg-<firstSeq>.log` and whose pack runs are released (its packs are unlinked once
   * nothing else lives in them, at a later checkpoint). Returns false, removing the copy, when the
   * segment went meanwhile (or, packed, when nothing of it lives: reclaim by prefix takes it).
   */
  async swapCompacted(topicId: number, firstSeq: number, relocation: Relocation | undefined, packed = false): Promise<boolean> {
    const temp = this.compactTempPath(topicId, firstSeq);
    const swapped = await this.sealed.exclusive(topicId, firstSeq, async (g) => {
      if (g.gone || (packed && !relocation)) return false;
      const seg = path.join(topicDir(this.dataDir, topicId), segmentFileName(firstSeq));
      if (relocation) await this.fsx.rename(temp, seg);
      else await this.fsx.rm(seg);
      this.sealed.setRelocation(topicId, firstSeq, relocation);
      if (!relocation) g.gone = true;
      if (packed) {
        // Reads of the packed segment go to the file from now on; the runs go once written out.
        this.sealed.noteUnpacked(topicId, firstSeq);
        this.packs?.release(topicId);
      }
      return true;
    });
    if (!swapped || !relocation) await this.fsx.rm(temp);
    // The rename (or unlink) durable: a crash after this never finds the old file again.
    if (swapped) await fsyncDir(this.fsx, topicDir(this.dataDir, topicId));
    return swapped;
  }

  /** Forgets a deleted topic instance and removes its directory in the background. */
  dropTopic(topicId: number): void {
    this.packs?.release(topicId);
    this.sealed.dropTopic(topicId);
    const t = this.topics.get(topicId);
    this.settle(t);
    this.topics.delete(topicId);
    this.loaded.delete(topicId);
    this.openFiles.delete(topicId);
    if (t?.retry) clearTimeout(t.retry);
    if (t) this.spaceWaits?.set(t, false); // its frames are not written any more
    const dir = topicDir(this.dataDir, topicId);
    const drop = async () => {
      if (t) await this.closeFile(t);
      // Renamed away whole first (durably), then removed: a crash part-way never leaves the
      // topic's directory with some of its files gone, which recovery would take for lost files
      // of a live topic (docs/FORMAT.md "Snapshots", `files`). A leftover is not a topic's
      // directory by its name: the next start removes it (orphans.ts).
      const gone = deletedTopicDir(this.dataDir, topicId);
      try {
        await this.fsx.rename(dir, gone);
      } catch (err) {
        if (errnoOf(err) === 'ENOENT') return; // it never had own files
        throw err;
      }
      await fsyncDir(this.fsx, path.dirname(dir));
      await this.fsx.rm(gone);
    };
    (t ? t.chain.then(drop) : drop()).catch(() => undefined);
  }

  /** Reads [offset, offset+len) of a segment (cold reads), after queued writes of the topic. */
  async readRange(topicId: number, segFirstSeq: number, offset: number, len: number, packed = false): Promise<Buffer> {
    // A packed first segment that no compaction touches: straight from the packs.
    if (packed && !this.sealed.isUnpacked(topicId) && !this.sealed.isGated(topicId, segFirstSeq))
      return this.packStore().read(topicId, offset, len);
    const t = this.topics.get(topicId);
    this.settle(t);
    if (t && !packed) await t.chain;
    return this.sealed.reading(topicId, segFirstSeq, async () => {
      // Still in the packs (a compaction of it may be under way: its swap waits for this read).
      if (packed && !this.sealed.isUnpacked(topicId)) return this.packStore().read(topicId, offset, len);
      // Mapped and opened with no swap possible in between (it waits for this read to end).
      const reloc = this.sealed.relocationOf(topicId, segFirstSeq);
      const at = reloc ? reloc.map(offset, len) : { offset, len };
      if (!at) return Buffer.alloc(0); // nothing of that range is kept: every record there is dead
      const fh = await this.fsx.open(path.join(topicDir(this.dataDir, topicId), segmentFileName(segFirstSeq)), 'r');
      try {
        const buf = Buffer.allocUnsafeSlow(at.len);
        const bytesRead = await fh.read(buf, 0, at.len, at.offset);
        if (bytesRead !== at.len) throw new Error(`short segment read ${bytesRead}/${at.len}`);
        return buf;
      } finally {
        await fh.close();
      }
    });
  }

  /** Stops retrying frames that wait for space, for good; no I/O (the WAL still holds them). */
  stop(): void {
    this.closed = true;
    for (const t of this.topics.values()) clearTimeout(t.retry);
    clearTimeout(this.delayTimer);
    this.packs?.stop();
  }

  async close(): Promise<void> {
    this.stop();
    await this.flushAll().catch(() => undefined);
    for (const t of this.topics.values()) await this.onChain(t, () => this.closeFile(t)).catch(() => undefined);
    await this.packs?.close();
  }

  /** Closes the topic's fd, if open (on its chain: nothing else uses the fd meanwhile). */
  private async closeFile(t: TopicFiles): Promise<void> {
    this.openFiles.delete(t.id);
    const fd = t.fd;
    t.fd = undefined;
    await fd?.close();
  }
}
