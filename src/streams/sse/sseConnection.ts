// SseConnection (main thread): the output side of one open SSE response, for any stream kind
// (watch, work). It owns the response head and `retry:`, the queue of frames waiting for the
// shared FlushPacer, the corked write, heartbeats, pause on backlog, and the terminal error
// frame. Invariants: nothing is written after close; a paused connection sends no heartbeat
// and resumes only on 'drain'; what it holds is bounded by `highWaterBytes` plus the one
// flush that crossed it. What to send, and what to do on pause, resume or close,
// belongs to the stream that owns it.
//
// Writes (docs/PERFORMANCE.md "Watch fan-out"): the first flush goes through `res.write`, which sends the
// response head with it; every later one writes its bytes straight to the socket, chunk framing
// included, as ONE `socket.write` of a Buffer shared with every connection that queued the same
// frames (src/streams/sse/sharedChunks.ts): one syscall per connection per flush, nothing built per
// connection. Only while the response owns its socket and holds nothing buffered itself
// (otherwise, and for HTTP/1.0 framing, the bytes take `res.write` as before).
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FlushPacer, PacedFlush } from './flushPacer.js';
import { CHUNK_END, SHARED_CHUNK_BYTES_MAX, SharedChunks, chunkHead, frameChunk } from './sharedChunks.js';
import { HEARTBEAT_FRAME, RETRY_FRAME, SSE_HEADERS, errorFrame, type ErrorFrame } from './wire.js';

export interface SseConnectionOptions {
  /** Bytes queued in user space (`res.writableLength`) above which the connection pauses. */
  highWaterBytes: number;
  /** Silence after which a `: hb` comment is sent. */
  heartbeatMs: number;
  /** Wall milliseconds, for heartbeats only (never part of what a frame says). */
  now(): number;
  /** The socket backed up: stop producing until onResume. */
  onPause(): void;
  /** The socket drained after a pause. */
  onResume(): void;
  /** A flush left the connection below its high water (room for more, e.g. a waiting read). */
  onFlushed?(): void;
  /** The connection closed (client gone, end() or fail()); called once. */
  onClose(): void;
}

const RETRY = Buffer.from(RETRY_FRAME);
const HEARTBEAT = Buffer.from(HEARTBEAT_FRAME);

/**
 * True when the client left before its stream was made: its response's 'close' was emitted
 * already, so a listener added now would never run (and what the stream holds would leak).
 */
export function clientGone(res: ServerResponse): boolean {
  return res.destroyed || res.socket === null || res.socket.destroyed;
}

export class SseConnection implements PacedFlush {
  private isPaused = false;
  private isClosed = false;
  /** Frames waiting for this loop iteration's flush, and their size. */
  private out: Buffer[] = [];
  private outBytes = 0;
  private lastWriteMs: number;
  private hbTimer: NodeJS.Timeout | undefined;
  /** The 'drain' listener: on the response, and on the socket once bytes go to it directly. */
  private readonly drainListener = () => this.onDrain();
  private drainSocket: Socket | null = null;

  constructor(
    private readonly res: ServerResponse,
    private readonly pacer: FlushPacer,
    private readonly opts: SseConnectionOptions,
  ) {
    this.lastWriteMs = opts.now();
    // From the start, not from open(): a client may leave while the stream is still opening.
    res.once('close', () => this.onClose());
  }

  get paused(): boolean {
    return this.isPaused;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Bytes held in user space: queued for this iteration's flush, and written but not taken by the kernel. */
  get queuedBytes(): number {
    return this.outBytes + this.res.writableLength;
  }

  /**
   * Sends the head and `retry:` (and, for streams that open with one, a first `: hb`), then
   * arms heartbeats.
   */
  open(o: { initialHeartbeat?: boolean } = {}): void {
    if (this.isClosed) return;
    this.res.writeHead(200, SSE_HEADERS);
    this.res.on('drain', this.drainListener);
    this.write(RETRY);
    if (o.initialHeartbeat) this.write(HEARTBEAT);
    this.armHeartbeat();
  }

  /**
   * Queues bytes for the pacer's flush at the end of this loop iteration: every frame a
   * connection gets in one iteration (from any number of worker messages) leaves in one write,
   * which is what keeps a fan-out to many streams affordable under load.
   */
  write(chunk: Buffer): void {
    if (this.isClosed) return;
    if (this.out.length === 0) this.pacer.markDirty(this);
    this.out.push(chunk);
    this.outBytes += chunk.length;
  }

  /**
   * Writes what this iteration queued; pauses the connection if its socket backs up. `shared`
   * (the pacer's, for one flush) lets connections with the same queued frames write one Buffer.
   */
  flush(nowMs: number, shared?: SharedChunks): void {
    if (this.isClosed || this.out.length === 0) return;
    this.lastWriteMs = nowMs;
    const parts = this.out;
    const bytes = this.outBytes;
    this.out = [];
    this.outBytes = 0;
    const sock = this.ownSocket();
    if (sock === null) {
      const chunk = parts.length === 1 ? parts[0]! : Buffer.concat(parts, bytes);
      // A chunked response writes size, CRLF, data and CRLF separately; corked, they leave in
      // one writev instead of four syscalls.
      const s = this.res.socket;
      s?.cork();
      this.res.write(chunk);
      s?.uncork();
    } else {
      const chunked = this.res.chunkedEncoding;
      if (bytes <= SHARED_CHUNK_BYTES_MAX) {
        sock.write(shared ? shared.get(parts, bytes, chunked) : chunked ? frameChunk(parts, bytes) : Buffer.concat(parts, bytes));
      } else {
        // Big frames (a backlog pull) are not copied: one corked writev.
        sock.cork();
        if (chunked) sock.write(chunkHead(bytes));
        for (const part of parts) sock.write(part);
        if (chunked) sock.write(CHUNK_END);
        sock.uncork();
      }
    }
    // Not write()'s false: Node returns it for any chunk over 16 KiB even when the kernel takes
    // it all at once. What counts is what stays queued in user space.
    if (this.res.writableLength > this.opts.highWaterBytes) this.pause();
    else this.opts.onFlushed?.();
  }

  /**
   * The socket when bytes may go to it directly: the head is out, the response buffers nothing
   * of its own and is the one its socket serves. (Node's own fields; any doubt takes res.write.)
   */
  private ownSocket(): Socket | null {
    const res = this.res as ServerResponse & { _headerSent?: boolean; outputSize?: number };
    const sock = res.socket as (Socket & { _httpMessage?: unknown }) | null;
    if (sock === null || res._headerSent !== true || res.outputSize !== 0 || sock._httpMessage !== res || !sock.writable) return null;
    // Raw writes never set the response's own drain flag: resume on the socket's 'drain'.
    if (this.drainSocket !== sock) {
      this.drainSocket?.off('drain', this.drainListener);
      (this.drainSocket = sock).on('drain', this.drainListener);
    }
    return sock;
  }

  /** A non-terminal error frame (docs/API.md "Error frames" advisory pacing, 429): the stream stays open. */
  advise(e: ErrorFrame): void {
    if (this.isClosed) return;
    this.write(Buffer.from(errorFrame({ ...e, terminal: false }), 'utf8'));
  }

  /** Terminal error frame, then close (shutdown, docs/API.md "Error frames"). */
  fail(e: ErrorFrame): void {
    if (this.isClosed) return;
    this.write(Buffer.from(errorFrame(e), 'utf8'));
    this.end();
  }

  /** Flushes what is queued now (not at the iteration's end) and ends the response. */
  end(): void {
    if (this.isClosed) return;
    this.flush(this.opts.now());
    this.res.end();
    this.onClose();
  }

  // ---- heartbeats --------------------------------------------------------------------------

  private armHeartbeat(): void {
    const hb = this.opts.heartbeatMs;
    const dueMs = Math.max(0, this.lastSentMs() + hb - this.opts.now());
    this.hbTimer = setTimeout(() => {
      if (this.isClosed) return;
      // Suppressed when anything went out within the window (docs/API.md "SSE frame formats").
      if (this.opts.now() - this.lastSentMs() >= hb && !this.isPaused) this.write(HEARTBEAT);
      this.armHeartbeat();
    }, dueMs);
    this.hbTimer.unref();
  }

  /**
   * When bytes last went out: the last flush, or now while some are queued for the pacer's next
   * one. A heartbeat waiting for a flush the pacer put off under load is not silence: taking it
   * for silence re-armed the timer at 0 ms and queued another heartbeat each time it fired.
   */
  private lastSentMs(): number {
    return this.out.length > 0 ? this.opts.now() : this.lastWriteMs;
  }

  // ---- flow control ------------------------------------------------------------------------

  private pause(): void {
    if (this.isPaused) return;
    this.isPaused = true;
    this.opts.onPause();
  }

  private onDrain(): void {
    if (!this.isPaused || this.isClosed) return;
    this.isPaused = false;
    this.opts.onResume();
  }

  private onClose(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    if (this.hbTimer) clearTimeout(this.hbTimer);
    this.drainSocket?.off('drain', this.drainListener); // a keep-alive socket may serve on
    this.drainSocket = null;
    this.opts.onClose();
  }
}
