// A topic worker's part of recovery (docs/ARCHITECTURE.md "Checkpoints and recovery"): instances from the snapshot with their
// segments indexed (cold): packed first segments from one scan of the pack files
// (packRecovery.ts), then own segment files of the topics that have a directory (one readdir of
// topics/ tells which; each such topic's files are listed before its packed frames are fed, since
// an own file supersedes packed frames of its seqs: a compacted packed segment); then the WAL
// frames after the checkpoint, streamed by the WAL thread in
// chunks and applied in order, then the end of recovery (reservations padded, topics counted).
// Every change to an actor goes through an input, so recovery is traced like the rest.
import { lanes } from '../core/lanes.js';
import type { WalOut } from '../protocol/messages/wal.js';
import type { ActorInput } from '../actors/topic/inputs.js';
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { TopicConfig } from '../protocol/topicConfig.js';
import type { ReplayStats } from '../actors/topic/replay.js';
import { decodeJsonBody, probeFrame, readAppendHead, readU64 } from '../format/frame.js';
import { FrameType } from '../format/constants.js';
import type { DormantTopic, TopicPart } from '../format/topicPart.js';
import { readSection, sectionPartCount, type PartCursor } from '../storage/snapshotSectionReader.js';
import { filesThatMustExist, runsClipper, type SectionPart } from '../storage/snapshotSectionFormat.js';
import { partOf } from '../actors/topic/dormant.js';
import { listPacks } from '../storage/packScan.js';
import type { SegmentStore } from '../storage/segmentStore.js';
import type { Fs } from '../storage/fs.js';
import { listSegments, listTopicDirs, readSegment, type LoadedSegment } from '../storage/segmentLoad.js';
import { PackRecovery, type AsleepAfterCut, type HeldFrames } from './packRecovery.js';
import { CorruptionError } from '../core/corruption.js';
import path from 'node:path';
import { segmentFileName, topicDir } from '../format/layout.js';
import type { RouterIdFloor } from '../protocol/messages/router.js';

/** Topics whose segments load at once during recovery. */
const LOAD_PARALLEL = 16;
/** Own segment files checked at once (a readdir and a stat each, ownFileAsAtCut). */
const OWN_CHECK_PARALLEL = 64;
/** Topics created after the snapshot whose segments are read ahead of the WAL replay. */
const READ_AHEAD = 8;

/** An own segment file of a topic, as listed. */
type SegmentFile = { firstSeq: number; file: string };

/** A topic's held packed frames, its segment files, and the first one's contents when it is the only one. */
interface ReadAhead {
  held: HeldFrames | undefined;
  segs: SegmentFile[];
  first: Promise<LoadedSegment> | undefined;
}

/** What lazy recovery needs of the host's sleeping topics (dormancy.ts). */
export interface RecoverySleepers extends AsleepAfterCut {
  /**
   * Keeps a topic of the snapshot asleep (counted, no actor); `listed` lists it. False when it
   * may not sleep now (TTL expiry under way since the cut): recovery loads it.
   */
  restore(rec: DormantTopic): boolean;
  /** Room for `more` topics restored asleep, made at once (a bound: the section's topic count). */
  reserve(more: number): void;
  /** Adds the names of topics restored asleep to the worker's sorted names, all at once. */
  listed(names: string[]): void;
  /** A replayed seq reservation of a sleeping topic (it stays asleep). */
  reserveAsleep(topicId: number, ceiling: number): void;
  /** Takes a sleeping topic out of sleep (recovery loads it then). */
  take(topicId: number): DormantTopic;
  /** The topic of that id was restored asleep and is asleep still. */
  isRestoredAsleep(topicId: number): boolean;
  /** How many topics are still asleep; recovery's index by id goes. */
  endRecovery(): number;
}

export interface RecoveryHost {
  readonly fsx: Fs;
  readonly dataDir: string;
  readonly segments: SegmentStore;
  readonly byTopicId: Map<number, TopicActor>;
  readonly actors: Iterable<TopicActor>;
  actorFor(name: string): TopicActor;
  input(actor: TopicActor, input: ActorInput): void;
  /** Actors' RNGs are seeded from the boot seed, known only at the end of recovery. */
  resetRngs(): void;
  replayAck(bytes: number, buf: ArrayBuffer): void;
  readonly workerIndex: number;
  readonly workers: number;
  readonly sleepers: RecoverySleepers;
}

/** What a worker's end of recovery reports to main (WorkerRecovery.finish). */
export interface RecoveryFinish {
  topics: number;
  appends: number;
  /** Of the topic directory ids main listed, those of this worker's live topics. */
  liveDirIds: number[];
  /** The highest router id in any of its topics' progress, and a topic holding it; null: none. */
  routerIdFloor: RouterIdFloor | null;
  /** Packs holding frames no recovered topic claims (PackRecovery.unclaimedPacks). */
  unclaimedPacks: string[];
}

export class WorkerRecovery {
  private readonly stats: ReplayStats = { appends: 0, skipped: 0 };
  /** Snapshot topics whose segments are indexed (recovery progress, `/v0/ready`). */
  snapshotTopicsLoaded = 0;
  private replayDone: (() => void) | undefined;
  readonly replayed = new Promise<void>((r) => (this.replayDone = r));
  /**
   * Replay chunks are applied in order; a chunk may wait for a topic's segments to load. The
   * WAL scan starts while the snapshot's topics still load (the supervisor runs both at once),
   * so the chain starts once they are in (`snapshotLoaded`).
   */
  private openReplay: () => void = () => undefined; // set by the next line, declared first
  private chain: Promise<void> = new Promise<void>((r) => (this.openReplay = r));
  private readonly packs: PackRecovery;
  /** Ids of the topics that have a directory under topics/ (own segment files), read once. */
  private topicDirs = new Set<number>();
  /** Own segment files listed (listOwn) ahead of a topic's packed frames, until its segments load. */
  private readonly ownListed = new Map<number, SegmentFile[]>();
  /**
   * Per loading topic whose snapshot part records its own file (`own`: a topic quiet at the cut,
   * or the newest file of a busy one), that file's first seq and the bytes of it that were
   * durable before the cut: damage below them is not a torn tail (readSegment), until its
   * segments load.
   */
  private readonly ownDurable = new Map<number, { firstSeq: number; bytes: number }>();
  /**
   * Per loading topic, the own segment files its snapshot part says must be there, [first seq,
   * bytes, ...] (docs/FORMAT.md "Snapshots", `files`; a quiet topic's one file), until its
   * segments load. One missing, or with fewer bytes of whole frames, is damage: reads would skip
   * its records without a word.
   */
  private readonly mustExist = new Map<number, readonly number[]>();
  /** The snapshot's `files` are checked (false when a newer, damaged snapshot was skipped). */
  filesTrusted = true;

  constructor(private readonly host: RecoveryHost) {
    this.packs = new PackRecovery({ ...host, packs: host.segments.packs! }, host.workerIndex, host.workers);
  }

  /**
   * Step 3: instances from the snapshot, their records indexed from segments (cold). Topics load
   * LOAD_PARALLEL at a time: with many small topics the cost is file-system round trips
   * (readdir, open, read, close per topic), which overlap on libuv's pool; each topic's own
   * segments still come in order.
   */
  async loadSnapshot(
    parts: TopicPart[],
    packNames: readonly string[] = [],
    snapshotEpoch = 0,
    fsyncedPacks?: ReadonlyMap<string, number>,
  ): Promise<void> {
    const actors = parts.map((part) => {
      const actor = this.host.actorFor(part.name);
      this.host.input(actor, { k: 'load', part });
      this.host.byTopicId.set(part.id, actor);
      this.noteMustExist(part as SectionPart);
      return actor;
    });
    this.topicDirs = await topicDirIds(this.host.fsx, this.host.dataDir);
    const withDirs = parts.flatMap((p, i) => (this.topicDirs.has(p.id) ? [i] : []));
    // Own files listed first: the scan must know which packed frames they supersede.
    await lanes(LOAD_PARALLEL, withDirs, async (i) => void this.ownListed.set(parts[i]!.id, await this.listOwn(parts[i]!.id)));
    // Packed first segments before own segments: each topic's segments load in seq order.
    await this.packs.scan(packNames, snapshotEpoch, fsyncedPacks);
    this.snapshotTopicsLoaded = parts.length - withDirs.length; // packed only: indexed by the scan
    await lanes(LOAD_PARALLEL, withDirs, async (i) => {
      await this.loadSegmentsOf(actors[i]!, parts[i]!.id);
      this.snapshotTopicsLoaded++;
    });
  }

  /**
   * Step 3 from this worker's section of a v2 snapshot (docs/ARCHITECTURE.md "Lazy recovery"):
   * a topic that was quiet at the cut, with no own segment file or the one it had then, as it
   * was (ownFileAsAtCut), comes back asleep, with nothing read and nothing indexed (the WAL
   * replay or a later request wakes it); every other
   * topic loads, its packed frames read from the runs the section records, not from a scan of
   * every pack. Then only the pack bytes written after the cut are scanned. (The WAL thread
   * routes replayed frames by the section's ids, which main reads: sectionTopicIds.)
   */
  async loadSection(section: Buffer, packNames: readonly string[], snapshotEpoch: number): Promise<void> {
    this.topicDirs = await topicDirIds(this.host.fsx, this.host.dataDir);
    const listed = listPacks(packNames);
    const eager: { actor: TopicActor; id: number }[] = [];
    const asleep: string[] = [];
    /** Topics quiet at the cut with an own segment file: asleep if the file is still as it was. */
    const ownQuiet: DormantTopic[] = [];
    const { sleepers } = this.host;
    const map = this.host.segments.packs!.map;
    const topicDirs = this.topicDirs;
    // Rows for every topic of the section at once, not by doubling (most come back asleep).
    const parts = sectionPartCount(section);
    sleepers.reserve(parts);
    map.reserve(parts);
    // Runs only as far as the pack bytes they name were fsynced at the cut (runsClipper): a topic
    // whose runs are cut short loads (its packed size is not its part's), and the scan after the
    // cut and the WAL replay bring its later frames back.
    let clip: ((runs: number[], len: number) => number) | undefined;
    const onPart = (cur: PartCursor): void => {
      if (cur.runsLen > 0) cur.runsLen = clip!(cur.runs, cur.runsLen);
      if (cur.runsLen > 0) this.packs.addRuns(cur.id, cur.runs, cur.runsLen, listed);
      // A part with router progress always loads (a router dest never sleeps, dormant.ts, so a
      // checkpoint writes none with watermarks): its progress must reach the id floor (finish).
      if (cur.hasWm && cur.routers_applied === undefined && map.size(cur.id) === cur.packed_bytes) {
        if (!topicDirs.has(cur.id)) {
          // Asleep as it was at the cut (its head padded when recovery ends: Dormancy.endRecovery),
          // unless its TTL expiry began since: it loads below. Not without the own file it had
          // (its directory gone: it loads, and the end of recovery asks for it).
          if (cur.own_first_seq === 0 && sleepers.restore(cur)) {
            asleep.push(cur.name);
            this.snapshotTopicsLoaded++;
            return;
          }
        } else if (cur.own_first_seq > 0) {
          // A directory: checked below (a topic quiet with a pack only at the cut rolled over since).
          return void ownQuiet.push(recordOf(cur));
        }
      }
      const part = cur.part();
      this.noteMustExist(part);
      part.runs = undefined; // the load input (and its trace line) carries the part alone
      part.wm = undefined;
      part.own = undefined;
      part.files = undefined;
      eager.push({ actor: this.load(part), id: part.id });
    };
    const head = readSection(section, onPart, (h) => (clip = runsClipper([h.packs])));
    // A segment write after the cut is not in the pack scan, and after a power loss its WAL copy
    // may be gone: a topic whose directory is not exactly the one file of the size it had at the
    // cut loads now, reading its files as before. Two file-system calls each instead of reading.
    await lanes(OWN_CHECK_PARALLEL, ownQuiet, async (rec) => {
      if ((await ownFileAsAtCut(this.host.fsx, this.host.dataDir, rec)) && sleepers.restore(rec)) {
        asleep.push(rec.name);
        this.snapshotTopicsLoaded++;
      } else {
        this.noteOwnDurable(rec);
        eager.push({ actor: this.load(partOf(rec)), id: rec.id });
      }
    });
    this.host.sleepers.listed(asleep);
    // Packed frames of the topics that load, from their runs, in order (before own segments,
    // listed first: they may supersede the runs).
    await lanes(LOAD_PARALLEL, eager, async ({ actor, id }) => {
      if (this.topicDirs.has(id)) this.ownListed.set(id, await this.listOwn(id));
      await this.packs.feedPacked(actor, id);
      if (!this.topicDirs.has(id)) this.snapshotTopicsLoaded++;
    });
    // Pack bytes written after the cut. A sleeping topic with frames there changed after the
    // cut: plain appends join its row (it stays asleep), anything else loads it now, with them,
    // LOAD_PARALLEL at a time (a wake is a pack read or two, and its round trips overlap).
    const touched = await this.packs.scanAfterCut(listed, head.packs, snapshotEpoch, sleepers);
    await lanes(LOAD_PARALLEL, [...touched], (id) => this.wake(id));
    await lanes(
      LOAD_PARALLEL,
      eager.filter((e) => this.topicDirs.has(e.id)),
      async ({ actor, id }) => {
        await this.loadSegmentsOf(actor, id);
        this.snapshotTopicsLoaded++;
      },
    );
  }

  /** A topic of the snapshot that loads (its packed frames and segments follow). */
  private load(part: TopicPart): TopicActor {
    const actor = this.host.actorFor(part.name);
    this.host.input(actor, { k: 'load', part });
    this.host.byTopicId.set(part.id, actor);
    return actor;
  }

  /**
   * A topic restored asleep that recovery must apply something to (a post-cut pack frame, a
   * replayed WAL frame): it loads as any snapshot topic (its part, then its packed frames, and
   * `finish` pads it to its reservation like the others).
   */
  private async wake(topicId: number): Promise<TopicActor> {
    const rec = this.host.sleepers.take(topicId);
    this.noteOwnDurable(rec);
    const actor = this.host.actorFor(rec.name);
    this.host.byTopicId.set(topicId, actor);
    this.host.input(actor, { k: 'load', part: partOf(rec) });
    if (this.topicDirs.has(topicId)) this.ownListed.set(topicId, await this.listOwn(topicId));
    await this.packs.feedPacked(actor, topicId);
    if (this.topicDirs.has(topicId)) await this.loadSegmentsOf(actor, topicId);
    return actor;
  }

  /**
   * A topic's own segment files, oldest first; a compaction's copy never renamed over its segment
   * (a crash before the swap) is removed, the segment being whole. The packed frames from the
   * first file's seq on are superseded (packRecovery.ts ownStartsAt).
   */
  private async listOwn(topicId: number): Promise<SegmentFile[]> {
    const leftovers: string[] = [];
    const segs = await listSegments(this.host.fsx, this.host.dataDir, topicId, leftovers);
    for (const file of leftovers) await this.host.fsx.rm(file);
    if (segs.length > 0) this.packs.ownStartsAt(topicId, segs[0]!.firstSeq);
    return segs;
  }

  /**
   * What a loading topic's part records of its own files: the newest one's durable bytes (`own`),
   * and the files that must be there (`files`; a quiet topic's one file, whole).
   */
  private noteMustExist(part: SectionPart): void {
    const { own } = part;
    if (own) this.ownDurable.set(part.id, { firstSeq: own[0], bytes: own[1] });
    const must = filesThatMustExist(part);
    if (must) this.mustExist.set(part.id, must);
  }

  /** A loading topic's own file as its snapshot record has it (the bytes durable at the cut), if any. */
  private noteOwnDurable(rec: DormantTopic): void {
    if (!rec.own_first_seq) return;
    this.ownDurable.set(rec.id, { firstSeq: rec.own_first_seq, bytes: rec.own_bytes ?? 0 });
    // A quiet topic's one file, whole: it must be there as it was (a wake reads nothing else).
    this.mustExist.set(rec.id, [rec.own_first_seq, rec.own_bytes ?? 0]);
  }

  /**
   * Feeds a recovering topic its segments one at a time (`ahead`: listed and maybe read already).
   * The newest may have a torn tail, cut off, but never below what its snapshot part records as
   * durable (ownDurable): damage there is a CorruptionError, as in a sealed segment.
   */
  private async loadSegmentsOf(actor: TopicActor, topicId: number, ahead?: ReadAhead): Promise<void> {
    const listed = this.ownListed.get(topicId);
    this.ownListed.delete(topicId);
    const durable = this.ownDurable.get(topicId);
    this.ownDurable.delete(topicId);
    const must = this.mustExist.get(topicId);
    this.mustExist.delete(topicId);
    const segs = ahead?.segs ?? listed ?? (await this.listOwn(topicId));
    if (must && this.filesTrusted) this.checkPresent(topicId, must, segs);
    for (let i = 0; i < segs.length; i++) {
      const first = segs[i]!.firstSeq;
      // Below what the snapshot records of the file nothing is a torn tail: those bytes were durable.
      const covered = Math.max(durable?.firstSeq === first ? durable.bytes : 0, must ? listedBytes(must, first) : 0);
      const seg =
        i === 0 && ahead?.first ? await ahead.first : await readSegment(this.host.fsx, topicId, segs[i]!, i === segs.length - 1, covered);
      // A compacted file: cold reads map the original offsets the actor indexes through it.
      this.host.segments.sealed.noteLoaded(topicId, seg.firstSeq, seg.relocation);
      // The newest one's bytes past `covered` are fsynced by the next checkpoint, which records them.
      if (i === segs.length - 1 && !seg.relocation) this.host.segments.noteLoaded(topicId, seg.firstSeq, seg.size, covered);
      this.host.input(actor, { k: 'segment', seg });
    }
  }

  /**
   * Every file of `must` ([first seq, bytes, ...]) is among the topic's segment files. Checked
   * before any is read: the replay must not write a topic's frames after a gap. The topic's
   * directory is there, and a delete renames it away whole (SegmentStore.dropTopic), so a file
   * of it that is missing is lost, not deleted.
   */
  private checkPresent(topicId: number, must: readonly number[], segs: readonly SegmentFile[]): void {
    for (let i = 0; i < must.length; i += 2) {
      if (segs.some((s) => s.firstSeq === must[i])) continue;
      const file = path.join(topicDir(this.host.dataDir, topicId), segmentFileName(must[i]!));
      throw new CorruptionError(
        file,
        `missing: the snapshot lists it as a segment file of a live topic (${must[i + 1]} bytes); its records would be skipped`,
      );
    }
  }

  /**
   * Lists (and, for a one-segment topic, reads) the segments of a topic created after the
   * snapshot, ahead of the replay reaching its TOPIC_CREATE. Memory: at most READ_AHEAD segments
   * wait, and a segment this new holds less than the WAL since the checkpoint (a checkpoint
   * follows every SERVICE_CHECKPOINT_WAL_BYTES).
   */
  private async readAhead(topicId: number): Promise<ReadAhead> {
    // Without own segments, held frames are matched against the replay instead (deferHeld).
    const held = this.topicDirs.has(topicId) ? this.packs.readHeld(topicId) : undefined;
    held?.catch(() => undefined); // awaited (and reported) below
    const segs = this.topicDirs.has(topicId) ? await this.listOwn(topicId) : [];
    const first = segs.length === 1 ? readSegment(this.host.fsx, topicId, segs[0]!, true) : undefined;
    first?.catch(() => undefined); // awaited (and reported) by loadSegmentsOf
    return { held: await held, segs, first };
  }

  /**
   * Step 3 is over (loadSnapshot or loadSection settled): replayed chunks may apply. When it
   * failed (damage found: start-up is refused), they are only handed back, never applied: a
   * topic whose segments did not load would write replayed frames over its file from offset 0.
   */
  snapshotLoaded(failed = false): void {
    this.loadFailed = failed;
    this.openReplay();
  }

  /** Step 3 failed: nothing replayed may apply (snapshotLoaded). */
  private loadFailed = false;

  /** Step 4: a chunk of frames from the WAL thread, or the end of the scan. */
  onWal(m: Extract<WalOut, { t: 'replay' | 'replayDone' }>): void {
    if (m.t === 'replay') {
      this.chain = this.chain.then(async () => {
        if (!this.loadFailed) await this.applyChunk(Buffer.from(m.buf, 0, m.bytes));
        // Replayed frames leave no view of the chunk behind (replayFrame copies the appends it
        // keeps): its buffer goes back to the WAL thread for a later chunk.
        this.host.replayAck(m.bytes, m.buf);
      });
    } else {
      void this.chain.then(async () => {
        if (!this.loadFailed) await this.packs.endReplay();
        this.replayDone?.();
      });
    }
  }

  /** Offsets of the TOPIC_CREATE frames of topics not loaded from the snapshot, in order. */
  private newTopicCreates(buf: Buffer): { off: number; topicId: number }[] {
    const out: { off: number; topicId: number }[] = [];
    for (let off = 0; off < buf.length;) {
      const p = probeFrame(buf, off, buf.length, false);
      if (!p.ok) break; // applyChunk reports it
      if (
        p.frame.type === FrameType.TOPIC_CREATE &&
        !this.host.byTopicId.has(p.frame.topicId) &&
        this.host.sleepers.asleepHead(p.frame.topicId) === undefined
      )
        out.push({ off, topicId: p.frame.topicId });
      off += p.frame.size;
    }
    return out;
  }

  private async applyChunk(buf: Buffer): Promise<void> {
    // Topics created in this chunk are listed and read READ_AHEAD at a time, ahead of the replay.
    const creates = this.newTopicCreates(buf);
    const ahead = new Map<number, Promise<ReadAhead>>();
    let started = 0;
    const topUp = () => {
      while (started < creates.length && ahead.size < READ_AHEAD) {
        const c = creates[started++]!;
        const p = this.readAhead(c.topicId);
        p.catch(() => undefined); // awaited (and reported) when the replay gets there
        ahead.set(c.off, p);
      }
    };
    topUp();
    let off = 0;
    while (off < buf.length) {
      // The WAL thread CRC-checked every frame it sends.
      const p = probeFrame(buf, off, buf.length, false);
      if (!p.ok) throw new CorruptionError('WAL replay chunk', `bad frame (${p.reason})`, off);
      const f = p.frame;
      // A frame of a topic restored asleep: an append its row holds already (from the scan after
      // the cut) and a seq reservation leave it asleep; anything else loads it first.
      const asleepHead = this.host.sleepers.asleepHead(f.topicId);
      if (asleepHead !== undefined) {
        if (f.type === FrameType.APPEND && readAppendHead(buf, f).firstSeq <= asleepHead) {
          this.stats.skipped++;
          off += f.size;
          continue;
        }
        if (f.type === FrameType.SEQ_RESERVE) {
          this.host.sleepers.reserveAsleep(f.topicId, readU64(buf, f.bodyOff));
          off += f.size;
          continue;
        }
        await this.wake(f.topicId);
      }
      let actor: TopicActor | undefined;
      if (f.type === FrameType.TOPIC_CREATE) {
        const body = decodeJsonBody(buf, f) as { name: string; config: TopicConfig; created_ms: number };
        actor = this.host.actorFor(body.name);
        const pending = ahead.get(off);
        ahead.delete(off);
        topUp();
        this.host.byTopicId.set(f.topicId, actor);
        // A topic created after the snapshot may already have segments: index them (cold)
        // instead of replaying, copying and rewriting every append they hold.
        const known = actor.current?.id === f.topicId; // already loaded from the snapshot
        const read = known ? undefined : await (pending ?? this.readAhead(f.topicId));
        const deferHeld = read !== undefined && !read.held && this.packs.hasHeld(f.topicId);
        if (read && (read.segs.length > 0 || read.held || deferHeld)) {
          const part: TopicPart = { id: f.topicId, name: body.name, config: body.config, created_ms: body.created_ms, reserved: 0 };
          this.host.input(actor, { k: 'load', part });
          if (read.held) this.packs.adopt(actor, f.topicId, read.held);
          else if (deferHeld) this.packs.deferHeld(actor, f.topicId);
          await this.loadSegmentsOf(actor, f.topicId, read);
          off += f.size;
          continue;
        }
      } else {
        actor = this.host.byTopicId.get(f.topicId);
      }
      if (actor && this.packs.isDeferred(f.topicId)) {
        // The topic's next held frame, fed from these bytes; any other frame but a seq
        // reservation (which touches no record) first has the held frames read back.
        if (f.type === FrameType.APPEND && this.packs.replayedAppend(f.topicId, buf, off, f.size, readAppendHead(buf, f).firstSeq)) {
          this.stats.appends++;
          off += f.size;
          continue;
        }
        if (f.type !== FrameType.SEQ_RESERVE) await this.packs.settleDeferred(f.topicId);
      }
      if (actor) {
        if (f.type === FrameType.APPEND) this.stats.appends++;
        this.host.input(actor, { k: 'frame', frame: buf.subarray(off, off + f.size) });
        if (f.type === FrameType.TOPIC_DELETE && !actor.current) this.host.segments.dropTopic(f.topicId);
      }
      off += f.size;
    }
  }

  /**
   * The highest boot epoch of a topic whose packed frames are held (-1: none): once the pack scan
   * is done (step 3 settled), for the boot epoch after a WAL scan that dropped frames.
   */
  get heldEpochMax(): number {
    return this.packs.heldEpochMax;
  }

  /**
   * Step 5: pads reservations and counts topics. Returns how many topics are live, and which of
   * `dirIds` (the ids of the topic directories on disk, from main) are live topics of this
   * worker; main removes the directories no worker claims (orphans.ts). Only those few ids cross
   * back: a list of every live id (a million at times) took main most of a second to gather into
   * a Set. Also the highest router id any of its topics holds progress of (RouterIdFloor), one
   * number, not the tables, and the packs holding frames no topic claimed, which main keeps when
   * the WAL scan dropped frames (orphans.ts).
   */
  finish(dirIds: readonly number[]): RecoveryFinish {
    let loaded = 0;
    let floor: RouterIdFloor | null = null;
    this.ownDurable.clear(); // parts of topics with no directory left
    // A topic whose part lists files but that has no directory: deleted since the cut (the replay
    // dropped it), or its directory was lost.
    if (this.filesTrusted)
      for (const [id, must] of this.mustExist) {
        if (this.host.byTopicId.get(id)?.current?.id !== id) continue;
        const file = path.join(topicDir(this.host.dataDir, id), segmentFileName(must[0]!));
        throw new CorruptionError(file, `missing with its whole directory: the snapshot lists it as a segment file of a live topic`);
      }
    this.mustExist.clear();
    this.host.resetRngs();
    for (const a of this.host.actors) {
      if (!a.current) continue;
      // Router progress lives only in loaded topics (a router dest never sleeps: dormant.ts).
      const max = a.current.applied?.maxId() ?? 0;
      if (max > (floor?.id ?? 0)) floor = { id: max, topic: a.current.name };
      this.host.input(a, { k: 'finish' });
      this.host.byTopicId.set(a.current.id, a);
      loaded++;
    }
    // Ids of instances deleted during the replay still point at their (dropped) actors.
    for (const [id, a] of this.host.byTopicId) if (a.current?.id !== id) this.host.byTopicId.delete(id);
    // Live: loaded (an actor with that instance), or restored asleep and untouched since.
    const { sleepers } = this.host;
    const liveDirIds = dirIds.filter((id) => this.host.byTopicId.has(id) || sleepers.isRestoredAsleep(id));
    const asleep = sleepers.endRecovery();
    return {
      topics: loaded + asleep,
      appends: this.stats.appends,
      liveDirIds,
      routerIdFloor: floor,
      unclaimedPacks: [...this.packs.unclaimedPacks],
    };
  }
}

/** A sleeping topic's record from a section's part (its own file checked apart: ownFileAsAtCut). */
function recordOf(cur: PartCursor): DormantTopic {
  // Field by field: an object spread of the part was most of this at 100k such topics.
  const d: DormantTopic = {
    id: cur.id,
    name: cur.name,
    config: cur.config,
    created_ms: cur.created_ms,
    reserved: cur.reserved,
    head: cur.head,
    count: cur.count,
    bytes: cur.bytes,
    earliest: cur.earliest,
    last_ts_ms: cur.last_ts_ms,
    first_ts_ms: cur.first_ts_ms,
    last_write_ms: null,
    last_read_ms: null,
    last_consumed_ms: null,
    packed_bytes: cur.packed_bytes,
    own_first_seq: cur.own_first_seq,
    own_bytes: cur.own_bytes,
  };
  const retention = cur.retention;
  if (retention) Object.assign(d, retention);
  if (cur.queue !== undefined) d.queue = cur.queue;
  return d;
}

/** The topic's directory holds exactly its own segment file of the cut, at the size it had then. */
async function ownFileAsAtCut(fsx: Fs, dataDir: string, rec: DormantTopic): Promise<boolean> {
  const segs = await listSegments(fsx, dataDir, rec.id);
  if (segs.length !== 1 || segs[0]!.firstSeq !== rec.own_first_seq) return false;
  // A file that cannot be looked at loads: the load reports what is wrong with it.
  return (await fsx.stat(segs[0]!.file).catch(() => undefined))?.size === rec.own_bytes;
}

/** The bytes `must` ([first seq, bytes, ...]) lists for the file that starts at `first`, or 0. */
function listedBytes(must: readonly number[], first: number): number {
  for (let i = 0; i < must.length; i += 2) if (must[i] === first) return must[i + 1]!;
  return 0;
}

/** Ids of the topic directories under topics/ (the topics that have own segment files). */
async function topicDirIds(fsx: Fs, dataDir: string): Promise<Set<number>> {
  const ids = new Set<number>();
  for (const e of await listTopicDirs(fsx, dataDir)) if (e.id !== undefined) ids.add(e.id);
  return ids;
}
