// Checkpoints (docs/ARCHITECTURE.md "Checkpoints and recovery"), coordinated from the main thread so the WAL does not grow without
// bound: workers mark the WAL stream and flush their segments, the WAL thread reports the cut
// (the earliest mark position), main writes the snapshot durably, and only then are WAL files
// unlinked — those before the PREVIOUS snapshot's cut, so a damaged newest snapshot can still
// fall back to the previous one with the WAL it needs.
import type { Remote } from '../core/rpc.js';
import type { WorkerApi } from '../topicThread/workerApi.js';
import type { WalApi } from '../wal/walApi.js';
import type { WalPosition } from '../protocol/messages/wal.js';
import { encodeSnapshotV2, writeSnapshotBytes } from '../storage/snapshot.js';
import type { Fs } from '../storage/fs.js';
import { StorageState } from '../storage/storageState.js';
import { packsToUnlink } from '../storage/packMap.js';
import { packsDir } from '../format/layout.js';
import path from 'node:path';

/** How often a checkpoint is attempted while the disk is full. */
const FULL_DISK_RETRY_MS = 2000;

export class Checkpointer {
  private markId = 0;
  private running: Promise<void> | undefined;
  /** Set while a backup links files: no checkpoint may trim the WAL or unlink segments then. */
  private held: Promise<void> | undefined;
  private lastAt = Date.now();
  /** The last checkpoint failed (a timed one is never skipped then). */
  private lastFailed = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly fsx: Fs,
    private readonly dataDir: string,
    private readonly workers: Remote<WorkerApi>[],
    private readonly wal: Remote<WalApi>,
    private readonly epoch: number,
    private previousCut: WalPosition | null,
    private readonly everyMs: number,
    private readonly everyWalBytes: number,
    private readonly onError: (err: Error) => void,
    /** The storage state (StorageState): FAILED stops checkpoints, FULL hurries them. */
    private readonly storageState: () => number = () => StorageState.OK,
  ) {}

  /**
   * Runs one checkpoint; concurrent callers share the one in progress, except a final one,
   * which waits for it and then runs on its own (its snapshot must record the drained state).
   */
  async run(final = false): Promise<void> {
    while (this.held) await this.held;
    if (final) {
      await this.running?.catch(() => undefined);
      this.running = undefined;
    }
    if (!this.running) {
      this.running = this.once(final).then(
        () => this.settled(false),
        (err: unknown) => {
          this.settled(true);
          throw err;
        },
      );
    }
    return this.running;
  }

  private settled(failed: boolean): void {
    this.running = undefined;
    this.lastAt = Date.now();
    this.lastFailed = failed;
  }

  /**
   * A timed checkpoint with nothing to record: no WAL bytes and no actor input since the last
   * one began, which succeeded. At a million sleeping topics each one writes and fsyncs the
   * whole snapshot (~140 MB), once a minute on an idle server before this.
   */
  private async idle(): Promise<boolean> {
    if (this.lastFailed || (await this.wal.bytesSinceCheckpoint()) > 0) return false;
    return (await Promise.all(this.workers.map((w) => w.quietSinceCheckpoint()))).every((q) => q);
  }

  /**
   * Runs a checkpoint of its own, then `fn` with its cut while no other checkpoint can run
   * (an online backup: the snapshot stays the newest and nothing it needs is unlinked).
   */
  async withFreshCheckpoint<T>(fn: (cut: WalPosition) => Promise<T>): Promise<T> {
    while (this.held || this.running) await (this.held ?? this.running)!.catch(() => undefined);
    let release!: () => void;
    this.held = new Promise<void>((r) => (release = r));
    try {
      try {
        await this.once(false);
      } catch (err) {
        this.lastFailed = true; // the next timed checkpoint runs, idle or not
        throw err;
      }
      this.lastAt = Date.now();
      this.lastFailed = false;
      return await fn(this.previousCut!);
    } finally {
      this.held = undefined;
      release();
    }
  }

  /** `final`: at shutdown, after a drain, when every assigned seq is durable. */
  private async once(final: boolean): Promise<void> {
    const id = ++this.markId;
    const prepared = await Promise.all(this.workers.map((w) => w.checkpointPrepare(id, final)));
    const sections: { bytes: Uint8Array[]; crc: number; topics: number }[] = [];
    const deadPacks: string[][] = [];
    for (const p of prepared) {
      if (!p.ok) throw Object.assign(new Error(`a worker could not checkpoint: ${p.message}`), p.diskFull ? { code: 'ENOSPC' } : {});
      sections.push({ bytes: p.section, crc: p.crc, topics: p.topics });
      deadPacks.push(p.deadPacks);
    }
    const cut = await this.wal.waitMark(id);
    const head = { epoch: this.epoch, cut, previousCut: this.previousCut, workers: this.workers.length };
    await writeSnapshotBytes(this.fsx, this.dataDir, cut, encodeSnapshotV2(head, sections));
    await this.wal.checkpointed(cut, this.previousCut);
    this.previousCut = cut;
    // Packs nothing live is left in (by every worker's word at step 1, which the snapshot
    // reflects): a crash after this finds the topics they held gone or past them.
    const removed = packsToUnlink(deadPacks, this.workers.length);
    for (const name of removed) await this.fsx.rm(path.join(packsDir(this.dataDir), name));
    await Promise.all(this.workers.map((w) => w.checkpointCommitted(id, removed)));
  }

  /**
   * Checks once a second whether the time or WAL-size trigger has fired, and right when the
   * interval is due (so checkpoints come every SERVICE_CHECKPOINT_MS, not up to a second later:
   * compaction gives space back a checkpoint or two after records die).
   */
  start(): void {
    const tick = (): void => {
      this.check();
      // Due already (one runs, or it was just started or looked at): the next look in a second.
      const dueInMs = this.everyMs > 0 ? this.lastAt + this.everyMs - Date.now() : 0;
      this.timer = setTimeout(tick, dueInMs > 0 ? Math.min(1000, dueInMs) : 1000);
      this.timer.unref();
    };
    this.timer = setTimeout(tick, 1000);
    this.timer.unref();
  }

  private check(): void {
    const state = this.storageState();
    if (this.running || this.held || state === StorageState.FAILED) return;
    // On a full disk a checkpoint is what frees WAL files (once segments could catch up), so
    // it is tried every few seconds instead of waiting for the interval.
    const hurry = state === StorageState.FULL && Date.now() - this.lastAt >= FULL_DISK_RETRY_MS;
    const timed = this.everyMs > 0 && Date.now() - this.lastAt >= this.everyMs;
    let check: Promise<boolean>;
    if (hurry) check = Promise.resolve(true);
    else if (timed)
      check = this.idle().then((idle) => {
        if (idle) this.lastAt = Date.now(); // looked again after another interval
        return !idle;
      });
    else check = this.wal.bytesSinceCheckpoint().then((b) => this.everyWalBytes > 0 && b >= this.everyWalBytes);
    check.then((go) => (go ? this.run() : undefined)).catch((err: Error) => this.onError(err));
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
