// GroupCommit: the WAL writer's policy (DESIGN 1.5), run by the WAL thread; the files and
// syscalls are WalWriter's. Submissions from every topic worker queue up while the thread writes
// or syncs, so batches grow with load without a timer window: one writev per flush, at most one
// fdatasync in flight, covering exactly the bytes written before it started. Acks are
// cumulative per submitter.
// Invariant: a submission is reported durable only after an fdatasync that began after its write.
import type { MessagePort } from 'node:worker_threads';
import type { WalIn, WalOut, WalPosition } from '../core/messages/wal.js';
import { nowMs } from '../core/stopwatch.js';
import type { WalWriter } from './walWriter.js';

const WRITEV_MAX_BYTES = 8 * 1024 * 1024;

interface Item {
  port: number;
  msg: WalIn;
}

interface PortState {
  port: MessagePort;
  written: number;
  durable: number;
  /** Highest written seq that asked for durability and is not yet durable. */
  wantsDurable: number;
  lastAckedWritten: number;
  lastAckedDurable: number;
}

export interface WalStats {
  frames: number;
  batches: number;
  fsyncs: number;
  bytesWritten: number;
  queueDepth: number;
  fileNo: number;
  offset: number;
  fsyncLatencyUs: number[];
}

export class GroupCommit {
  private readonly ports: PortState[];
  private queue: Item[] = [];
  private flushScheduled = false;
  private syncing = false;
  private syncTimer: NodeJS.Timeout | undefined;
  private unsyncedSince = 0;
  private unsyncedBytes = 0;
  private readonly marks = new Map<number, WalPosition[]>();
  private readonly markWaiters = new Map<number, () => void>();
  readonly stats: WalStats = { frames: 0, batches: 0, fsyncs: 0, bytesWritten: 0, queueDepth: 0, fileNo: 0, offset: 0, fsyncLatencyUs: [] };
  private failed: Error | undefined;
  /** Bytes written since the last checkpoint (drives the WAL-size checkpoint trigger). */
  bytesSinceCheckpoint = 0;

  constructor(
    private readonly writer: WalWriter,
    ports: MessagePort[],
    private readonly syncIntervalMs: number,
  ) {
    this.ports = ports.map((port) => ({ port, written: 0, durable: 0, wantsDurable: 0, lastAckedWritten: 0, lastAckedDurable: 0 }));
  }

  get fileNo(): number {
    return this.writer.fileNo;
  }

  /** Opens a fresh file (never appends after a recovered tail) and starts taking submissions. */
  start(fileNo: number): void {
    this.writer.open(fileNo);
    this.ports.forEach((p, i) => p.port.on('message', (msg: WalIn) => this.onMessage(i, msg)));
  }

  /** Writes a frame from the WAL thread itself (BOOT), durable. */
  writeOwn(frame: Buffer): Promise<void> {
    this.writeBuffers([frame]);
    return this.writer.syncAsync();
  }

  private onMessage(port: number, msg: WalIn): void {
    if (msg.t === 'replayAck') return; // recovery flow control, handled by the scan
    this.queue.push({ port, msg });
    this.stats.queueDepth = this.queue.length;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      // Let everything already waiting on the ports land first.
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.failed) return;
    try {
      while (this.queue.length > 0) this.flushSome();
    } catch (err) {
      this.fail(err as Error);
      return;
    }
    this.stats.queueDepth = 0;
    this.postAcks();
    this.maybeSync();
  }

  private flushSome(): void {
    const bufs: Buffer[] = [];
    let size = 0;
    let taken = 0;
    for (const it of this.queue) {
      if (it.msg.t === 'submit') {
        const b = Buffer.from(it.msg.buf);
        if (bufs.length > 0 && size + b.length > WRITEV_MAX_BYTES) break;
        if (!this.writer.fits(size + b.length)) {
          if (bufs.length > 0) break; // write what we have, rotate on the next round
          this.rotate();
        }
        bufs.push(b);
        size += b.length;
        const ps = this.ports[it.port]!;
        ps.written = it.msg.seq;
        if (it.msg.durable) ps.wantsDurable = it.msg.seq;
        this.stats.batches++;
        this.stats.frames += it.msg.frames;
      } else if (it.msg.t === 'mark') {
        // A mark's position is right after everything this port submitted before it.
        const at = { fileNo: this.writer.fileNo, offset: this.writer.offset + size };
        let list = this.marks.get(it.msg.id);
        if (!list) this.marks.set(it.msg.id, (list = []));
        list.push(at);
        if (list.length === this.ports.length) this.markWaiters.get(it.msg.id)?.();
      }
      taken++;
    }
    this.queue.splice(0, taken);
    if (bufs.length > 0) this.writeBuffers(bufs);
  }

  private writeBuffers(bufs: Buffer[]): void {
    const size = this.writer.write(bufs);
    this.stats.bytesWritten += size;
    this.bytesSinceCheckpoint += size;
    if (this.unsyncedBytes === 0) this.unsyncedSince = nowMs();
    this.unsyncedBytes += size;
  }

  private rotate(): void {
    // The old file's last sync completes before the switch, so a valid frame in a later file
    // proves every earlier file was synced (the torn-tail vs corruption rule of recovery).
    this.writer.rotate();
    this.markAllDurable();
  }

  private markAllDurable(): void {
    for (const p of this.ports) p.durable = p.written;
    this.unsyncedBytes = 0;
  }

  private maybeSync(): void {
    if (this.syncing || this.failed) return;
    const urgent = this.ports.some((p) => p.wantsDurable > p.durable);
    if (urgent) return this.startSync();
    if (this.unsyncedBytes > 0 && !this.syncTimer) {
      const wait = Math.max(0, this.syncIntervalMs - (nowMs() - this.unsyncedSince));
      this.syncTimer = setTimeout(() => {
        this.syncTimer = undefined;
        if (this.unsyncedBytes > 0) this.startSync();
      }, wait);
    }
  }

  private startSync(): void {
    this.syncing = true;
    const targets = this.ports.map((p) => p.written);
    const started = nowMs();
    this.unsyncedBytes = 0;
    this.writer.syncAsync().then(
      () => this.synced(targets, started),
      (err: Error) => {
        this.syncing = false;
        this.fail(err);
      },
    );
  }

  private synced(targets: number[], started: number): void {
    this.syncing = false;
    this.stats.fsyncs++;
    this.recordLatency(Math.round((nowMs() - started) * 1000));
    this.ports.forEach((p, i) => {
      if (targets[i]! > p.durable) p.durable = targets[i]!;
    });
    this.postAcks();
    this.maybeSync();
  }

  private latencies: number[] = [];
  private recordLatency(us: number): void {
    this.latencies.push(us);
    if (this.latencies.length >= 256) this.drainLatencies();
  }

  /** Fsync latencies (µs) since the last call, for the metrics histogram. */
  drainLatencies(): number[] {
    const l = this.latencies;
    this.latencies = [];
    this.stats.fsyncLatencyUs.push(...l);
    return l;
  }

  private postAcks(): void {
    for (const p of this.ports) {
      if (p.written === p.lastAckedWritten && p.durable === p.lastAckedDurable) continue;
      p.lastAckedWritten = p.written;
      p.lastAckedDurable = p.durable;
      const m: WalOut = { t: 'ack', writtenThrough: p.written, durableThrough: p.durable };
      p.port.postMessage(m);
    }
  }

  private fail(err: Error): void {
    this.failed = err;
    for (const p of this.ports) p.port.postMessage({ t: 'failed', message: err.message } satisfies WalOut);
    // Crash-only: recovery is the repair path. Let the main thread see the error and exit.
    setImmediate(() => {
      throw err;
    });
  }

  /** Resolves with the log position of checkpoint mark `id` once every submitter's mark arrived. */
  waitMark(id: number): Promise<WalPosition> {
    return new Promise((resolve) => {
      const done = () => {
        const list = this.marks.get(id)!;
        this.marks.delete(id);
        this.markWaiters.delete(id);
        let min = list[0]!;
        for (const p of list) if (p.fileNo < min.fileNo || (p.fileNo === min.fileNo && p.offset < min.offset)) min = p;
        resolve(min);
      };
      if ((this.marks.get(id)?.length ?? 0) === this.ports.length) done();
      else this.markWaiters.set(id, done);
    });
  }

  /** Flushes and fsyncs everything queued (shutdown). */
  async drain(): Promise<void> {
    this.flush();
    while (this.syncing) await new Promise((r) => setTimeout(r, 1));
    if (this.writer.isOpen) {
      this.writer.syncNow();
      this.markAllDurable();
      this.postAcks();
    }
  }

  snapshotStats(): WalStats {
    this.drainLatencies();
    const s = { ...this.stats, fileNo: this.writer.fileNo, offset: this.writer.offset, fsyncLatencyUs: this.stats.fsyncLatencyUs };
    this.stats.fsyncLatencyUs = [];
    return s;
  }
}
