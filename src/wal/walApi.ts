// The WAL thread's rpc facade (docs/ARCHITECTURE.md "The life of an append"): recovery's scan, the writer's start, checkpoint
// marks and cuts, trimming and drain, over the given Fs. Runs on the WAL thread
// (src/wal/walThread.ts exposes it there) or, in tests, on the caller's thread
// (test/support/inProcessThreads.ts). Topic workers reach the writer over raw ports
// (submissions in, cumulative acks out); main drives it over Comlink.
import type { MessagePort } from 'node:worker_threads';
import path from 'node:path';
import type { Fs } from '../storage/fs.js';
import type { WalIn, WalOut, WalPosition } from '../protocol/messages/wal.js';
import { GroupCommit, WalStats } from './groupCommit.js';
import { WalWriter } from './walWriter.js';
import { CHUNK_BYTES, scanWal, ScanResult, topicNameOf } from './scan.js';
import { ReplayRouting } from './replayRouting.js';
import { encodeJsonFrame } from '../format/frame.js';
import { FrameType } from '../format/constants.js';
import { listWalFiles } from './files.js';
import { walDir, walFileName } from '../format/layout.js';
import { WalSpace } from './walSpace.js';
import { spareBytesFor } from './walSpare.js';
import { threadCpuUs } from '../core/threadCpu.js';
import { invariant } from '../core/invariant.js';

/** Replay flow control: frames sent to a worker and not yet applied, at most. */
const REPLAY_WINDOW_BYTES = 32 * 1024 * 1024;
/** A replay chunk buffer's capacity: a chunk is flushed once past CHUNK_BYTES, by at most a frame or so. */
const CHUNK_BUFFER_BYTES = CHUNK_BYTES + 1024 * 1024;
/** Chunk buffers kept for reuse at most (per worker, what the flow control lets be in flight). */
const SPARE_CHUNKS_MAX = 16;
/**
 * An urgent fdatasync runs on the WAL thread itself while the last one took less than this
 * (GroupCommit.startSync): on a disk whose syncs take longer, frames submitted meanwhile would
 * wait too long behind it, and syncs go back to the libuv pool.
 */
const INLINE_SYNC_BELOW_US = 1000;

export interface WalThreadData {
  dataDir: string;
  rpcPort: MessagePort;
  workerPorts: MessagePort[];
  walFileBytes: number;
  syncIntervalMs: number;
  /** Zero-fill WAL files when they are created (SERVICE_WAL_PREALLOCATE). */
  preallocate: boolean;
  /** The supervisor's shared counters: the storage state is written here. */
  counters: SharedArrayBuffer;
  /**
   * GroupCommit's inlineSyncBelowUs; absent: INLINE_SYNC_BELOW_US. In-process worlds pass
   * Infinity so the choice never depends on how long a sync took (their fs calls must repeat).
   */
  inlineSyncBelowUs?: number;
}

export interface RecoverReply extends ScanResult {
  maxEpoch: number;
}

/**
 * The replay's flow control: at most REPLAY_WINDOW_BYTES sent to a worker and not yet applied,
 * so a slow worker (loading segments) never makes the WAL scan pile the log up in memory. Chunk
 * buffers the workers hand back are reused for later chunks: replay garbage was most of the RSS
 * right after a restart (docs/ARCHITECTURE.md "Many topics"), and at most what the flow control
 * lets be in flight is kept.
 */
class ReplayFlow {
  private readonly outstanding: number[];
  private readonly waiters: ((() => void) | undefined)[];
  private readonly spare: ArrayBuffer[] = [];
  private readonly onAck: ((m: WalIn) => void)[];

  constructor(private readonly ports: MessagePort[]) {
    this.outstanding = new Array<number>(ports.length).fill(0);
    this.waiters = new Array<(() => void) | undefined>(ports.length);
    this.onAck = ports.map((port, w) => {
      const l = (m: WalIn) => {
        if (m.t !== 'replayAck') return;
        if (m.buf && this.spare.length < SPARE_CHUNKS_MAX) this.spare.push(m.buf);
        this.outstanding[w]! -= m.bytes;
        if (this.outstanding[w]! < REPLAY_WINDOW_BYTES) this.waiters[w]?.();
      };
      port.on('message', l);
      return l;
    });
  }

  /** A buffer for the next chunk: a handed-back one if big enough, else a new one. */
  chunkBuffer(bytes: number): ArrayBuffer {
    const i = this.spare.findIndex((b) => b.byteLength >= bytes);
    if (i >= 0) return this.spare.splice(i, 1)[0]!;
    return new ArrayBuffer(Math.max(bytes, CHUNK_BUFFER_BYTES));
  }

  /** Sends `chunk` to `worker` once its window has room. */
  async emit(worker: number, chunk: Buffer): Promise<void> {
    while (this.outstanding[worker]! >= REPLAY_WINDOW_BYTES) await new Promise<void>((r) => (this.waiters[worker] = r));
    this.waiters[worker] = undefined;
    // The scan made the chunk at the start of its own ArrayBuffer: it crosses as it is.
    const ab = chunk.buffer as ArrayBuffer;
    invariant(chunk.byteOffset === 0, 'a replay chunk must start its buffer');
    this.outstanding[worker]! += chunk.length;
    const m: WalOut = { t: 'replay', buf: ab, bytes: chunk.length };
    this.ports[worker]!.postMessage(m, [ab]);
  }

  /** Stops listening for acks and tells every worker the replay is over. */
  finish(): void {
    this.ports.forEach((p, w) => p.off('message', this.onAck[w]!));
    for (const p of this.ports) p.postMessage({ t: 'replayDone' } satisfies WalOut);
  }
}

/** The boot epoch a frame shows: a topic id carries its creator's epoch in its high bits; a BOOT frame names its own. */
function epochOf(buf: Buffer, f: { topicId: number; type: number; bodyOff: number; bodyLen: number }): number {
  let epoch = f.topicId > 0 ? Math.floor(f.topicId / 0x100_0000) : 0;
  if (f.type === FrameType.BOOT) {
    const body = JSON.parse(buf.toString('utf8', f.bodyOff, f.bodyOff + f.bodyLen)) as { epoch: number };
    epoch = Math.max(epoch, body.epoch);
  }
  return epoch;
}

/** The control calls main makes to the WAL thread over Comlink. */
export class WalApi {
  private progressFraction = 0;
  /** Frames and bytes scanned, topics known, for the recovery progress log lines. */
  private readonly replay = { frames: 0, bytes: 0, topics: 0 };
  private gc: GroupCommit | undefined;
  private readonly space: WalSpace;
  /** The run's first file, being prepared since the scan ended (prepareStart). */
  private first: { fileNo: number; bootEpoch: number; writer: WalWriter; ready: Promise<void> } | undefined;

  constructor(
    private readonly data: WalThreadData,
    private readonly fsx: Fs,
    private readonly log: (msg: string) => void,
  ) {
    this.space = new WalSpace(fsx, data.dataDir, log);
  }

  private newWriter(bootEpoch: number): WalWriter {
    const fileBytes = this.data.walFileBytes;
    return new WalWriter(this.fsx, this.data.dataDir, {
      fileBytes,
      bootEpoch,
      preallocate: this.data.preallocate,
      spareBytes: spareBytesFor(fileBytes),
    });
  }

  /**
   * `idsByWorker[w]`: the ids of the snapshot's topics worker w holds (typed: a million cross
   * cheaply; none with one worker), `snapshotTopics` how many there are (progress lines).
   */
  async recover(
    from: WalPosition | undefined,
    idsByWorker: Float64Array[],
    snapshotTopics: number,
    truncate: boolean,
  ): Promise<RecoverReply> {
    const table = new ReplayRouting(idsByWorker, this.data.workerPorts.length, snapshotTopics);
    const flow = new ReplayFlow(this.data.workerPorts);
    let maxEpoch = 0;
    const res = await scanWal(this.fsx, this.data.dataDir, from, truncate, {
      route(buf, f) {
        if (f.type === FrameType.TOPIC_CREATE) return table.create(f.topicId, () => topicNameOf(buf, f));
        return table.workerOf(f.topicId);
      },
      chunkBuffer: (bytes) => flow.chunkBuffer(bytes),
      emit: (worker, chunk) => flow.emit(worker, chunk),
      progress: (p) => {
        if (p > this.progressFraction) this.progressFraction = p;
      },
      seen: (buf, f) => {
        this.replay.frames++;
        this.replay.bytes += f.size;
        this.replay.topics = table.size;
        maxEpoch = Math.max(maxEpoch, epochOf(buf, f));
      },
    });
    flow.finish();
    return { ...res, maxEpoch };
  }

  progress(): number {
    return this.progressFraction;
  }

  replayStatus(): { fraction: number; frames: number; bytes: number; topics: number } {
    return { fraction: this.progressFraction, ...this.replay };
  }

  /**
   * Recovery, once the scan is over: prepares the run's first file (header, zero fill, fsync)
   * while the workers still apply the replay, so `start` finds it ready.
   */
  prepareStart(fileNo: number, bootEpoch: number): void {
    const writer = this.newWriter(bootEpoch);
    this.first = { fileNo, bootEpoch, writer, ready: writer.prepareFirst(fileNo) };
  }

  /**
   * Starts the writer in a new file whose first frame is the BOOT frame (the file prepareStart
   * made, or one made now). On a full disk the file (and BOOT) wait for space while reads are
   * served (the storage state says FULL). `covered`: the cut of the snapshot recovery loaded.
   */
  async start(fileNo: number, bootEpoch: number, bootSeed: string, covered: WalPosition | undefined): Promise<void> {
    this.space.coveredBy(covered);
    const first = this.first;
    const prepared = first?.fileNo === fileNo && first.bootEpoch === bootEpoch ? first : undefined;
    this.first = undefined;
    await prepared?.ready;
    const writer = prepared?.writer ?? this.newWriter(bootEpoch);
    const data = this.data;
    this.gc = new GroupCommit(
      writer,
      data.workerPorts,
      data.syncIntervalMs,
      new Int32Array(data.counters),
      this.log,
      this.space,
      data.inlineSyncBelowUs ?? INLINE_SYNC_BELOW_US,
    );
    this.gc.start(fileNo, encodeJsonFrame(FrameType.BOOT, 0, { epoch: bootEpoch, seed: bootSeed }));
  }

  waitMark(id: number): Promise<WalPosition> {
    return this.gc!.waitMark(id);
  }

  /**
   * A checkpoint's snapshot at `cut` is durable: unlinks the WAL files wholly before `keepFrom`
   * (the previous snapshot's cut, kept for a fallback to it).
   */
  checkpointed(cut: WalPosition, keepFrom: WalPosition | null): number {
    this.space.coveredBy(cut);
    let removed = 0;
    for (const n of keepFrom ? listWalFiles(this.fsx, this.data.dataDir) : []) {
      if (n >= keepFrom!.fileNo) break;
      this.fsx.unlinkSync(path.join(walDir(this.data.dataDir), walFileName(n)));
      removed++;
    }
    if (this.gc) this.gc.bytesSinceCheckpoint = 0;
    return removed;
  }

  bytesSinceCheckpoint(): number {
    return this.gc?.bytesSinceCheckpoint ?? 0;
  }

  /** This thread's CPU time in µs (the stage clock's per-thread CPU; debug). */
  threadCpuUs(): number | undefined {
    return threadCpuUs();
  }

  stats(): WalStats | undefined {
    return this.gc?.snapshotStats();
  }

  async drain(): Promise<void> {
    await this.gc?.drain();
    this.gc?.stop();
  }

  lastFileNo(): number {
    return listWalFiles(this.fsx, this.data.dataDir).at(-1) ?? 0;
  }

  /**
   * Clears the writer's timers (sync interval, space retries) for good and does nothing else,
   * no I/O: for an in-process host abandoning its world after a simulated crash.
   */
  stop(): void {
    this.gc?.stop();
  }
}

export function createWalApi(data: WalThreadData, fsx: Fs, log: (msg: string) => void): WalApi {
  return new WalApi(data, fsx, log);
}
