// Segment compaction on a topic worker (docs/ARCHITECTURE.md "Compaction"): which sealed own
// segment files to rewrite, when, and the order of the steps that keep it crash-safe.
//   1. after a checkpoint commits, `plan` looks at the awake topics that hold dead records
//      between their first live seq and their head, and picks the sealed segments whose live
//      records take less than `livePercent` % of the file;
//   2. each is copied with only its live records (src/storage/compactor.ts), paced, in the
//      background; the copy is fsynced and waits;
//   3. the next checkpoint's step 1 takes the copies finished by then: its snapshot records every
//      record those copies left out as dead (they died before the copy looked at them);
//   4. once that snapshot is durable, each copy is renamed over its segment (or the segment is
//      unlinked when nothing of it lives) by the SegmentStore, which switches the relocation
//      that cold reads use in the same turn.
// A crash before 4 leaves the old file whole (recovery removes the copy); after it, the copy is
// the segment, and the snapshot (or the WAL after it) says the missing records are dead.
// Runs on the worker thread; never inside an actor step (it only reads actor state between steps).
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { TopicInstance } from '../actors/topic/instance.js';
import { SlotState } from '../actors/topic/seqIndex.js';
import type { SegmentStore } from '../storage/segmentStore.js';
import type { Fs } from '../storage/fs.js';
import { segmentFileName, topicDir } from '../storage/layout.js';
import { writeCompacted, type CompactOutcome, type CompactPace } from '../storage/compactor.js';
import path from 'node:path';

/** What a live record is reckoned to take in a segment beyond its payload (its 12-byte header and a share of its frame's). */
const RECORD_OVERHEAD_BYTES = 16;

export interface CompactionOptions {
  /** Compact a sealed segment whose live records take less than this % of it (0: never on its own). */
  livePercent: number;
  /** Pace of a copy in bytes of the old file per second (0: unpaced). */
  bytesPerSec: number;
}

/** Figures for /v0/metrics. */
export interface CompactionStats {
  bytesReclaimed: number;
  segmentsRewritten: number;
  /** Live bytes (estimated) and file bytes of the sealed segments the last plan looked at. */
  liveBytes: number;
  storedBytes: number;
}

interface Candidate {
  actor: TopicActor;
  inst: TopicInstance;
  firstSeq: number;
  /** The seq after the segment (the next segment's first). */
  endSeq: number;
}

interface Built {
  topicId: number;
  firstSeq: number;
  outcome: CompactOutcome;
}

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

export class WorkerCompaction {
  readonly stats: CompactionStats = { bytesReclaimed: 0, segmentsRewritten: 0, liveBytes: 0, storedBytes: 0 };
  /** Copies finished and fsynced, waiting for a checkpoint to begin. */
  private built: Built[] = [];
  /** Copies a checkpoint's step 1 took, by its mark: swapped once its snapshot is durable. */
  private readonly swapAfter = new Map<number, Built[]>();
  private running: Promise<void> | undefined;
  /** Per topic, its head and count when a plan last looked (unchanged: nothing new died). */
  private looked = new Map<number, string>();
  private stopped = false;

  constructor(
    private readonly fsx: Fs,
    private readonly dataDir: string,
    private readonly segments: SegmentStore,
    private readonly actors: () => Iterable<TopicActor>,
    /** Gives the actor its `seal` input (between steps, like every input). */
    private readonly seal: (actor: TopicActor, topicId: number) => void,
    private readonly opts: CompactionOptions,
    private readonly pace: CompactPace,
    private readonly log: (msg: string) => void,
  ) {}

  /** Copies wait for a checkpoint, or one is under way: the next timed checkpoint is not idle. */
  get busy(): boolean {
    return this.built.length > 0 || this.running !== undefined;
  }

  /** Checkpoint step 1 began (`markId`): the copies finished so far are its to swap. */
  onPrepare(markId: number): void {
    if (this.built.length > 0) this.swapAfter.set(markId, this.built);
    this.built = [];
  }

  /**
   * The snapshot of `markId` is durable: swaps its copies (and those of earlier marks whose
   * checkpoint failed), then starts the next round in the background when compaction runs on
   * its own. Returns how many segments were swapped.
   */
  async onCommitted(markId: number): Promise<number> {
    let n = 0;
    for (const [mark, list] of this.swapAfter) {
      if (mark > markId) continue;
      this.swapAfter.delete(mark);
      for (const b of list) if (await this.swap(b)) n++;
    }
    if (this.opts.livePercent > 0 && !this.running && !this.stopped) {
      this.running = this.round(this.opts.livePercent, this.pace).finally(() => (this.running = undefined));
      this.running.catch((err: Error) => this.log(`spool: compaction stopped: ${err.message}`));
    }
    return n;
  }

  /** Plans and copies now, unpaced, at `livePercent` (tests, tools); the next checkpoint swaps. */
  async compactNow(livePercent: number): Promise<number> {
    while (this.running) await this.running.catch(() => undefined);
    const before = this.built.length;
    await this.round(livePercent, { ...this.pace, bytesPerSec: 0 });
    return this.built.length - before;
  }

  /** No more rounds (the worker stops); a copy under way gives up at its next slice. */
  stop(): void {
    this.stopped = true;
  }

  private async swap(b: Built): Promise<boolean> {
    try {
      const done = await this.segments.swapCompacted(b.topicId, b.firstSeq, b.outcome.relocation);
      if (done) {
        this.stats.bytesReclaimed += b.outcome.oldBytes - b.outcome.newBytes;
        this.stats.segmentsRewritten++;
      }
      return done;
    } catch (err) {
      // The old file or the copy is whole either way (a rename is atomic); recovery sorts out which.
      this.log(`spool: compaction swap of segment ${b.firstSeq} of topic ${b.topicId} failed: ${(err as Error).message}`);
      return false;
    } finally {
      this.segments.endCompaction(b.topicId, b.firstSeq);
    }
  }

  private async round(livePercent: number, pace: CompactPace): Promise<void> {
    const candidates = await this.plan(livePercent);
    for (const c of candidates) {
      const built = this.stopped ? undefined : await this.copy(c, pace);
      if (built) this.built.push(built);
      else this.segments.endCompaction(c.inst.id, c.firstSeq);
    }
  }

  /** The sealed own segments worth copying, from the topics with dead records in their live range. */
  private async plan(livePercent: number): Promise<Candidate[]> {
    const out: Candidate[] = [];
    const looked = new Map<number, string>();
    let liveBytes = 0;
    let storedBytes = 0;
    for (const actor of [...this.actors()]) {
      const inst = actor.current;
      if (!inst || actor.current !== inst || inst.recovery) continue;
      const dead = inst.head - inst.earliest() + 1 - inst.count;
      if (dead <= 0) continue;
      const before = this.looked.get(inst.id);
      // A mostly dead active segment with nothing in flight is sealed, so that this round compacts
      // it too (a stuck head must not pin the tail of its topic either). A busy queue whose jobs
      // are acked quickly gets a new segment file per checkpoint this way.
      if (inst.assigned === inst.head && this.mostlyDeadActive(inst, livePercent)) this.seal(actor, inst.id);
      const seen = `${inst.head}:${inst.count}:${inst.segment.firstSeqs.length}`;
      looked.set(inst.id, seen);
      if (before === seen) continue;
      const segs = inst.segment.firstSeqs;
      const earliest = inst.earliest();
      for (let k = Math.max(inst.segment.reclaimed, inst.segment.packed ? 1 : 0); k < segs.length - 1; k++) {
        const [from, end] = [segs[k]!, segs[k + 1]!];
        if (end <= earliest) continue; // wholly dead: the next checkpoint unlinks it
        if (this.segments.isCompacting(inst.id, from)) continue; // its copy waits for a swap
        const file = path.join(topicDir(this.dataDir, inst.id), segmentFileName(from));
        let size: number;
        try {
          size = (await this.fsx.stat(file)).size;
        } catch {
          continue; // gone meanwhile
        }
        if (actor.current !== inst) break;
        const live = liveEstimate(inst, from, end - 1);
        liveBytes += Math.min(live, size);
        storedBytes += size;
        if (live * 100 < livePercent * size) {
          this.segments.beginCompaction(inst.id, from);
          out.push({ actor, inst, firstSeq: from, endSeq: end });
        }
        await nextTurn();
      }
    }
    this.looked = looked;
    if (storedBytes > 0) {
      this.stats.liveBytes = liveBytes;
      this.stats.storedBytes = storedBytes;
    }
    return out;
  }

  /** The active own segment holds records, and few of them live. */
  private mostlyDeadActive(inst: TopicInstance, livePercent: number): boolean {
    const seg = inst.segment;
    if (seg.size === 0 || (seg.ordinal === 0 && seg.packed) || seg.firstSeq > inst.head) return false;
    return liveEstimate(inst, seg.firstSeq, inst.head) * 100 < livePercent * seg.size;
  }

  private async copy(c: Candidate, pace: CompactPace): Promise<Built | undefined> {
    const { actor, inst, firstSeq } = c;
    const still = () => !this.stopped && actor.current === inst && !this.segments.compactionStale(inst.id, firstSeq);
    if (!still()) return undefined;
    try {
      const outcome = await writeCompacted(
        this.fsx,
        {
          file: path.join(topicDir(this.dataDir, inst.id), segmentFileName(firstSeq)),
          temp: this.segments.compactTempPath(inst.id, firstSeq),
          topicId: inst.id,
          isLive: (seq) => inst.index.state(seq) === SlotState.LIVE,
          still,
        },
        pace,
      );
      return outcome ? { topicId: inst.id, firstSeq, outcome } : undefined;
    } catch (err) {
      // A copy that fails (a full disk, a damaged frame) only leaves the segment as it is.
      this.log(`spool: compaction of ${inst.name} segment ${firstSeq} failed: ${(err as Error).message}`);
      return undefined;
    }
  }
}

/** Live bytes of seqs [from, to] of a topic, as a segment holds them (payload plus overhead). */
function liveEstimate(inst: TopicInstance, from: number, to: number): number {
  const idx = inst.index;
  let bytes = 0;
  for (let s = idx.nextLive(from, to); s <= to; s = idx.nextLive(s + 1, to)) bytes += idx.bytes(s) + RECORD_OVERHEAD_BYTES;
  return bytes;
}
