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
import { threadCpuUs } from '../core/threadCpu.js';
import { invariant } from '../core/invariant.js';

/** Replay flow control: frames sent to a worker and not yet applied, at most. */
const REPLAY_WINDOW_BYTES = 32 * 1024 * 1024;
/** A replay chunk buffer's capacity: a chunk is flushed once past CHUNK_BYTES, by at most a frame or so. */
const CHUNK_BUFFER_BYTES = CHUNK_BYTES + 1024 * 1024;
/** Chunk buffers kept for reuse at most (per worker, what the flow control lets be in flight). */
const SPARE_CHUNKS_MAX = 16;

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
}

export interface RecoverReply extends ScanResult {
  maxEpoch: number;
}

export function createWalApi(data: WalThreadData, fsx: Fs, log: (msg: string) => void) {
  let progress = 0;
  /** Frames and bytes scanned, topics known, for the recovery progress log lines. */
  const replay = { frames: 0, bytes: 0, topics: 0 };
  let gc: GroupCommit | undefined;
  const space = new WalSpace(fsx, data.dataDir, log);
  /** The run's first file, being prepared since the scan ended (prepareStart). */
  let first: { fileNo: number; bootEpoch: number; writer: WalWriter; ready: Promise<void> } | undefined;
  const newWriter = (bootEpoch: number) =>
    new WalWriter(fsx, data.dataDir, { fileBytes: data.walFileBytes, bootEpoch, preallocate: data.preallocate });

  return {
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
      const workers = data.workerPorts.length;
      const table = new ReplayRouting(idsByWorker, workers, snapshotTopics);
      let maxEpoch = 0;
      // Flow control: at most REPLAY_WINDOW_BYTES sent to a worker and not yet applied, so a
      // slow worker (loading segments) never makes the WAL scan pile the log up in memory.
      const outstanding = new Array<number>(workers).fill(0);
      const waiters = new Array<(() => void) | undefined>(workers);
      // Chunk buffers the workers handed back, for later chunks: replay garbage was most of the
      // RSS right after a restart (docs/ARCHITECTURE.md "Many topics"). At most what the flow control lets be in flight.
      const spare: ArrayBuffer[] = [];
      const onAck = data.workerPorts.map((port, w) => {
        const l = (m: WalIn) => {
          if (m.t !== 'replayAck') return;
          if (m.buf && spare.length < SPARE_CHUNKS_MAX) spare.push(m.buf);
          outstanding[w]! -= m.bytes;
          if (outstanding[w]! < REPLAY_WINDOW_BYTES) waiters[w]?.();
        };
        port.on('message', l);
        return l;
      });
      const res = await scanWal(fsx, data.dataDir, from, truncate, {
        route(buf, f) {
          if (f.type === FrameType.TOPIC_CREATE) return table.create(f.topicId, () => topicNameOf(buf, f));
          return table.workerOf(f.topicId);
        },
        chunkBuffer(bytes) {
          const i = spare.findIndex((b) => b.byteLength >= bytes);
          if (i >= 0) return spare.splice(i, 1)[0]!;
          return new ArrayBuffer(Math.max(bytes, CHUNK_BUFFER_BYTES));
        },
        async emit(worker, chunk) {
          while (outstanding[worker]! >= REPLAY_WINDOW_BYTES) await new Promise<void>((r) => (waiters[worker] = r));
          waiters[worker] = undefined;
          // The scan made the chunk at the start of its own ArrayBuffer: it crosses as it is.
          const ab = chunk.buffer as ArrayBuffer;
          invariant(chunk.byteOffset === 0, 'a replay chunk must start its buffer');
          outstanding[worker]! += chunk.length;
          const m: WalOut = { t: 'replay', buf: ab, bytes: chunk.length };
          data.workerPorts[worker]!.postMessage(m, [ab]);
        },
        progress(p) {
          if (p > progress) progress = p;
        },
        seen(buf, f) {
          replay.frames++;
          replay.bytes += f.size;
          replay.topics = table.size;
          if (f.topicId > 0) maxEpoch = Math.max(maxEpoch, Math.floor(f.topicId / 0x100_0000));
          if (f.type === FrameType.BOOT) {
            const body = JSON.parse(buf.toString('utf8', f.bodyOff, f.bodyOff + f.bodyLen)) as { epoch: number };
            maxEpoch = Math.max(maxEpoch, body.epoch);
          }
        },
      });
      data.workerPorts.forEach((p, w) => p.off('message', onAck[w]!));
      for (const p of data.workerPorts) p.postMessage({ t: 'replayDone' } satisfies WalOut);
      return { ...res, maxEpoch };
    },

    progress(): number {
      return progress;
    },

    replayStatus(): { fraction: number; frames: number; bytes: number; topics: number } {
      return { fraction: progress, ...replay };
    },

    /**
     * Recovery, once the scan is over: prepares the run's first file (header, zero fill, fsync)
     * while the workers still apply the replay, so `start` finds it ready.
     */
    prepareStart(fileNo: number, bootEpoch: number): void {
      const writer = newWriter(bootEpoch);
      first = { fileNo, bootEpoch, writer, ready: writer.prepareFirst(fileNo) };
    },

    /**
     * Starts the writer in a new file whose first frame is the BOOT frame (the file prepareStart
     * made, or one made now). On a full disk the file (and BOOT) wait for space while reads are
     * served (the storage state says FULL). `covered`: the cut of the snapshot recovery loaded.
     */
    async start(fileNo: number, bootEpoch: number, bootSeed: string, covered: WalPosition | undefined): Promise<void> {
      space.coveredBy(covered);
      const prepared = first?.fileNo === fileNo && first.bootEpoch === bootEpoch ? first : undefined;
      first = undefined;
      await prepared?.ready;
      const writer = prepared?.writer ?? newWriter(bootEpoch);
      gc = new GroupCommit(writer, data.workerPorts, data.syncIntervalMs, new Int32Array(data.counters), log, space);
      gc.start(fileNo, encodeJsonFrame(FrameType.BOOT, 0, { epoch: bootEpoch, seed: bootSeed }));
    },

    waitMark(id: number): Promise<WalPosition> {
      return gc!.waitMark(id);
    },

    /**
     * A checkpoint's snapshot at `cut` is durable: unlinks the WAL files wholly before `keepFrom`
     * (the previous snapshot's cut, kept for a fallback to it).
     */
    checkpointed(cut: WalPosition, keepFrom: WalPosition | null): number {
      space.coveredBy(cut);
      let removed = 0;
      for (const n of keepFrom ? listWalFiles(fsx, data.dataDir) : []) {
        if (n >= keepFrom!.fileNo) break;
        fsx.unlinkSync(path.join(walDir(data.dataDir), walFileName(n)));
        removed++;
      }
      if (gc) gc.bytesSinceCheckpoint = 0;
      return removed;
    },

    bytesSinceCheckpoint(): number {
      return gc?.bytesSinceCheckpoint ?? 0;
    },

    /** This thread's CPU time in µs (the stage clock's per-thread CPU; debug). */
    threadCpuUs(): number | undefined {
      return threadCpuUs();
    },

    stats(): WalStats | undefined {
      return gc?.snapshotStats();
    },

    async drain(): Promise<void> {
      await gc?.drain();
      gc?.stop();
    },

    lastFileNo(): number {
      return listWalFiles(fsx, data.dataDir).at(-1) ?? 0;
    },

    /**
     * Clears the writer's timers (sync interval, space retries) for good and does nothing else,
     * no I/O: for an in-process host abandoning its world after a simulated crash.
     */
    stop(): void {
      gc?.stop();
    },
  };
}

export type WalApi = ReturnType<typeof createWalApi>;
