// SegmentStore: the topic worker's writer of segment files (DESIGN 2.4). Frames are written at
// the offset their actor placed them (so the actor can find them again without asking), after
// the WAL reported them written, with async fs on libuv's pool. Runs in a topic worker thread.
// Invariant: operations on one topic run in order (a promise chain per topic).
import path from 'node:path';
import { fsyncDir, type Fs, type FsFile } from './fs.js';
import type { SegmentPlacement } from '../actors/ctx.js';
import { segmentFileName, topicDir } from './layout.js';

interface PendingWrite {
  place: SegmentPlacement;
  frame: Buffer;
  onWritten: (() => void) | undefined;
}

interface TopicFiles {
  chain: Promise<void>;
  /** Frames waiting for the topic's next write; consecutive ones go out in one writev. */
  pending: PendingWrite[];
  drainQueued: boolean;
  segFirstSeq: number;
  fd: FsFile | undefined;
  dirty: boolean;
  dirCreated: boolean;
}

export class SegmentStore {
  private readonly topics = new Map<number, TopicFiles>();
  private failed: Error | undefined;

  constructor(
    private readonly fsx: Fs,
    private readonly dataDir: string,
  ) {}

  private files(topicId: number): TopicFiles {
    let t = this.topics.get(topicId);
    if (!t) {
      t = { chain: Promise.resolve(), pending: [], drainQueued: false, segFirstSeq: -1, fd: undefined, dirty: false, dirCreated: false };
      this.topics.set(topicId, t);
    }
    return t;
  }

  private enqueue(t: TopicFiles, op: () => Promise<void>): void {
    t.chain = t.chain.then(op).catch((err: Error) => {
      // A failed segment write is not data loss (the WAL still holds the frame) but the
      // checkpoint must not trim the WAL past it; remember the failure and refuse checkpoints.
      this.failed = err;
    });
  }

  append(place: SegmentPlacement, frame: Buffer, onWritten?: () => void): void {
    const t = this.files(place.topicId);
    t.pending.push({ place, frame, onWritten });
    if (t.drainQueued) return;
    t.drainQueued = true;
    this.enqueue(t, () => this.drain(t));
  }

  /** Writes every pending frame of a topic: one writev per run of contiguous frames. */
  private async drain(t: TopicFiles): Promise<void> {
    const batch = t.pending;
    t.pending = [];
    t.drainQueued = false;
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
      await fd.writev(
        batch.slice(i, j).map((w) => w.frame),
        first.offset,
      );
      t.dirty = true;
      for (let k = i; k < j; k++) batch[k]!.onWritten?.();
      i = j;
    }
  }

  private async openSegment(t: TopicFiles, place: SegmentPlacement): Promise<FsFile> {
    if (t.segFirstSeq === place.segFirstSeq && t.fd) return t.fd;
    if (t.fd) {
      await t.fd.sync();
      await t.fd.close();
    }
    const dir = topicDir(this.dataDir, place.topicId);
    if (!t.dirCreated) {
      await this.fsx.mkdir(dir);
      t.dirCreated = true;
    }
    t.fd = await this.fsx.open(path.join(dir, segmentFileName(place.segFirstSeq)), 'r+c');
    t.segFirstSeq = place.segFirstSeq;
    t.dirty = true;
    return t.fd;
  }

  /** Waits for every queued write, then fsyncs dirty files and their directories. */
  async flushAll(): Promise<void> {
    const dirs = new Set<string>();
    await Promise.all(
      [...this.topics.entries()].map(async ([id, t]) => {
        await t.chain;
        if (t.dirty && t.fd) {
          await t.fd.sync();
          t.dirty = false;
          dirs.add(topicDir(this.dataDir, id));
        }
      }),
    );
    for (const d of dirs) await fsyncDir(this.fsx, d);
    if (this.failed) throw this.failed;
  }

  /** Unlinks a segment whose records are all gone (after the queued writes of its topic). */
  async unlinkSegment(topicId: number, firstSeq: number): Promise<void> {
    const t = this.topics.get(topicId);
    if (t) await t.chain;
    if (t?.fd && t.segFirstSeq === firstSeq) return; // never the open (active) one
    await this.fsx.rm(path.join(topicDir(this.dataDir, topicId), segmentFileName(firstSeq)));
  }

  /** Forgets a deleted topic instance and removes its directory in the background. */
  dropTopic(topicId: number): void {
    const t = this.topics.get(topicId);
    this.topics.delete(topicId);
    const dir = topicDir(this.dataDir, topicId);
    const drop = async () => {
      if (t?.fd) await t.fd.close();
      await this.fsx.rm(dir);
    };
    (t ? t.chain.then(drop) : drop()).catch(() => undefined);
  }

  /** Reads [offset, offset+len) of a segment (cold reads), after queued writes of the topic. */
  async readRange(topicId: number, segFirstSeq: number, offset: number, len: number): Promise<Buffer> {
    const t = this.topics.get(topicId);
    if (t) await t.chain;
    const fh = await this.fsx.open(path.join(topicDir(this.dataDir, topicId), segmentFileName(segFirstSeq)), 'r');
    try {
      const buf = Buffer.allocUnsafeSlow(len);
      const bytesRead = await fh.read(buf, 0, len, offset);
      if (bytesRead !== len) throw new Error(`short segment read ${bytesRead}/${len}`);
      return buf;
    } finally {
      await fh.close();
    }
  }

  async close(): Promise<void> {
    await this.flushAll().catch(() => undefined);
    for (const t of this.topics.values()) await t.fd?.close().catch(() => undefined);
  }
}
