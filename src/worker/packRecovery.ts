// The pack side of a topic worker's recovery (docs/ARCHITECTURE.md "Pack files"): one sequential
// scan of the pack files, oldest first, every frame CRC-checked, each frame of a topic this
// worker loaded from the snapshot fed to its actor in order (its packed first segment, indexed
// cold) and its place noted in the PackMap. Frames of topics not known yet are held by position:
// a topic created after the snapshot gets them when the WAL replay reaches its TOPIC_CREATE,
// before any of its replayed appends (which then skip what the packs hold, so replay never
// writes a second copy). Held frames nobody claims by the end of the replay are dead bytes.
// Which packs: those this worker wrote under the same worker count; every pack written under
// another count (its topics may be anywhere now). The writer's index modulo the worker count
// names the one worker that repairs a torn tail, so two workers never truncate one file.
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { ActorInput } from '../actors/topic/inputs.js';
import type { Fs } from '../storage/fs.js';
import type { PackStore } from '../storage/packStore.js';
import { listPacks, readPack, ReuseBuffer } from '../storage/packScan.js';
import { readAppendHead } from '../wal/frame.js';
import { forEachFrame } from '../storage/segmentLoad.js';

/** Numbers per held frame: pack idx, offset, length, first seq, seq after it. */
const HELD_FIELDS = 5;
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

export interface PackRecoveryHost {
  readonly fsx: Fs;
  readonly dataDir: string;
  readonly packs: PackStore;
  readonly byTopicId: Map<number, TopicActor>;
  input(actor: TopicActor, input: ActorInput): void;
}

export class PackRecovery {
  private readonly held = new Map<number, number[]>();
  /**
   * Read buffers reused by readHeld: every frame fed to an actor during recovery is indexed cold
   * (no text keeps a view of it), so once adopt has fed them the buffer is free again. A fresh
   * buffer per topic was ~2.5 KB of garbage per topic created since the snapshot (issue 15).
   */
  private readonly spares: Buffer[] = [];

  constructor(
    private readonly host: PackRecoveryHost,
    private readonly workerIndex: number,
    private readonly workers: number,
  ) {}

  /**
   * Step 3b, after the snapshot's instances exist and before their own segments load: feeds the
   * packed frames of known topics, holds those of topics created at or after the snapshot's boot
   * (`snapshotEpoch`), skips the rest (deleted instances).
   */
  async scan(names: readonly string[], snapshotEpoch: number): Promise<void> {
    const { packs, byTopicId } = this.host;
    /** Per topic, the seq after its last packed frame: a range seen before is never fed twice. */
    const next = new Map<number, number>();
    // Frames are fed and indexed cold within the walk of each pack: one buffer serves every pack.
    const scratch = new ReuseBuffer();
    for (const p of listPacks(names)) {
      if (p.workers === this.workers && p.writer !== this.workerIndex) continue; // not ours
      const buf = await readPack(this.host.fsx, this.host.dataDir, p, p.writer % this.workers === this.workerIndex, scratch);
      const idx = packs.map.register(p).idx;
      forEachFrame(buf, (f, off) => {
        const head = readAppendHead(buf, f);
        const actor = byTopicId.get(f.topicId);
        if (actor) {
          if (head.firstSeq < (next.get(f.topicId) ?? 0)) return;
          next.set(f.topicId, head.firstSeq + head.count);
          this.host.input(actor, { k: 'packed', frame: buf.subarray(off, off + f.size) });
          packs.map.add(f.topicId, idx, off, f.size);
        } else if (Math.floor(f.topicId / EPOCH_UNIT) >= snapshotEpoch) {
          let h = this.held.get(f.topicId);
          if (!h) this.held.set(f.topicId, (h = []));
          h.push(idx, off, f.size, head.firstSeq, head.firstSeq + head.count);
        }
      });
    }
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
    for (let i = 0; i < h.length; ) {
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
    if (h) {
      this.held.delete(topicId);
      let next = 0;
      for (let i = 0, k = 0; i < h.length; i += HELD_FIELDS, k++) {
        if (h[i + 3]! < next) continue;
        next = h[i + 4]!;
        this.host.input(actor, { k: 'packed', frame: held.frames[k]! });
        this.host.packs.map.add(topicId, h[i]!, h[i + 1]!, h[i + 2]!);
      }
    }
    // The inputs above indexed the frames cold and kept no view of them: the buffers are free.
    for (const b of held.spares) if (this.spares.length < SPARES_MAX) this.spares.push(b);
  }

  /** The replay is over: frames nobody claimed are dead. */
  endReplay(): void {
    this.held.clear();
  }
}
