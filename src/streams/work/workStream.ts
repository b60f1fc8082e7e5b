// WorkStream (main thread): one open `GET /v0/topics/:q/work` response (docs/API.md "Queues", "Work frames";
// docs/API.md "Queues"). The queue actor leases jobs to the connection and sends their `job` frames,
// rendered whole, with the worker turn's results (src/protocol/requestChannel.ts); this stream only writes them. It opens with
// `retry: 2000` and one `: hb`, tells the actor when its socket backs up or drains (no new
// leases while paused), and when it closes, for any reason, tells the actor to release every
// lease delivered on it. Frames handed on ahead of the open's reply (they are dispatched at once, the reply a microtask later) wait.
import type { ServerResponse } from 'node:http';
import type { FlushPacer } from '../sse/flushPacer.js';
import { SseConnection } from '../sse/sseConnection.js';
import type { ErrorFrame } from '../sse/wire.js';

/** Bytes a stream may hold in user space before the actor stops leasing to it. */
const HIGH_WATER_BYTES = 1024 * 1024;
const HEARTBEAT_MS = 15_000;

export interface WorkStreamDeps {
  /** The socket backed up (true) or drained (false). */
  flow(stream: WorkStream, paused: boolean): void;
  /** The stream is gone: release its leases (once). */
  closed(stream: WorkStream): void;
}

export class WorkStream {
  private readonly conn: SseConnection;
  private isOpen = false;
  private early: Buffer[] = [];
  private isClosed = false;
  /** The terminal frame of a fail() that came before the actor accepted the stream. */
  private failedEarly: ErrorFrame | undefined;

  constructor(
    readonly connId: number,
    readonly topic: string,
    private readonly res: ServerResponse,
    pacer: FlushPacer,
    private readonly deps: WorkStreamDeps,
  ) {
    this.conn = new SseConnection(res, pacer, {
      highWaterBytes: HIGH_WATER_BYTES,
      heartbeatMs: HEARTBEAT_MS,
      now: () => Date.now(),
      onPause: () => deps.flow(this, true),
      onResume: () => deps.flow(this, false),
      onClose: () => this.onClose(),
    });
    // A client may leave while the actor is still opening the stream.
    res.once('close', () => this.onClose());
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** The actor accepted the stream and its head is queued (the registry holds it from before). */
  get opened(): boolean {
    return this.isOpen;
  }

  /**
   * The actor accepted the stream: send the head, `retry:`, `: hb`, then any early jobs. Failed
   * meanwhile (the drain's closeAll while the actor was opening it): the head and that one
   * terminal frame, so the request is answered (docs/API.md "Error frames").
   */
  open(): void {
    if (this.isClosed) {
      const e = this.failedEarly;
      this.failedEarly = undefined;
      if (e && !this.res.destroyed && !this.res.headersSent) {
        this.conn.open();
        this.conn.fail(e);
      }
      return;
    }
    this.isOpen = true;
    this.conn.open({ initialHeartbeat: true });
    for (const f of this.early) this.conn.write(f);
    this.early = [];
  }

  /** `job` frames, already rendered by the actor. */
  jobs(frames: Buffer): void {
    if (this.isClosed) return;
    if (this.isOpen) this.conn.write(frames);
    else this.early.push(frames);
  }

  /** The advisory 429 error frame (docs/API.md "Error frames"; docs/ARCHITECTURE.md "Admission"): the stream stays open. */
  advise(e: ErrorFrame): void {
    if (this.isOpen) this.conn.advise(e);
  }

  /** A terminal `error` frame (docs/API.md "Error frames"), then close. */
  fail(e: ErrorFrame): void {
    if (this.isClosed) return;
    if (this.isOpen) return this.conn.fail(e);
    this.failedEarly = e; // for open(), if the actor accepts it after all
    this.onClose();
  }

  private onClose(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.early = [];
    this.deps.closed(this);
  }
}
