// A topic worker's part of recovery (DESIGN 2.7): instances from the snapshot with their
// segments indexed (cold), then the WAL frames after the checkpoint, streamed by the WAL thread
// in chunks and applied in order, then the end of recovery (reservations padded, topics
// counted). Every change to an actor goes through an input, so recovery is traced like the rest.
import type { WalOut } from '../core/messages/wal.js';
import type { ActorInput } from '../actors/topic/inputs.js';
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { TopicConfig } from '../actors/topic/config.js';
import type { ReplayStats } from '../actors/topic/replay.js';
import { decodeJsonBody, probeFrame } from '../wal/frame.js';
import { FrameType } from '../wal/format.js';
import type { TopicPart } from '../storage/snapshot.js';
import type { SegmentStore } from '../storage/segmentStore.js';
import type { Fs } from '../storage/fs.js';
import { listSegments, readSegment } from '../storage/segmentLoad.js';

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
  replayAck(bytes: number): void;
}

export class WorkerRecovery {
  private readonly stats: ReplayStats = { appends: 0, skipped: 0 };
  private replayDone: (() => void) | undefined;
  readonly replayed = new Promise<void>((r) => (this.replayDone = r));
  /** Replay chunks are applied in order; a chunk may wait for a topic's segments to load. */
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly host: RecoveryHost) {}

  /** Step 3: instances from the snapshot, their records indexed from segments (cold). */
  async loadSnapshot(parts: TopicPart[]): Promise<void> {
    for (const part of parts) {
      const actor = this.host.actorFor(part.name);
      this.host.input(actor, { k: 'load', part });
      this.host.byTopicId.set(part.id, actor);
      await this.loadSegmentsOf(actor, part.id);
    }
  }

  /** Feeds a recovering topic its segments one at a time. */
  private async loadSegmentsOf(actor: TopicActor, topicId: number): Promise<void> {
    const segs = await listSegments(this.host.fsx, this.host.dataDir, topicId);
    for (let i = 0; i < segs.length; i++) {
      const seg = await readSegment(this.host.fsx, topicId, segs[i]!, i === segs.length - 1);
      this.host.input(actor, { k: 'segment', seg });
    }
  }

  /** Step 4: a chunk of frames from the WAL thread, or the end of the scan. */
  onWal(m: Extract<WalOut, { t: 'replay' | 'replayDone' }>): void {
    if (m.t === 'replay') {
      this.chain = this.chain.then(async () => {
        await this.applyChunk(Buffer.from(m.buf));
        this.host.replayAck(m.buf.byteLength);
      });
    } else {
      void this.chain.then(() => this.replayDone?.());
    }
  }

  private async applyChunk(buf: Buffer): Promise<void> {
    let off = 0;
    while (off < buf.length) {
      // The WAL thread CRC-checked every frame it sends.
      const p = probeFrame(buf, off, buf.length, false);
      if (!p.ok) throw new Error(`replay chunk holds a bad frame at ${off}: ${p.reason}`);
      const f = p.frame;
      let actor: TopicActor | undefined;
      if (f.type === FrameType.TOPIC_CREATE) {
        const body = decodeJsonBody(buf, f) as { name: string; config: TopicConfig; created_ms: number };
        actor = this.host.actorFor(body.name);
        this.host.byTopicId.set(f.topicId, actor);
        // A topic created after the snapshot may already have segments: index them (cold)
        // instead of replaying, copying and rewriting every append they hold.
        const known = actor.current?.id === f.topicId; // already loaded from the snapshot
        if (!known && (await listSegments(this.host.fsx, this.host.dataDir, f.topicId)).length > 0) {
          const part: TopicPart = { id: f.topicId, name: body.name, config: body.config, created_ms: body.created_ms, reserved: 0 };
          this.host.input(actor, { k: 'load', part });
          await this.loadSegmentsOf(actor, f.topicId);
          off += f.size;
          continue;
        }
      } else {
        actor = this.host.byTopicId.get(f.topicId);
      }
      if (actor) {
        if (f.type === FrameType.APPEND) this.stats.appends++;
        this.host.input(actor, { k: 'frame', frame: buf.subarray(off, off + f.size) });
        if (f.type === FrameType.TOPIC_DELETE && !actor.current) this.host.segments.dropTopic(f.topicId);
      }
      off += f.size;
    }
  }

  /** Step 5: pads reservations and counts topics. Returns live topic ids. */
  finish(): { topics: number; appends: number; ids: number[] } {
    const ids: number[] = [];
    this.host.resetRngs();
    for (const a of this.host.actors) {
      if (!a.current) continue;
      this.host.input(a, { k: 'finish' });
      this.host.byTopicId.set(a.current.id, a);
      ids.push(a.current.id);
    }
    return { topics: ids.length, appends: this.stats.appends, ids };
  }
}
