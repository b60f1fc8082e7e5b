// A topic worker's part of a checkpoint (docs/ARCHITECTURE.md "Checkpoints and recovery"): step 1 marks the WAL stream, waits until
// everything submitted before the mark is written and in the segments and packs, fsyncs them and
// returns this worker's snapshot parts, already encoded as JSON bytes, with the packs it holds
// nothing live in; step 4, once the snapshot is durable, unlinks the segments its floors made
// wholly dead (a packed first segment is released from the pack map instead: its pack is
// unlinked by main once no worker holds anything live in it, at a later checkpoint), swaps in
// the compacted segment copies finished before step 1 (compaction.ts) and forgets the packs
// main unlinked. Parts may include effects of frames after the mark; replay
// is idempotent.
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { TopicInstance } from '../actors/topic/instance.js';
import { retentionPart } from '../actors/topic/replay.js';
import type { SegmentStore } from '../storage/segmentStore.js';
import type { WalLink } from './walLink.js';
import { SectionWriter } from '../storage/snapshotSectionWriter.js';
import type { DormantTable } from './dormantTable.js';
import type { StoredFrames } from '../actors/topic/dormant.js';
import { SleepingLines, addSleepingRow } from './sleepingLines.js';
import type { WorkerCompaction } from './compaction.js';

/** Parts encoded between two looks at the event loop. */
const TOPICS_PER_TURN = 4096;

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

/** The worker's topics, as a checkpoint reads them. */
export interface CheckpointTopics {
  actors(): Iterable<TopicActor>;
  /** The actor holding `name`, if any. */
  actor(name: string): TopicActor | undefined;
  /** Sleeping topics (dormancy.ts): quiet, so their rows are their parts and watermarks. */
  readonly sleeping: DormantTable;
  /** The worker's clock (whether a TTL topic is quiet depends on it). */
  now(): number;
  /** What the stores hold of a topic (whether it is quiet depends on it). */
  stored(topicId: number): StoredFrames;
}

interface Reclaim {
  topicId: number;
  firstSeq: number;
  packed: boolean;
}

export class WorkerCheckpoints {
  /** Segments to unlink once the snapshot of a mark is durable. */
  private readonly reclaimAfter = new Map<number, Reclaim[]>();
  /** Segments in reclaimAfter, by topic id (a topic with one pending may not sleep: a wake would read it). */
  private readonly unlinking = new Map<number, number>();

  /** Lines of sleeping topics kept from earlier checkpoints. */
  readonly lines: SleepingLines;

  constructor(
    private readonly wal: WalLink,
    private readonly segments: SegmentStore,
    /** Copies finished before a checkpoint begins are swapped in once its snapshot is durable. */
    private readonly compaction: WorkerCompaction,
    private readonly topics: CheckpointTopics,
  ) {
    this.lines = new SleepingLines(topics.sleeping, () => segments.packs?.map);
  }

  /**
   * Step 1. The packs' marks, the dead packs and the list of topics are taken in one turn, right
   * after the flush; the parts are then encoded TOPICS_PER_TURN at a time, the worker serving
   * requests in between (a million topics took seconds in one go). A part may therefore show
   * effects of frames after the mark, as it always could: recovery is idempotent, and skips what
   * its runs already hold. Each topic is encoded once, by name, as it is when its turn comes
   * (awake, or asleep since, or awake again); a topic made after the list is the WAL's.
   */
  async prepare(
    markId: number,
    final: boolean,
  ): Promise<{ section: Uint8Array[]; transfer: ArrayBuffer[]; crc: number; topics: number; deadPacks: string[] }> {
    // First: every record a finished copy left out died before this, so this snapshot says so.
    this.compaction.onPrepare(markId);
    await this.wal.markAndWaitWritten(markId);
    await this.segments.flushAll();
    const packs = this.segments.packs;
    const cut = packs?.sectionPacks() ?? { whole: [], tail: null };
    // Dead now stays dead (packs are append-only, the pack being written is never reported).
    const deadPacks = packs?.deadPacks() ?? [];
    const awake = [...this.topics.actors()];
    const sleeping = this.topics.sleeping;
    const blocks = this.lines.plan(!final);
    // Seeded with the table's configs: kept lines name configs by the table's indices.
    const out = new SectionWriter(sleeping.configList);
    const runs: number[] = [];
    // Reclaims of an earlier mark whose snapshot never became durable (its checkpoint failed;
    // checkpoints run one at a time) wait for this one's instead: still dead, floors kept.
    const reclaim: Reclaim[] = [];
    for (const [mark, list] of this.reclaimAfter) {
      if (mark < markId) {
        reclaim.push(...list);
        this.reclaimAfter.delete(mark);
      }
    }
    /** A sleeping topic was encoded whose own file was not durable whole yet (its block's lines are not kept). */
    let unsynced = false;
    const encode = (name: string, actor: TopicActor | undefined, row: number): void => {
      // Asleep at the list and still (the common case at many topics): straight from its row.
      const still = row >= 0 ? sleeping.rowIf(row, name) : undefined;
      const a = still ? undefined : actor?.current ? actor : this.topics.actor(name);
      const inst = a?.current;
      if (a && inst) return this.encodeAwake(out, a, inst, final, reclaim, runs);
      const d = still ?? sleeping.row(name);
      if (!d) return;
      // Asleep since this checkpoint's flush: its file may hold bytes not fsynced yet.
      const own = d.own_first_seq ? this.segments.durableOwn(d.id) : undefined;
      const partly = own && (own[0] !== d.own_first_seq || own[1] !== d.own_bytes) ? own : undefined;
      unsynced ||= partly !== undefined;
      addSleepingRow(out, d, final, packs?.map, runs, partly);
    };
    let n = 0;
    for (const a of awake) {
      encode(a.name, a, -1);
      if (++n % TOPICS_PER_TURN === 0) await nextTurn();
    }
    // A block is encoded within one turn, so lines kept of it are of one moment.
    for (const job of blocks) {
      if ('kept' in job) {
        out.addLines(job.kept.bytes, job.kept.lines);
        continue;
      }
      if (!final) out.beginCapture();
      const before = out.topicCount;
      unsynced = false;
      for (let i = 0; i < job.rows.length; i++) encode(job.names[i]!, undefined, job.rows[i]!);
      if (!final) {
        const bytes = out.endCapture();
        if (!unsynced) this.lines.keep(job, bytes, out.topicCount - before);
      }
      n += job.rows.length;
      if (n >= TOPICS_PER_TURN) {
        n = 0;
        await nextTurn();
      }
    }
    this.reclaimAfter.set(markId, reclaim);
    // Encoded here, off the HTTP thread; main only checks the head and writes the bytes.
    const { pieces, crc, topics, own } = out.pieces(cut);
    return { section: pieces, transfer: own, crc, topics, deadPacks };
  }

  private encodeAwake(out: SectionWriter, a: TopicActor, inst: TopicInstance, final: boolean, reclaim: Reclaim[], runs: number[]): void {
    const packs = this.segments.packs;
    // Whole sealed segments below the first live seq are dead: reclaim them once this
    // snapshot (which records the floors that killed them) is durable (docs/ARCHITECTURE.md "Retention").
    const segs = inst.segment.firstSeqs;
    const earliest = inst.earliest();
    for (let k = inst.segment.reclaimed; k < segs.length - 1 && segs[k + 1]! <= earliest; k++) {
      reclaim.push({ topicId: inst.id, firstSeq: segs[k]!, packed: k === 0 && inst.segment.packed });
      this.unlinking.set(inst.id, (this.unlinking.get(inst.id) ?? 0) + 1);
      inst.segment.reclaimed = k + 1;
    }
    // A final checkpoint follows a drain: every assigned seq is durable, so no padding is owed
    // and a clean restart continues at head + 1. Otherwise the submitted ceiling is kept.
    const reserved = final ? inst.assigned : Math.max(inst.reserve.submitted, inst.assigned);
    // A quiet topic's watermarks let recovery keep it asleep (no read, no index) until used.
    const quiet = packs ? a.dormancy(this.topics.stored(inst.id), this.topics.now()) : 'no';
    // Its newest own file as far as it is fsynced: every frame before the mark, after flushAll
    // (docs/FORMAT.md "Snapshots", `own`). Recovery never cuts that file below it.
    const own = this.segments.durableOwn(inst.id);
    let wm = typeof quiet === 'object' ? quiet : undefined;
    // Quiet, but its own file is not durable whole yet (written since the flush): a power loss
    // could take bytes its watermarks count, so it is recorded as a busy topic is.
    if (wm?.own_first_seq && (own?.[0] !== wm.own_first_seq || own[1] !== wm.own_bytes)) wm = undefined;
    const n = packs?.map.runsInto(inst.id, runs) ?? 0;
    out.add(
      { id: inst.id, name: inst.name, config: inst.config, created_ms: inst.createdAtMs, reserved, ...retentionPart(inst) },
      n > 0 ? runs.slice(0, n) : undefined,
      wm,
      wm ? undefined : own,
      wm ? undefined : this.mustExist(inst, own),
    );
  }

  /**
   * The topic's own segment files that must still be there when recovery reads this snapshot
   * (docs/FORMAT.md "Snapshots", `files`), as [first seq, bytes, ...]: every file that holds a
   * live record (a file of dead records alone may be unlinked: reclaimed, or by a compaction),
   * with no compaction waiting to swap or unlink it, and durable: sealed before the newest file
   * known fsynced (`own`, whole then, with the bytes it was sealed at; 0 for a compacted one,
   * whose size is not those), and that one up to its fsynced bytes. A record never lives again,
   * so only a later checkpoint can unlink a listed file, after a snapshot that no longer lists it.
   */
  private mustExist(inst: TopicInstance, own: readonly [number, number] | undefined): number[] | undefined {
    if (!own || own[1] === 0) return undefined;
    const seg = inst.segment;
    const gates = this.segments.sealed;
    let out: number[] | undefined;
    for (let k = seg.reclaimed; k < seg.firstSeqs.length; k++) {
      const first = seg.firstSeqs[k]!;
      if (first > own[0]) break;
      if ((k === 0 && seg.packed) || gates.isCompacting(inst.id, first)) continue;
      const last = k + 1 < seg.firstSeqs.length ? seg.firstSeqs[k + 1]! - 1 : inst.assigned;
      if (inst.index.nextLive(first, last) > last) continue;
      const bytes = first === own[0] ? own[1] : gates.relocationOf(inst.id, first) ? 0 : (seg.sealedBytes?.[k] ?? 0);
      (out ??= []).push(first, bytes);
    }
    return out;
  }

  async committed(markId: number, removedPacks: readonly string[]): Promise<number> {
    await this.segments.packs?.forget(removedPacks);
    const list = this.reclaimAfter.get(markId) ?? [];
    this.reclaimAfter.delete(markId);
    for (const r of list) {
      await this.segments.unlinkSegment(r.topicId, r.firstSeq, r.packed);
      const n = this.unlinking.get(r.topicId)! - 1;
      if (n > 0) this.unlinking.set(r.topicId, n);
      else this.unlinking.delete(r.topicId);
    }
    return list.length + (await this.compaction.onCommitted(markId));
  }

  /** A segment of the topic waits to be unlinked (a wake must not read it meanwhile). */
  unlinkPending(topicId: number): boolean {
    return this.unlinking.has(topicId);
  }
}
