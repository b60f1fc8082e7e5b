// The pack side of a topic worker's recovery (docs/ARCHITECTURE.md "Pack files"): one sequential
// scan of the pack files, oldest first, every frame CRC-checked, each frame of a topic this
// worker loaded from the snapshot fed to its actor in order (its packed first segment, indexed
// cold) and its place noted in the PackMap. Frames of topics not known yet are held by position:
// a topic created after the snapshot gets them when the WAL replay reaches its TOPIC_CREATE,
// before any of its replayed appends (which then skip what the packs hold, so replay never
// writes a second copy). Held frames nobody claims by the end of the replay are dead bytes,
// unless the WAL scan dropped frames: then their packs are kept in quarantine/ (endReplay names
// them; docs/ARCHITECTURE.md "Checkpoints and recovery").
// A held topic without own segment files (the common case: many small topics made since the
// last checkpoint) is not read back at all: its held frames are byte-for-byte the APPEND frames
// the replay is about to apply, so each replayed frame that matches the next held one (same
// first seq, size and CRC) is fed as the packed frame, from the WAL's bytes (`deferHeld`,
// `replayedAppend`). Anything else for the topic first reads its remaining held frames back, as
// before, so the order of its inputs never changes.
// Which packs: those this worker wrote under the same worker count; every pack written under
// another count (its topics may be anywhere now). The writer's index modulo the worker count
// names the one worker that repairs a torn tail, so two workers never truncate one file.
// An own segment file supersedes packed frames of its seqs: compaction may have moved a topic's
// packed first segment into `seg-<its first seq>.log` (docs/ARCHITECTURE.md "Compaction") while
// the snapshot still names its runs or its pack is still on disk. An own file that is not such a
// move starts after every packed seq of its topic, so the rule never drops anything else.
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { ActorInput } from '../actors/topic/inputs.js';
import type { Fs } from '../storage/fs.js';
import type { PackStore } from '../storage/packStore.js';
import { listPacks, readPack, ReuseBuffer, type ListedPack } from '../storage/packScan.js';
import type { SectionPacks } from '../storage/snapshotSectionFormat.js';
import { probeFrame } from '../format/frame.js';
import { readAppendHead, type AppendHead, type FrameView } from '../format/frame.js';
import { forEachFrame } from '../storage/segmentLoad.js';
import { CorruptionError } from '../core/corruption.js';

/** Numbers per held frame: pack idx, offset, length, first seq, seq after it, CRC. */
const HELD_FIELDS = 6;
/** Topic ids are epoch × 2^24 + …: ids made before the snapshot's boot are never created later. */
const EPOCH_UNIT = 0x100_0000;
/** Held frames are read into spare buffers this large (a larger run gets its own), given back after adopt. */
const SPARE_BYTES = 64 * 1024;
/** Spare buffers kept at most (a few more than the replay reads ahead). */
const SPARES_MAX = 16;

/** A topic's held frames as read, and the spare buffers they are views of (given back by adopt). */
export interface HeldFrames {
  frames: Buffer[];
  spares: Buffer[];
}

/** A held topic whose frames are matched against the replay instead of read back. */
interface Deferred {
  actor: TopicActor;
  h: number[];
  /** Index of the next held frame in `h`. */
  at: number;
  /** The seq after the last frame fed (a held frame below it is a second copy, skipped). */
  next: number;
}

/** The CRC field of a frame at `off` (bytes 4..8 of its prefix). */
function frameCrc(buf: Buffer, off: number): number {
  return buf.readUInt32LE(off + 4);
}

/** The topics restored asleep, as the scan after the cut sees them (Dormancy, through recovery's host). */
export interface AsleepAfterCut {
  /** The head a sleeping topic's runs hold every seq up to; undefined when it is not asleep. */
  asleepHead(topicId: number): number | undefined;
  /** Takes a frame past the head into the topic's row (it stays asleep); false: it must wake. */
  absorbAppend(topicId: number, buf: Buffer, f: FrameView, head: AppendHead): boolean;
}

export interface PackRecoveryHost {
  readonly fsx: Fs;
  readonly dataDir: string;
  readonly packs: PackStore;
  readonly byTopicId: Map<number, TopicActor>;
  input(actor: TopicActor, input: ActorInput): void;
}

export class PackRecovery {
  private readonly held = new Map<number, number[]>();
  /** Per topic, the seq after its last packed frame fed or mapped: a range seen before is never taken twice. */
  private readonly next = new Map<number, number>();
  private readonly deferred = new Map<number, Deferred>();
  /** Per topic with own segment files, the first seq of the first: packed frames from it on are superseded. */
  private readonly ownFrom = new Map<number, number>();
  /**
   * Read buffers reused by readHeld: every frame fed to an actor during recovery is indexed cold
   * (no text keeps a view of it), so once adopt has fed them the buffer is free again. A fresh
   * buffer per topic was ~2.5 KB of garbage per topic created since the snapshot (docs/ARCHITECTURE.md "Many topics").
   */
  private readonly spares: Buffer[] = [];
  /** The highest boot epoch of a held frame's topic id (-1: none held). */
  private epochHeldMax = -1;
  /** Names of the packs holding held frames no topic claimed, once the replay is over. */
  private unclaimed: string[] = [];

  constructor(
    private readonly host: PackRecoveryHost,
    private readonly workerIndex: number,
    private readonly workers: number,
  ) {}

  /** The topic's own segment files start at `firstSeq` (listed before any of its packed frames is fed). */
  ownStartsAt(topicId: number, firstSeq: number): void {
    this.ownFrom.set(topicId, firstSeq);
  }

  /** A packed frame of the topic at `firstSeq` is held by an own segment file instead. */
  private superseded(topicId: number, firstSeq: number): boolean {
    const own = this.ownFrom.get(topicId);
    return own !== undefined && firstSeq >= own;
  }

  /**
   * Step 3b, after the snapshot's instances exist and before their own segments load: feeds the
   * packed frames of known topics, holds those of topics created at or after the snapshot's boot
   * (`snapshotEpoch`), skips the rest (deleted instances). `fsynced`: per pack being written at
   * the cut, the bytes of it the snapshot records as fsynced (no torn tail below them).
   */
  async scan(names: readonly string[], snapshotEpoch: number, fsynced?: ReadonlyMap<string, number>): Promise<void> {
    // Frames are fed and indexed cold within the walk of each pack: one buffer serves every pack.
    const scratch = new ReuseBuffer();
    for (const p of listPacks(names)) {
      if (p.workers === this.workers && p.writer !== this.workerIndex) continue; // not ours
      const repair = p.writer % this.workers === this.workerIndex;
      const buf = await readPack(this.host.fsx, this.host.dataDir, p, repair, scratch, 0, fsynced?.get(p.name));
      this.feedPack(this.host.packs.map.register(p).idx, buf, 0, snapshotEpoch);
    }
  }

  /**
   * One pack's frames (`buf`, read from `from` on): a loaded topic's go to its actor and the map,
   * a sleeping one's (`asleep`, lazy recovery) to the map only, as the ids `touched` collects;
   * those of topics made since the snapshot are held; the rest (deleted instances) skipped.
   */
  private feedPack(idx: number, buf: Buffer, from: number, snapshotEpoch: number, asleep?: AsleepAfterCut, touched?: Set<number>): void {
    const { packs, byTopicId } = this.host;
    forEachFrame(buf, (f, rel) => {
      const off = from + rel;
      const head = readAppendHead(buf, f);
      const actor = byTopicId.get(f.topicId);
      // A topic restored asleep holds every seq up to its head in its runs already.
      const asleepHead = actor ? undefined : asleep?.asleepHead(f.topicId);
      if (actor || asleepHead !== undefined) {
        if (head.firstSeq < (this.next.get(f.topicId) ?? (asleepHead ?? -1) + 1)) return;
        if (this.superseded(f.topicId, head.firstSeq)) return;
        this.next.set(f.topicId, head.firstSeq + head.count);
        if (actor) this.host.input(actor, { k: 'packed', frame: buf.subarray(rel, rel + f.size) });
        // A plain append stays asleep, in the row; once one frame is not, the topic wakes.
        else if (touched!.has(f.topicId) || !asleep!.absorbAppend(f.topicId, buf, f, head)) touched!.add(f.topicId);
        packs.map.add(f.topicId, idx, off, f.size);
      } else if (Math.floor(f.topicId / EPOCH_UNIT) >= snapshotEpoch) {
        this.epochHeldMax = Math.max(this.epochHeldMax, Math.floor(f.topicId / EPOCH_UNIT));
        let h = this.held.get(f.topicId);
        if (!h) this.held.set(f.topicId, (h = []));
        h.push(idx, off, f.size, head.firstSeq, head.firstSeq + head.count, frameCrc(buf, rel));
      }
    });
  }

  /**
   * Lazy recovery: a topic's runs as its snapshot part records them ([pack no, offset, length,
   * ...]), into the map. Every pack they name must be on disk: nothing live is ever unlinked.
   */
  addRuns(topicId: number, runs: readonly number[], runsLen: number, listed: readonly ListedPack[]): void {
    const map = this.host.packs.map;
    if (this.idxByNo?.listed !== listed) {
      this.idxByNo = { listed, idx: new Map() };
      this.lastRun.no = -1;
    }
    for (let i = 0; i < runsLen; i += 3) {
      // Neighbouring topics' runs are mostly in the same pack: the last one met first.
      let idx = runs[i] === this.lastRun.no ? this.lastRun.idx : this.idxByNo.idx.get(runs[i]!);
      if (idx === undefined) {
        const p = listed.find((x) => x.no === runs[i]);
        if (!p)
          throw new CorruptionError(
            'packs/',
            `the snapshot places frames of topic ${topicId.toString(16)} in pack ${runs[i]}, which is not there`,
          );
        this.idxByNo.idx.set(p.no, (idx = map.register(p).idx));
      }
      this.lastRun.no = runs[i]!;
      this.lastRun.idx = idx;
      map.add(topicId, idx, runs[i + 1]!, runs[i + 2]!);
    }
  }

  /** The pack addRuns met last (its number and map index), valid while `idxByNo` is. */
  private readonly lastRun = { no: -1, idx: 0 };

  /** Map indexes of the packs addRuns met, by pack number (registering a pack builds its name). */
  private idxByNo: { listed: readonly ListedPack[]; idx: Map<number, number> } | undefined;

  /**
   * Lazy recovery: feeds a loading topic its whole packed segment as the map has it (its runs
   * from the snapshot, and any frames the scan after the cut added), each frame CRC-checked.
   */
  async feedPacked(actor: TopicActor, topicId: number): Promise<void> {
    const size = this.host.packs.map.size(topicId);
    if (size === 0) return;
    const buf = await this.host.packs.read(topicId, 0, size);
    for (let off = 0; off < buf.length;) {
      const p = probeFrame(buf, off, buf.length);
      if (!p.ok) throw this.host.packs.damageAt(topicId, `topic ${topicId.toString(16)}`, off, `frame does not check (${p.reason})`);
      const head = readAppendHead(buf, p.frame);
      if (this.superseded(topicId, head.firstSeq)) {
        // Moved to an own file (compaction), whole: the runs are not the topic's any more.
        if (off > 0)
          throw new CorruptionError(
            `topic ${topicId.toString(16)} packed segment`,
            `its own segment files start inside it (seq ${head.firstSeq})`,
          );
        this.host.packs.map.release(topicId);
        return;
      }
      this.next.set(topicId, head.firstSeq + head.count);
      this.host.input(actor, { k: 'packed', frame: buf.subarray(off, off + p.frame.size) });
      off += p.frame.size;
    }
  }

  /**
   * Lazy recovery: scans only what this worker's packs got after the cut (`cut`: the packs the
   * snapshot's runs cover whole, and the one being written, from the bytes of it fsynced then,
   * where the runs recovery trusts end: runsClipper), as scan does.
   * Frames of topics still asleep go to the map, and to their rows when `asleep.absorbAppend`
   * takes them; returns the ids of those with a frame it did not take (they must load).
   */
  async scanAfterCut(
    listed: readonly ListedPack[],
    cut: SectionPacks,
    snapshotEpoch: number,
    asleep: AsleepAfterCut,
  ): Promise<Set<number>> {
    const whole = new Set(cut.whole);
    const touched = new Set<number>();
    const scratch = new ReuseBuffer();
    for (const p of listed) {
      if (p.workers === this.workers && p.writer !== this.workerIndex) continue; // not ours
      const idx = this.host.packs.map.register(p).idx; // known, so that an emptied pack is reported dead
      if (whole.has(p.name)) continue;
      // From what its section records fsynced, where the runs recovery trusts end (runsClipper):
      // frames past it may be missing from the runs, and a power loss may have garbled them.
      const from = cut.tail?.[0] === p.name ? (cut.tail[2] ?? cut.tail[1]) : 0;
      // A pack shorter than its fsynced bytes lost what the snapshot relies on: refused, as the
      // eager scan refuses it (readPack).
      const durable = cut.tail?.[0] === p.name ? (cut.tail[2] ?? 0) : 0;
      const buf = await readPack(this.host.fsx, this.host.dataDir, p, p.writer % this.workers === this.workerIndex, scratch, from, durable);
      this.feedPack(idx, buf, from, snapshotEpoch, asleep, touched);
    }
    return touched;
  }

  /** The held frames of a topic, read (several frames of one pack in one read), or undefined. */
  readHeld(topicId: number): Promise<HeldFrames> | undefined {
    const h = this.held.get(topicId);
    if (!h) return undefined;
    return this.readFrames(h);
  }

  private async readFrames(h: number[]): Promise<HeldFrames> {
    const out: Buffer[] = [];
    const spares: Buffer[] = [];
    for (let i = 0; i < h.length;) {
      // A run of frames back to back in one pack: one read.
      let j = i + HELD_FIELDS;
      let len = h[i + 2]!;
      while (j < h.length && h[j] === h[i] && h[j + 1] === h[i + 1]! + len) {
        len += h[j + 2]!;
        j += HELD_FIELDS;
      }
      let buf: Buffer;
      if (len <= SPARE_BYTES) {
        const spare = this.spares.pop() ?? Buffer.allocUnsafeSlow(SPARE_BYTES);
        spares.push(spare);
        buf = spare.subarray(0, len);
      } else buf = Buffer.allocUnsafeSlow(len);
      await this.host.packs.readers.read(h[i]!, buf, 0, len, h[i + 1]!);
      for (let k = i, at = 0; k < j; k += HELD_FIELDS) {
        out.push(buf.subarray(at, at + h[k + 2]!));
        at += h[k + 2]!;
      }
      i = j;
    }
    return { frames: out, spares };
  }

  /**
   * A topic created after the snapshot takes its held frames (read by readHeld) as its packed
   * first segment, before its own segments and replayed appends.
   */
  adopt(actor: TopicActor, topicId: number, held: HeldFrames): void {
    const h = this.held.get(topicId);
    this.held.delete(topicId);
    this.feed(actor, topicId, h ?? [], held, 0);
  }

  /**
   * Feeds held frames `h` (read as `held`) from seq `next` on, skipping second copies, and gives
   * the read buffers back: the inputs index the frames cold and keep no view of them.
   */
  private feed(actor: TopicActor, topicId: number, h: number[], held: HeldFrames, next: number): void {
    for (let i = 0, k = 0; i < h.length; i += HELD_FIELDS, k++) {
      if (h[i + 3]! < next || this.superseded(topicId, h[i + 3]!)) continue;
      next = h[i + 4]!;
      this.host.input(actor, { k: 'packed', frame: held.frames[k]! });
      this.host.packs.map.add(topicId, h[i]!, h[i + 1]!, h[i + 2]!);
    }
    for (const b of held.spares) if (this.spares.length < SPARES_MAX) this.spares.push(b);
  }

  /** The topic has held frames (read back by readHeld, or matched by deferHeld). */
  hasHeld(topicId: number): boolean {
    return this.held.has(topicId);
  }

  /**
   * A topic created after the snapshot, with no own segments, takes its held frames from the
   * replay: each of its replayed APPEND frames goes to replayedAppend first.
   */
  deferHeld(actor: TopicActor, topicId: number): void {
    const h = this.held.get(topicId);
    if (!h) return;
    this.held.delete(topicId);
    this.deferred.set(topicId, { actor, h, at: 0, next: 0 });
  }

  /** The topic's replayed frames go through replayedAppend / settleDeferred. */
  isDeferred(topicId: number): boolean {
    return this.deferred.has(topicId);
  }

  /**
   * A replayed APPEND frame of a deferred topic: true when it was the topic's next held frame
   * and was fed as such (the replay then skips it). Otherwise the caller settles the topic first.
   */
  replayedAppend(topicId: number, buf: Buffer, off: number, size: number, firstSeq: number): boolean {
    const d = this.deferred.get(topicId);
    if (!d) return false;
    const h = d.h;
    while (d.at < h.length && h[d.at + 3]! < d.next) d.at += HELD_FIELDS; // a second copy
    const i = d.at;
    if (i >= h.length || h[i + 3] !== firstSeq || h[i + 2] !== size || h[i + 5] !== frameCrc(buf, off)) return false;
    this.host.input(d.actor, { k: 'packed', frame: buf.subarray(off, off + size) });
    this.host.packs.map.add(topicId, h[i]!, h[i + 1]!, size);
    d.next = h[i + 4]!;
    d.at = i + HELD_FIELDS;
    if (d.at >= h.length) this.deferred.delete(topicId);
    return true;
  }

  /**
   * Reads back and feeds a deferred topic's held frames not matched yet (before a frame of the
   * topic that is not its next held one, and at the end of the replay: a held frame may outlive
   * the WAL's copy of it when a power loss keeps the pack's write-back and not the WAL's).
   */
  async settleDeferred(topicId: number): Promise<void> {
    const d = this.deferred.get(topicId);
    if (!d) return;
    this.deferred.delete(topicId);
    const rest = d.h.slice(d.at);
    this.feed(d.actor, topicId, rest, await this.readFrames(rest), d.next);
  }

  /**
   * The highest boot epoch among the topics of held frames (-1: none): after the WAL scan dropped
   * frames, a topic id of a dropped boot must never be handed out again (its frames stay in packs).
   */
  get heldEpochMax(): number {
    return this.epochHeldMax;
  }

  /**
   * The replay is over: deferred topics take their unmatched frames; frames nobody claimed are
   * dead (their packs are named by unclaimedPacks).
   */
  async endReplay(): Promise<void> {
    for (const id of [...this.deferred.keys()]) await this.settleDeferred(id);
    const packs = new Set<string>();
    for (const h of this.held.values()) for (let i = 0; i < h.length; i += HELD_FIELDS) packs.add(this.host.packs.map.pack(h[i]!).name);
    this.unclaimed = [...packs].sort();
    this.held.clear();
  }

  /**
   * The packs that hold frames of topics no snapshot part and no replayed TOPIC_CREATE knew
   * (topics a create of which never became durable, or whose WAL the scan dropped), after endReplay.
   */
  get unclaimedPacks(): readonly string[] {
    return this.unclaimed;
  }
}
