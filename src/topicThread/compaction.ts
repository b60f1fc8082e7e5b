// Segment compaction on a topic worker (docs/ARCHITECTURE.md "Compaction"): which sealed
// segments to rewrite, when, and the order of the steps that keep it crash-safe.
//   1. after every checkpoint commits, and every 250 ms while actors take inputs (so copies are
//      ready for the next checkpoint: space comes back one checkpoint after records die, two
//      for a packed segment's pack file), `plan` looks at the awake topics that hold dead records
//      between their first live seq and their head, seals a mostly dead active segment that is
//      big enough (compactPlan.ts), and picks the sealed segments whose live records take less
//      than `livePercent` % of them: own segment files, and a packed first segment;
//   2. each is copied with only its live records (src/storage/compactor.ts), paced, in the
//      background; the copy is fsynced and waits (a packed one is copied into the topic's
//      directory, as the own file it becomes);
//   3. the next checkpoint's step 1 takes the copies finished by then: its snapshot records every
//      record those copies left out as dead (they died before the copy looked at them);
//   4. once that snapshot is durable, each copy is renamed over its segment (or the segment is
//      unlinked when nothing of it lives; a packed one's copy becomes `seg-<first seq>.log` and
//      its pack runs are released) by the SegmentStore, which switches the relocation that cold
//      reads use in the same turn.
// A crash before 4 leaves the old segment whole (recovery removes the copy); after it, the copy
// is the segment (recovery prefers an own file to packed frames of the same seqs), and the
// snapshot (or the WAL after it) says the missing records are dead.
// Runs on the worker thread; never inside an actor step (it only reads actor state between steps).
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { TopicInstance } from '../actors/topic/instance.js';
import { SlotState } from '../actors/topic/seqIndex.js';
import type { SegmentStore } from '../storage/segmentStore.js';
import { mkdirDurable, type Fs } from '../storage/fs.js';
import { segmentFileName, topicDir } from '../format/layout.js';
import { fileSource, writeCompacted, type CompactOutcome, type CompactPace, type CompactSource } from '../storage/compactor.js';
import { liveEstimate, mostlyDead, sealedCandidates, worthSealing, type RollBytes } from './compactPlan.js';
import path from 'node:path';

export interface CompactionOptions extends RollBytes {
  /** Compact a sealed segment whose live records take less than this % of it (0: never on its own). */
  livePercent: number;
  /** Pace of a copy in bytes of the old segment per second (0: unpaced). */
  bytesPerSec: number;
}

/** Figures for /v0/metrics. */
export interface CompactionStats {
  bytesReclaimed: number;
  segmentsRewritten: number;
  /** Live bytes (estimated) and stored bytes of the sealed segments the last plan looked at. */
  liveBytes: number;
  storedBytes: number;
}

interface Candidate {
  actor: TopicActor;
  inst: TopicInstance;
  firstSeq: number;
  /** The topic's packed first segment (still in the packs). */
  packed: boolean;
  /** Its bytes; and whether nothing of it lived at the plan (then nothing is read: it is unlinked). */
  size: number;
  allDead: boolean;
}

interface Built {
  topicId: number;
  firstSeq: number;
  packed: boolean;
  outcome: CompactOutcome;
}

/** How a round decides: the live share, and whether a mostly dead active segment of any size is sealed (tests, tools). */
interface RoundRule {
  livePercent: number;
  sealAny: boolean;
  pace: CompactPace;
}

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

/**
 * How often compaction looks again while actors take inputs (besides after every checkpoint):
 * soon enough that a copy is ready for the next checkpoint. A look skips every topic whose head,
 * count and segments did not move since the last (most topics: one comparison).
 */
export const COMPACT_LOOK_MS = 250;

/** A round whose copy failed (a full disk) is tried again after this long, new inputs or not. */
export const COMPACT_RETRY_MS = 2000;

export class WorkerCompaction {
  readonly stats: CompactionStats = { bytesReclaimed: 0, segmentsRewritten: 0, liveBytes: 0, storedBytes: 0 };
  /** Copies finished and fsynced, waiting for a checkpoint to begin. */
  private built: Built[] = [];
  /** Copies a checkpoint's step 1 took, by its mark: swapped once its snapshot is durable. */
  private readonly swapAfter = new Map<number, Built[]>();
  private running: Promise<void> | undefined;
  /** A checkpoint committed while a round ran: another round follows it at once. */
  private again = false;
  /** A packed segment's copy was swapped in since the last checkpoint began. */
  private movedSincePrepare = false;
  /** Per topic, its head, count and segments when a plan last looked (unchanged: nothing new died). */
  private looked = new Map<number, string>();
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** The host's input count when the last plan ended (unchanged: nothing can have died since). */
  private inputsLooked = -1;
  /** When a copy last failed (0: none since the last round): the round is tried again later. */
  private failedAt = 0;

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
    /** Inputs the worker's actors took so far (a count that only grows). */
    private readonly inputs: () => number = () => 0,
  ) {}

  /** Looks every COMPACT_LOOK_MS while actors take inputs (after recovery; on its own only). */
  start(): void {
    if (this.timer || this.opts.livePercent <= 0) return;
    this.timer = setInterval(() => {
      if (this.running || this.stopped) return;
      // A copy that failed (ENOSPC) is retried once space may have come back, though nothing
      // died since: its topic's unchanged figures would otherwise keep it from another look.
      const retry = this.failedAt > 0 && Date.now() - this.failedAt >= COMPACT_RETRY_MS;
      if (retry || this.inputs() !== this.inputsLooked) this.startRound();
    }, COMPACT_LOOK_MS);
    this.timer.unref();
  }

  /**
   * Copies wait for a checkpoint (its commit swaps them in), or a packed segment moved out since
   * the last one began (the next reports the packs it leaves dead, and its commit unlinks them):
   * the next timed checkpoint is not idle.
   */
  get busy(): boolean {
    return this.built.length > 0 || this.movedSincePrepare;
  }

  /** Checkpoint step 1 began (`markId`): the copies finished so far are its to swap. */
  onPrepare(markId: number): void {
    this.movedSincePrepare = false;
    if (this.built.length > 0) this.swapAfter.set(markId, this.built);
    this.built = [];
  }

  /**
   * The snapshot of `markId` is durable: swaps its copies (and those of earlier marks whose
   * checkpoint failed), then, when compaction runs on its own, starts the next round in the
   * background (or, while one runs, has another follow it: every checkpoint is considered).
   * Returns how many segments were swapped.
   */
  async onCommitted(markId: number): Promise<number> {
    let n = 0;
    for (const [mark, list] of this.swapAfter) {
      if (mark > markId) continue;
      this.swapAfter.delete(mark);
      for (const b of list) if (await this.swap(b)) n++;
    }
    if (this.opts.livePercent > 0 && !this.stopped) {
      if (this.running) this.again = true;
      else this.startRound();
    }
    return n;
  }

  private startRound(): void {
    this.again = false;
    const rule = { livePercent: this.opts.livePercent, sealAny: false, pace: this.pace };
    this.running = this.round(rule).finally(() => {
      this.running = undefined;
      if (this.again && !this.stopped) this.startRound();
    });
    this.running.catch((err: Error) => this.log(`spool: compaction stopped: ${err.message}`));
  }

  /**
   * Plans and copies now, unpaced, at `livePercent`, sealing every active segment with a dead
   * record (tests, tools); the next checkpoint swaps. Returns how many copies wait for it.
   */
  async compactNow(livePercent: number): Promise<number> {
    while (this.running) await this.running.catch(() => undefined);
    const before = this.built.length;
    this.looked.clear();
    await this.round({ livePercent, sealAny: true, pace: { ...this.pace, bytesPerSec: 0 } });
    return this.built.length - before;
  }

  /** No more rounds (the worker stops); a copy under way gives up at its next slice. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  private async swap(b: Built): Promise<boolean> {
    try {
      const done = await this.segments.swapCompacted(b.topicId, b.firstSeq, b.outcome.relocation, b.packed);
      if (done) {
        if (b.packed) this.movedSincePrepare = true;
        this.stats.bytesReclaimed += b.outcome.oldBytes - b.outcome.newBytes;
        this.stats.segmentsRewritten++;
      }
      return done;
    } catch (err) {
      // The old segment or the copy is whole either way (a rename is atomic); recovery sorts out which.
      this.log(`spool: compaction swap of segment ${b.firstSeq} of topic ${b.topicId} failed: ${(err as Error).message}`);
      return false;
    } finally {
      this.segments.sealed.endCompaction(b.topicId, b.firstSeq);
    }
  }

  private async round(rule: RoundRule): Promise<void> {
    this.failedAt = 0;
    const candidates = await this.plan(rule);
    for (const c of candidates) {
      const built = this.stopped ? undefined : await this.copy(c, rule.pace);
      if (built) this.built.push(built);
      else this.segments.sealed.endCompaction(c.inst.id, c.firstSeq);
    }
  }

  /** The sealed segments worth copying, from the topics with dead records in their live range. */
  private async plan(rule: RoundRule): Promise<Candidate[]> {
    const out: Candidate[] = [];
    const looked = new Map<number, string>();
    const sizes = { live: 0, stored: 0 };
    for (const actor of [...this.actors()]) {
      const inst = actor.current;
      if (!inst || inst.recovery) continue;
      const dead = inst.head - inst.earliest() + 1 - inst.count;
      // A topic with no live record has none of its dead in that range (earliest is past the
      // head), but its active segment holds them all, and only a sealed segment is reclaimed.
      const allDead = inst.count === 0 && inst.segment.size > 0 && inst.segment.firstSeq <= inst.head;
      if (dead <= 0 && !allDead) continue;
      // A mostly dead active segment is sealed, so that this round rewrites it too (a stuck head
      // must not pin the tail of its topic either); only a big enough one (SEAL_SHARE).
      if (worthSealing(inst, rule.livePercent, rule.sealAny ? undefined : this.opts)) this.seal(actor, inst.id);
      const seen = `${inst.head}:${inst.count}:${inst.segment.firstSeqs.length}:${inst.segment.reclaimed}`;
      looked.set(inst.id, seen);
      if (this.looked.get(inst.id) === seen) continue;
      for (const c of sealedCandidates(inst)) {
        const found = await this.candidate(actor, inst, c.ordinal, c.from, c.end, rule.livePercent, sizes);
        if (actor.current !== inst) break;
        if (found) out.push(found);
        await nextTurn();
      }
    }
    this.looked = looked;
    this.inputsLooked = this.inputs(); // the seals above included
    if (sizes.stored > 0) {
      this.stats.liveBytes = sizes.live;
      this.stats.storedBytes = sizes.stored;
    }
    return out;
  }

  /**
   * Every frame of the topic's sealed segment at `firstSeq` is in its file or pack (a copy made
   * earlier would miss frames the WAL or the store still hold, and their late write would land in
   * the copy): a write moved on past it, or nothing of the topic is in flight.
   */
  private complete(actor: TopicActor, topicId: number, firstSeq: number): boolean {
    if (this.segments.wroteAfter(topicId, firstSeq)) return true;
    return (
      actor.writtenFrameNo === actor.submittedFrameNo && this.segments.allWritten(topicId) && !this.segments.packs?.hasPending(topicId)
    );
  }

  /** Segment `ordinal` [from, end) of the topic, if it is worth a copy (its compaction begun). */
  private async candidate(
    actor: TopicActor,
    inst: TopicInstance,
    ordinal: number,
    from: number,
    end: number,
    livePercent: number,
    sizes: { live: number; stored: number },
  ): Promise<Candidate | undefined> {
    if (this.segments.sealed.isCompacting(inst.id, from)) return undefined; // its copy waits for a swap
    if (!this.complete(actor, inst.id, from)) return undefined;
    // The packed first segment, unless an earlier compaction moved it to an own file already.
    const packed = ordinal === 0 && inst.segment.packed && !this.segments.sealed.isUnpacked(inst.id);
    let size: number;
    if (packed) {
      const packs = this.segments.packs;
      if (!packs) return undefined;
      size = packs.map.size(inst.id);
    } else {
      try {
        size = (await this.fsx.stat(this.segmentPath(inst.id, from))).size;
      } catch {
        return undefined; // gone meanwhile
      }
    }
    if (size === 0 || actor.current !== inst) return undefined;
    const live = liveEstimate(inst, from, end - 1);
    sizes.live += Math.min(live, size);
    sizes.stored += size;
    if (!mostlyDead(live, size, livePercent)) return undefined;
    this.segments.sealed.beginCompaction(inst.id, from);
    return { actor, inst, firstSeq: from, packed, size, allDead: live === 0 };
  }

  private segmentPath(topicId: number, firstSeq: number): string {
    return path.join(topicDir(this.dataDir, topicId), segmentFileName(firstSeq));
  }

  private async copy(c: Candidate, pace: CompactPace): Promise<Built | undefined> {
    const { actor, inst, firstSeq, packed } = c;
    const still = () => !this.stopped && actor.current === inst && !this.segments.sealed.compactionStale(inst.id, firstSeq);
    if (!still()) return undefined;
    // Nothing of it lived at the plan, and a record never lives again: unlinked at the swap,
    // with nothing read (a stuck head's acked jobs cost no copying at all). A packed one is left
    // to reclaim by prefix (it is then wholly below the first live seq).
    if (c.allDead)
      return packed ? undefined : { topicId: inst.id, firstSeq, packed, outcome: { relocation: undefined, oldBytes: c.size, newBytes: 0 } };
    try {
      // A packed segment's copy goes where the topic's own files are (made durable now if new).
      if (packed) await mkdirDurable(this.fsx, topicDir(this.dataDir, inst.id));
      const outcome = await writeCompacted(
        this.fsx,
        {
          source: () => (packed ? this.packedSource(inst.id) : fileSource(this.fsx, this.segmentPath(inst.id, firstSeq))),
          name: packed ? `the packed segment of ${inst.name}` : this.segmentPath(inst.id, firstSeq),
          temp: this.segments.compactTempPath(inst.id, firstSeq),
          topicId: inst.id,
          isLive: (seq) => inst.index.state(seq) === SlotState.LIVE,
          still,
        },
        pace,
      );
      return outcome ? { topicId: inst.id, firstSeq, packed, outcome } : undefined;
    } catch (err) {
      // A copy that fails (a full disk, a damaged frame) only leaves the segment as it is; on a
      // full disk its topic is looked at again by a later round.
      this.log(`spool: compaction of ${inst.name} segment ${firstSeq} failed: ${(err as Error).message}`);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOSPC' || code === 'EDQUOT') {
        this.looked.delete(inst.id);
        this.failedAt = Date.now();
      }
      return undefined;
    }
  }

  /** A topic's packed first segment, its logical bytes read through the pack map. */
  private packedSource(topicId: number): Promise<CompactSource> {
    const packs = this.segments.packs!;
    return Promise.resolve({
      size: packs.map.size(topicId),
      read: (pos: number, len: number) => packs.read(topicId, pos, len),
      close: async () => undefined,
    });
  }
}
