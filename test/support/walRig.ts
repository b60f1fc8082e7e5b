// WalRig: the real GroupCommit + WalWriter of the WAL thread (src/wal/) on a SimDisk wrapped in a
// FaultFs, with MessageChannel ports standing in for topic workers. The test side of each port
// submits exactly what src/topicThread/walLink.ts sends (one 'submit' per turn, the buffer
// transferred, seq +1 per submission) and records every WalOut. The storage state is read from
// the same shared counters slot the supervisor hands the WAL thread. For the fault tests of
// test/unit/groupCommitFaults.test.ts.
// Frames are real WAL frames (TOPIC_CONFIG, body {i}), so the files can be read back with
// scanWal, before or after a SimDisk crash. Async fdatasyncs can be held (applied at once, their
// completion delayed) to make a sync or a preparation overlap later writes.
// Invariants: every port is closed by close(); timers of the GroupCommit are stopped there.
import assert from 'node:assert/strict';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { Fs } from '../../src/storage/fs.js';
import type { WalIn, WalOut, WalPosition } from '../../src/protocol/messages/wal.js';
import { GroupCommit } from '../../src/wal/groupCommit.js';
import type { QueuedFrame, WalLinkHost } from '../../src/topicThread/walLink.js';
import { WalWriter } from '../../src/wal/walWriter.js';
import { scanWal } from '../../src/wal/scan.js';
import { decodeJsonBody, encodeJsonFrame } from '../../src/format/frame.js';
import { FrameType } from '../../src/format/constants.js';
import { storageStateName } from '../../src/storage/storageState.js';
import { newSharedCounters, STORAGE_STATE_SLOT } from '../../src/core/sharedCounters.js';
import { SimDisk, type CrashMode } from './simDisk.js';
import { FaultFs } from './faultFs.js';
import type { CallRecord } from './fsFaults.js';

export const DATA = '/srv/spool';
export const BOOT = -1;

/** A WAL frame carrying frame id `i` (padded so sizes are easy to reason about). */
export function walFrame(i: number, padBytes = 200): Buffer {
  return encodeJsonFrame(FrameType.TOPIC_CONFIG, 0x01_000001, { i, pad: 'x'.repeat(padBytes) });
}

export interface WalRigOptions {
  fileBytes: number;
  /** SimDisk capacity (bytes of file data); undefined = unlimited. */
  capacityBytes?: number;
  partialWrites?: boolean;
  preallocate?: boolean;
  ports?: number;
  syncIntervalMs?: number;
  /** Async Fs calls ('fdatasync', 'mkdir') that are applied at once but complete only at release(). */
  hold?: ('fdatasync' | 'mkdir')[];
  /** The spare's size (src/wal/walSpare.ts); absent: none, the reserve alone. */
  spareBytes?: number;
  /** GroupCommit's inlineSyncBelowUs (urgent syncs on the WAL thread itself); absent: 0, never. */
  inlineSyncBelowUs?: number;
}

export class WalRig {
  readonly disk: SimDisk;
  readonly ffs: FaultFs;
  readonly counters = newSharedCounters();
  readonly logs: string[] = [];
  readonly writer: WalWriter;
  readonly gc: GroupCommit;
  /** Every WalOut each port received, in order. */
  readonly received: WalOut[][];
  /** Frame ids of each submission, per port (index seq - 1). */
  readonly submitted: number[][][];
  private readonly workerSide: MessagePort[];
  private holding: Set<string>;
  private readonly held: (() => void)[] = [];
  /** Counted Fs calls when GroupCommit logged its failure (the moment it knew). */
  failedAtCall: number | undefined;
  /** The next writevSync writes only the first half of its bytes and returns that count (once). */
  shortWritev = false;

  constructor(readonly opts: WalRigOptions) {
    this.disk = new SimDisk({
      seed: 'walrig',
      capacityBytes: opts.capacityBytes,
      partialWrites: opts.partialWrites ?? false,
      durableMkdir: true,
    });
    this.holding = new Set(opts.hold ?? []);
    this.ffs = new FaultFs(this.holdingFs(this.disk.fs()));
    this.writer = new WalWriter(this.ffs, DATA, {
      fileBytes: opts.fileBytes,
      bootEpoch: 1,
      preallocate: opts.preallocate ?? true,
      spareBytes: opts.spareBytes,
    });
    const channels = Array.from({ length: opts.ports ?? 1 }, () => new MessageChannel());
    this.workerSide = channels.map((c) => c.port2);
    this.received = channels.map(() => []);
    this.submitted = channels.map(() => []);
    this.workerSide.forEach((p, i) => p.on('message', (m: WalOut) => this.received[i]!.push(m)));
    this.gc = new GroupCommit(
      this.writer,
      channels.map((c) => c.port1),
      opts.syncIntervalMs ?? 5,
      this.counters,
      (m) => {
        this.logs.push(m);
        if (/writes are refused until a restart/.test(m)) this.failedAtCall ??= this.ffs.calls;
      },
      undefined,
      opts.inlineSyncBelowUs,
    );
  }

  /**
   * An Fs whose held async calls are applied when called but complete only once released, and
   * whose writevSync can be made short once (see shortWritev).
   */
  private holdingFs(inner: Fs): Fs {
    return new Proxy(inner, {
      get: (target, prop, receiver) => {
        if (prop === 'writevSync') {
          return (fd: number, bufs: Uint8Array[], position: number) => {
            if (!this.shortWritev) return target.writevSync(fd, bufs, position);
            this.shortWritev = false;
            const all = Buffer.concat(bufs);
            return target.writeSync(fd, all.subarray(0, all.length >> 1), position);
          };
        }
        if (typeof prop === 'string' && this.holding.has(prop)) {
          return (...args: unknown[]) => {
            const done = (Reflect.get(target, prop) as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            return done.then((v) => new Promise((resolve) => this.held.push(() => resolve(v))));
          };
        }
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }

  /** Held calls not yet released. */
  get heldCalls(): number {
    return this.held.length;
  }
  /** Completes the held calls; with `stopHolding`, later ones are not held. */
  release(stopHolding = false): void {
    if (stopHolding) this.holding.clear();
    for (const r of this.held.splice(0)) r();
  }

  start(fileNo = 1): void {
    this.disk.fs().mkdirSync(DATA);
    this.disk.syncAll();
    this.gc.start(fileNo, encodeJsonFrame(FrameType.BOOT, 0, { epoch: 1, seed: 'rig' }));
  }

  get state(): 'ok' | 'disk_full' | 'failed' {
    return storageStateName(Atomics.load(this.counters, STORAGE_STATE_SLOT));
  }

  /** Submits frames `ids` from worker `port` as one submission, like WalLink.flushTurn; returns its seq. */
  submit(port: number, ids: number[], durable = true, padBytes = 200): number {
    const frames = ids.map((i) => walFrame(i, padBytes));
    return this.post(
      port,
      ids,
      frames,
      frames.reduce((n, f) => n + f.length, 0),
      durable,
      false,
    );
  }

  /**
   * Like submit, but as WalLink builds a turn in a handed-back buffer: the frames are the first
   * `bytes` of a `bufBytes` buffer whose rest is junk (0xee), and the WAL is asked to hand it back.
   */
  submitInSpare(port: number, ids: number[], bufBytes: number): number {
    return this.post(
      port,
      ids,
      ids.map((i) => walFrame(i)),
      bufBytes,
      true,
      true,
    );
  }

  /** The frames back to back at the start of a `bufBytes` buffer (the rest 0xee), posted as one submission. */
  private post(port: number, ids: number[], frames: Uint8Array[], bufBytes: number, durable: boolean, handBack: boolean): number {
    const out = new Uint8Array(bufBytes).fill(0xee);
    let p = 0;
    for (const f of frames) {
      out.set(f, p);
      p += f.length;
    }
    this.submitted[port]!.push(ids);
    const seq = this.submitted[port]!.length;
    const spare = handBack ? { bytes: p, handBack: true as const } : {};
    const msg: WalIn = { t: 'submit', seq, buf: out.buffer, durable, frames: frames.length, ...spare };
    this.workerSide[port]!.postMessage(msg, [out.buffer]);
    return seq;
  }

  mark(port: number, id: number): void {
    this.workerSide[port]!.postMessage({ t: 'mark', id } satisfies WalIn);
  }

  waitMark(id: number): Promise<WalPosition> {
    return this.gc.waitMark(id);
  }

  acks(port = 0): Extract<WalOut, { t: 'ack' }>[] {
    return this.received[port]!.filter((m): m is Extract<WalOut, { t: 'ack' }> => m.t === 'ack');
  }
  written(port = 0): number {
    return this.acks(port).at(-1)?.writtenThrough ?? 0;
  }
  durable(port = 0): number {
    return this.acks(port).at(-1)?.durableThrough ?? 0;
  }
  /** Frame ids of submissions 1..seq of a port. */
  framesThrough(seq: number, port = 0): number[] {
    return this.submitted[port]!.slice(0, seq).flat();
  }

  /** Write and sync calls (anything that changes or syncs the disk) after call `n`. */
  writesAfter(n: number): CallRecord[] {
    return this.ffs.callLog().filter((r) => r.call > n && r.kind !== 'other');
  }

  /** What to print when an assertion fails. */
  diag(): string {
    return `state ${this.state}\nreceived ${JSON.stringify(this.received)}\nlogs ${JSON.stringify(this.logs)}\ncalls:\n${this.ffs.formatCallLog(30)}`;
  }

  /** Waits (polling) until `cond` holds; fails with diagnostics after `timeoutMs`. */
  async until(what: string, cond: () => boolean, timeoutMs = 3000): Promise<number> {
    const t0 = performance.now();
    while (!cond()) {
      const elapsed = performance.now() - t0;
      if (elapsed > timeoutMs) assert.fail(`timed out waiting for ${what}\n${this.diag()}`);
      // A turn of the event loop lets port messages and fs callbacks in; after a while, sleep.
      await (elapsed < 20 ? new Promise((r) => setImmediate(r)) : sleep(2));
    }
    return performance.now() - t0;
  }

  /** Frame ids in the WAL files, in log order (BOOT as -1), optionally after a crash. */
  async scan(crash?: CrashMode): Promise<number[]> {
    if (crash) this.disk.crash(crash);
    const got: number[] = [];
    await scanWal(this.disk.fs(), DATA, undefined, false, {
      route: () => undefined,
      emit: () => undefined,
      progress: () => undefined,
      seen: (buf, f) => void got.push(f.type === FrameType.BOOT ? BOOT : (decodeJsonBody(buf, f) as { i: number }).i),
    });
    return got;
  }

  close(): void {
    this.gc.stop();
    this.release(true);
    for (const p of this.workerSide) p.close();
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A WalLink host that does nothing with what the link reports (tests that watch the port instead). */
export const idleLinkHost: WalLinkHost = {
  walAck: () => undefined,
  writeSegment: () => undefined,
  redeliver: () => undefined,
  onReplay: () => undefined,
  walFailed: () => undefined,
};

/** A frame for WalLink.queueFrame: `bytes` of the byte `frameNo`, owned by `actor`, no segment. */
export function linkFrame(frameNo: number, bytes: number, actor: object = {}): QueuedFrame {
  return { actor: actor as QueuedFrame['actor'], frameNo, buf: Buffer.alloc(bytes, frameNo), durable: false, segment: undefined };
}
