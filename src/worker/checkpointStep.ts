// A topic worker's part of a checkpoint (DESIGN 2.5): step 1 marks the WAL stream, waits until
// everything submitted before the mark is written and in the segments and packs, fsyncs them and
// returns this worker's snapshot parts, already encoded as JSON bytes, with the packs it holds
// nothing live in; step 5, once the snapshot is durable, unlinks the segments its floors made
// wholly dead (a packed first segment is released from the pack map instead: its pack is
// unlinked by main once no worker holds anything live in it, at a later checkpoint) and
// forgets the packs main unlinked. Parts may include effects of frames after the mark; replay
// is idempotent.
import type { TopicActor } from '../actors/topic/topicActor.js';
import { retentionPart } from '../actors/topic/replay.js';
import type { SegmentStore } from '../storage/segmentStore.js';
import type { WalLink } from './walLink.js';
import { crc32 } from 'node:zlib';
import { SectionWriter } from '../storage/snapshotSection.js';
import { partOf, type DormantTopic } from '../actors/topic/dormant.js';

export class WorkerCheckpoints {
  /** Segments to unlink once the snapshot of a mark is durable. */
  private readonly reclaimAfter = new Map<number, { topicId: number; firstSeq: number; packed: boolean }[]>();

  constructor(
    private readonly wal: WalLink,
    private readonly segments: SegmentStore,
    private readonly actors: () => Iterable<TopicActor>,
    /** Sleeping topics (dormancy.ts): quiet, so their records are their parts. */
    private readonly sleeping: () => Iterable<DormantTopic>,
  ) {}

  async prepare(markId: number, final: boolean): Promise<{ section: Uint8Array; crc: number; topics: number; deadPacks: string[] }> {
    await this.wal.markAndWaitWritten(markId);
    await this.segments.flushAll();
    const packs = this.segments.packs;
    const out = new SectionWriter();
    const reclaim: { topicId: number; firstSeq: number; packed: boolean }[] = [];
    for (const a of this.actors()) {
      const inst = a.current;
      if (!inst) continue;
      // Whole sealed segments below the first live seq are dead: reclaim them once this
      // snapshot (which records the floors that killed them) is durable (DESIGN 2.6).
      const segs = inst.segment.firstSeqs;
      const earliest = inst.earliest();
      for (let k = inst.segment.reclaimed; k < segs.length - 1 && segs[k + 1]! <= earliest; k++) {
        reclaim.push({ topicId: inst.id, firstSeq: segs[k]!, packed: k === 0 && inst.segment.packed });
        inst.segment.reclaimed = k + 1;
      }
      // A final checkpoint follows a drain: every assigned seq is durable, so no padding is owed
      // and a clean restart continues at head + 1. Otherwise the submitted ceiling is kept.
      const reserved = final ? inst.assigned : Math.max(inst.reserve.submitted, inst.assigned);
      // A quiet topic's watermarks let recovery keep it asleep (no read, no index) until used.
      const quiet = packs ? a.dormancy(packs.map.size(inst.id)) : 'no';
      out.add({ id: inst.id, name: inst.name, config: inst.config, created_ms: inst.createdAtMs, reserved, ...retentionPart(inst) }, packs?.map.runsOf(inst.id), typeof quiet === 'object' ? quiet : undefined);
    }
    // Every seq up to a sleeping topic's head is durable: a final checkpoint records that head
    // (a clean restart continues at head + 1, as for awake topics), another its ceiling.
    for (const d of this.sleeping()) out.add(partOf(d, final ? d.head : d.reserved), packs?.map.runsOf(d.id), d);
    this.reclaimAfter.set(markId, reclaim);
    // Encoded here, off the HTTP thread; main only checks the head and writes the bytes.
    const { bytes, topics } = out.finish(packs?.sectionPacks() ?? { whole: [], tail: null });
    return { section: bytes, crc: crc32(bytes), topics, deadPacks: packs?.deadPacks() ?? [] };
  }

  async committed(markId: number, removedPacks: readonly string[]): Promise<number> {
    await this.segments.packs?.forget(removedPacks);
    const list = this.reclaimAfter.get(markId) ?? [];
    this.reclaimAfter.delete(markId);
    for (const r of list) await this.segments.unlinkSegment(r.topicId, r.firstSeq, r.packed);
    return list.length;
  }
}
