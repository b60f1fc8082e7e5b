// A small Server-Sent Events client for the watch conformance tests (docs/API.md "GET /v0/watch/:wid", "SSE frame formats"; docs/WATCH.md),
// over node:http with no dependencies. It keeps every byte received, parses the stream per the
// WHATWG SSE rules (lines ending in LF, CRLF or CR; `:` comments; `field: value` with one
// optional space after the colon; a blank line dispatches) and records comments (`: hb`) and
// `retry:` blocks as frames of their own, so tests can assert on heartbeats and stream opening.
import http from 'node:http';
import net from 'node:net';
import { ChunkedDecoder } from './chunked.js';

export interface Frame {
  /** 'event' for a dispatched block with event/id/data; 'comment' for a `:` line; 'retry' for a block holding only `retry:`. */
  kind: 'event' | 'comment' | 'retry';
  /** The `event:` field of this block (undefined when the block had none, i.e. "message"). */
  event?: string;
  /** The `id:` field of this block (undefined when the block had no id line). */
  id?: string;
  /** Parsed JSON of the data lines (joined with LF), or the raw text when it is not JSON. */
  data?: any;
  /** The raw data text (data lines joined with LF). */
  dataText?: string;
  /** Comment text after the colon (leading space removed), for kind 'comment'. */
  comment?: string;
  /** The `retry:` value of this block, when present. */
  retry?: number;
  /** Every field line of the block, raw (for exactness checks). */
  lines: string[];
  /** Milliseconds since the epoch when the frame was parsed. */
  at: number;
}

/** Incremental SSE parser: push decoded text, get frames through the callback. */
export class SseParser {
  private buf = '';
  private scanned = 0;
  private lines: string[] = [];
  private event: string | undefined;
  private id: string | undefined;
  private data: string[] | undefined;
  private retry: number | undefined;

  constructor(private readonly onFrame: (f: Frame) => void) {}

  push(text: string): void {
    this.buf += text;
    for (;;) {
      // resume the search where the last one stopped: a long data line arrives in many chunks
      const lf = this.buf.indexOf('\n', this.scanned);
      const cr = this.buf.indexOf('\r', this.scanned);
      const end = cr >= 0 && (lf < 0 || cr < lf) ? cr : lf;
      if (end < 0) {
        this.scanned = this.buf.length;
        return;
      }
      let nl = 1;
      if (end === cr) {
        if (end + 1 >= this.buf.length) {
          this.scanned = end;
          return; // an LF may follow in the next chunk
        }
        if (this.buf.charCodeAt(end + 1) === 10) nl = 2;
      }
      const line = this.buf.slice(0, end);
      this.buf = this.buf.slice(end + nl);
      this.scanned = 0;
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) {
      const c = line.slice(1);
      this.onFrame({ kind: 'comment', comment: c.startsWith(' ') ? c.slice(1) : c, lines: [line], at: Date.now() });
      return;
    }
    this.lines.push(line);
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.event = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.id = value;
        break;
      case 'data':
        (this.data ??= []).push(value);
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
      default:
      // ignored per the SSE rules
    }
  }

  private dispatch(): void {
    const lines = this.lines;
    if (lines.length === 0) return;
    const f: Frame = { kind: 'event', lines, at: Date.now() };
    if (this.event !== undefined) f.event = this.event;
    if (this.id !== undefined) f.id = this.id;
    if (this.retry !== undefined) f.retry = this.retry;
    if (this.data !== undefined) {
      f.dataText = this.data.join('\n');
      try {
        f.data = JSON.parse(f.dataText);
      } catch {
        f.data = f.dataText;
      }
    }
    if (this.event === undefined && this.id === undefined && this.data === undefined && this.retry !== undefined) f.kind = 'retry';
    this.lines = [];
    this.event = undefined;
    this.id = undefined;
    this.data = undefined;
    this.retry = undefined;
    this.onFrame(f);
  }
}

/** Short description of a frame for failure messages. */
export function describeFrame(f: Frame): string {
  if (f.kind === 'comment') return `: ${f.comment}`;
  if (f.kind === 'retry') return `retry: ${f.retry}`;
  let d = f.dataText ?? '';
  if (d.length > 160) d = d.slice(0, 160) + '…';
  return `[${f.event ?? 'message'}${f.id !== undefined ? ` id=${f.id.length > 40 ? f.id.slice(0, 40) + '…' : f.id}` : ''}] ${d}`;
}

type Pred = (f: Frame) => boolean;

/** Frame list with a read position, shared by the node:http and raw-socket streams. */
export class FrameQueue {
  readonly frames: Frame[] = [];
  /** Index of the next frame `next` looks at. */
  pos = 0;
  closed = false;
  private waiters = new Set<() => void>();

  add(f: Frame): void {
    this.frames.push(f);
    this.wake();
  }
  markClosed(): void {
    this.closed = true;
    this.wake();
  }
  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Resolves when something changes (a frame or the close), or after ms. */
  private changed(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  seen(from = 0): string {
    const list = this.frames.slice(from);
    const shown =
      list.length > 40
        ? [...list.slice(0, 10).map(describeFrame), `… ${list.length - 30} more …`, ...list.slice(-20).map(describeFrame)]
        : list.map(describeFrame);
    return shown.length ? shown.map((s) => '  ' + s).join('\n') : '  (none)';
  }

  /**
   * The next frame from the read position that matches `pred` (frames before it are passed
   * over); rejects on timeout or when the stream ends first, listing the frames seen.
   */
  async next(pred: Pred = () => true, timeoutMs = 5000, what = 'a matching frame'): Promise<Frame> {
    const start = this.pos;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (this.pos < this.frames.length) {
        const f = this.frames[this.pos++]!;
        if (pred(f)) return f;
      }
      if (this.closed) throw new Error(`stream closed before ${what}; frames since the read position:\n${this.seen(start)}`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; frames since the read position:\n${this.seen(start)}`);
      await this.changed(left);
    }
  }

  /** Waits for the stream to end; rejects after timeoutMs. */
  async waitClosed(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`stream still open after ${timeoutMs} ms; frames:\n${this.seen(Math.max(0, this.frames.length - 20))}`);
      await this.changed(left);
    }
  }

  /** Frames that arrive within ms from now (from the read position on), advancing the position. */
  async collect(ms: number): Promise<Frame[]> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline && !this.closed) await this.changed(deadline - Date.now());
    const out = this.frames.slice(this.pos);
    this.pos = this.frames.length;
    return out;
  }
}

export interface OpenOptions {
  /** Request headers; `accept` defaults to text/event-stream unless given (null leaves it out). */
  headers?: Record<string, string | null>;
  /** Query parameters appended to the stream URL. */
  query?: Record<string, string>;
  /** Path override (default /v0/watch/<wid>). */
  path?: string;
  method?: string;
}

export interface SseStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Raw bytes received so far (the whole body for a non-200 answer). */
  readonly raw: Buffer;
  /** Text received so far. */
  readonly text: string;
  /** Parsed JSON body of a non-200 answer (else the text). */
  body: any;
  frames: Frame[];
  closed: boolean;
  /** See FrameQueue.next. */
  next(pred?: Pred, timeoutMs?: number, what?: string): Promise<Frame>;
  /** Next frame with this event name. */
  nextEvent(event: string, timeoutMs?: number, pred?: Pred): Promise<Frame>;
  collect(ms: number): Promise<Frame[]>;
  waitClosed(timeoutMs?: number): Promise<void>;
  /** Destroys the connection (client side close); resolves once the socket is closed. */
  close(): Promise<void>;
  /** Stop / restart reading from the socket. */
  pause(): void;
  resume(): void;
  queue: FrameQueue;
}

/**
 * Opens GET <base>/v0/watch/<wid>. Resolves once the response headers arrived (200), or once a
 * non-200 answer's body is complete.
 */
export function openStream(base: string, wid: string, opts: OpenOptions = {}): Promise<SseStream> {
  const u = new URL(base);
  let path = opts.path ?? `/v0/watch/${wid}`;
  if (opts.query && Object.keys(opts.query).length) path += '?' + new URLSearchParams(opts.query).toString();
  const headers: Record<string, string> = {};
  const given = opts.headers ?? {};
  if (!Object.keys(given).some((k) => k.toLowerCase() === 'accept')) headers['accept'] = 'text/event-stream';
  for (const [k, v] of Object.entries(given)) if (v !== null) headers[k] = v;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const queue = new FrameQueue();
    const parser = new SseParser((f) => queue.add(f));
    const decoder = new TextDecoder('utf-8');
    let closeResolve: (() => void) | undefined;
    const closedP = new Promise<void>((r) => (closeResolve = r));
    const r = http.request({ host: u.hostname, port: Number(u.port), method: opts.method ?? 'GET', path, headers, agent: false }, (res) => {
      let bodyText: string | undefined;
      const s: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        get raw() {
          return Buffer.concat(chunks);
        },
        get text() {
          return bodyText ?? Buffer.concat(chunks).toString('utf8');
        },
        body: undefined,
        frames: queue.frames,
        get closed() {
          return queue.closed;
        },
        next: (pred, ms, what) => queue.next(pred, ms, what),
        nextEvent: (event, ms = 5000, pred = () => true) => queue.next((f) => f.event === event && pred(f), ms, `event: ${event}`),
        collect: (ms) => queue.collect(ms),
        waitClosed: (ms) => queue.waitClosed(ms),
        close: async () => {
          res.destroy();
          r.destroy();
          await closedP;
        },
        pause: () => res.pause(),
        resume: () => res.resume(),
        queue,
      };
      const finish = () => {
        if (queue.closed) return;
        parser.push(decoder.decode());
        queue.markClosed();
        closeResolve!();
      };
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        if (s.status === 200) parser.push(decoder.decode(c, { stream: true }));
      });
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', finish);
      if (s.status === 200) return resolve(s);
      res.on('end', () => {
        bodyText = Buffer.concat(chunks).toString('utf8');
        s.body = bodyText;
        if ((res.headers['content-type'] ?? '').includes('json')) {
          try {
            s.body = JSON.parse(bodyText);
          } catch {
            /* leave text */
          }
        }
        resolve(s);
      });
    });
    r.on('error', (e) => {
      if (queue.closed) return;
      queue.markClosed();
      closeResolve!();
      reject(e);
    });
    r.on('close', () => {
      if (!queue.closed) {
        queue.markClosed();
        closeResolve!();
      }
    });
    r.end();
  });
}

/**
 * A stream read over a raw TCP socket (the request written by hand), for slow-consumer tests:
 * `pause()` stops reading from the socket so the server's writes back up. Handles chunked
 * transfer encoding.
 */
export interface RawSseStream {
  status: number;
  headerText: string;
  queue: FrameQueue;
  frames: Frame[];
  /** Body bytes (after de-chunking) received so far. */
  bodyBytes(): number;
  socket: net.Socket;
  pause(): void;
  resume(): void;
  close(): void;
}

export function openRawStream(base: string, wid: string, extraHeaders: Record<string, string> = {}): Promise<RawSseStream> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port) });
    const queue = new FrameQueue();
    const parser = new SseParser((f) => queue.add(f));
    const decoder = new TextDecoder('utf-8');
    let head: Buffer = Buffer.alloc(0);
    let headerDone = false;
    let chunked = false;
    let bodyBytes = 0;
    let settled = false;
    const feedBody = (b: Buffer) => {
      bodyBytes += b.length;
      parser.push(decoder.decode(b, { stream: true }));
    };
    const chunks = new ChunkedDecoder(feedBody, () => queue.markClosed());
    const dechunk = (b: Buffer) => chunks.push(b);
    const s: RawSseStream = {
      status: 0,
      headerText: '',
      queue,
      frames: queue.frames,
      bodyBytes: () => bodyBytes,
      socket,
      pause: () => socket.pause(),
      resume: () => socket.resume(),
      close: () => socket.destroy(),
    };
    socket.on('data', (b: Buffer) => {
      if (headerDone) return chunked ? dechunk(b) : feedBody(b);
      head = Buffer.concat([head, b]);
      const at = head.indexOf('\r\n\r\n');
      if (at < 0) return;
      headerDone = true;
      s.headerText = head.subarray(0, at).toString('latin1');
      s.status = Number(/^HTTP\/1\.\d (\d{3})/.exec(s.headerText)?.[1] ?? 0);
      chunked = /^transfer-encoding:\s*chunked/im.test(s.headerText);
      const rest = head.subarray(at + 4);
      if (rest.length && chunked) dechunk(rest);
      else if (rest.length) feedBody(rest);
      if (!settled) {
        settled = true;
        resolve(s);
      }
    });
    socket.on('close', () => queue.markClosed());
    socket.on('error', (e) => {
      queue.markClosed();
      if (!settled) {
        settled = true;
        reject(e);
      }
    });
    const hdrs = { host: `${u.hostname}:${u.port}`, accept: 'text/event-stream', ...extraHeaders };
    socket.write(
      `GET /v0/watch/${wid} HTTP/1.1\r\n` +
        Object.entries(hdrs)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('') +
        '\r\n',
    );
  });
}

// ---- composite cursor (docs/API.md "Watch frames") --------------------------------------------------------

/** Decodes a composite cursor id (base64url JSON, padding optional) into its map. */
export function decodeCursor(id: string): Record<string, number> {
  const v = JSON.parse(Buffer.from(id, 'base64url').toString('utf8'));
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new Error(`cursor ${id} does not decode to an object: ${JSON.stringify(v)}`);
  return v as Record<string, number>;
}

/** The decoded JSON text of a cursor (to check key order and compactness). */
export function cursorText(id: string): string {
  return Buffer.from(id, 'base64url').toString('utf8');
}

/** Encodes a cursor map as the server does: compact JSON, keys ascending, base64url, no padding. */
export function encodeCursor(map: Record<string, number>): string {
  const keys = Object.keys(map).sort();
  const json = '{' + keys.map((k) => `${JSON.stringify(k)}:${map[k]}`).join(',') + '}';
  return Buffer.from(json, 'utf8').toString('base64url');
}

// ---- frame checks shared by the watch tests --------------------------------------------------

const FRAME_KEYS: Record<string, string[]> = {
  record: ['from_seq', 'head_seq', 'records', 'to_seq', 'topic'],
  tombstone: ['earliest_seq', 'gap_from', 'gap_to', 'head_seq', 'reason', 'topic'],
  'caught-up': ['head_seq', 'topic'],
  'topic-deleted': ['head_seq', 'reason', 'topic'],
};

const u64 = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/**
 * Follows a watch stream's per-topic cursor map (docs/WATCH.md; docs/API.md "Watch frames") and checks every
 * data-bearing frame against it: exact payload keys, one JSON `data:` line, an `id` that is the
 * whole map (keys ascending, compact, base64url without padding), record frames contiguous
 * (from_seq = the previous cursor), records ascending inside (from_seq, to_seq], no seq
 * delivered twice per topic instance, tombstones starting right after the cursor.
 */
export class CursorTracker {
  readonly cursor: Record<string, number>;
  /** Every record delivered, per topic, in order (reset by a `recreated` tombstone). */
  readonly records: Record<string, any[]> = {};
  readonly events: Frame[] = [];
  private seen: Record<string, Set<number>> = {};

  constructor(start: Record<string, number>) {
    this.cursor = { ...start };
    for (const t of Object.keys(start)) {
      this.records[t] = [];
      this.seen[t] = new Set();
    }
  }

  seqs(t: string): number[] {
    return (this.records[t] ?? []).map((r) => r.$seq);
  }

  /** Checks and applies one frame (comments and retry blocks are ignored). */
  apply(f: Frame): void {
    if (f.kind !== 'event') return;
    const ctx = `frame ${describeFrame(f)}`;
    const ev = f.event;
    if (ev === 'error') {
      if (f.id !== undefined) throw new Error(`${ctx}: error frames carry no id`);
      this.events.push(f);
      return;
    }
    const keys = FRAME_KEYS[ev ?? ''];
    if (!keys) throw new Error(`${ctx}: unexpected event name ${JSON.stringify(ev)}`);
    const d = f.data;
    if (!d || typeof d !== 'object' || Array.isArray(d)) throw new Error(`${ctx}: data is not a JSON object`);
    const dataLines = f.lines.filter((l) => l.startsWith('data:'));
    if (dataLines.length !== 1) throw new Error(`${ctx}: payload must be on one data: line, got ${dataLines.length}`);
    const got = Object.keys(d).sort().join(',');
    if (got !== keys.join(',')) throw new Error(`${ctx}: payload keys ${got}, expected ${keys.join(',')}`);
    const t: string = d.topic;
    if (!(t in this.cursor)) throw new Error(`${ctx}: topic ${t} is not in the session (${Object.keys(this.cursor).join(', ')})`);
    if (!u64(d.head_seq)) throw new Error(`${ctx}: head_seq is not a u64`);
    const before = this.cursor[t]!;
    switch (ev) {
      case 'record': {
        if (!u64(d.from_seq) || !u64(d.to_seq)) throw new Error(`${ctx}: from_seq/to_seq not u64`);
        if (d.from_seq !== before)
          throw new Error(`${ctx}: from_seq ${d.from_seq} is not the cursor ${before} (frames must be contiguous)`);
        if (d.to_seq < d.from_seq) throw new Error(`${ctx}: to_seq ${d.to_seq} < from_seq ${d.from_seq}`);
        if (d.to_seq > d.head_seq) throw new Error(`${ctx}: to_seq ${d.to_seq} > head_seq ${d.head_seq}`);
        if (!Array.isArray(d.records)) throw new Error(`${ctx}: records is not an array`);
        let prev = d.from_seq;
        for (const r of d.records) {
          const s = r?.$seq;
          if (!u64(s) || s <= prev || s > d.to_seq)
            throw new Error(`${ctx}: record $seq ${s} not ascending inside (${d.from_seq}, ${d.to_seq}]`);
          if (this.seen[t]!.has(s)) throw new Error(`${ctx}: seq ${s} of ${t} delivered twice`);
          this.seen[t]!.add(s);
          this.records[t]!.push(r);
          prev = s;
        }
        this.cursor[t] = d.to_seq;
        break;
      }
      case 'tombstone': {
        for (const k of ['gap_from', 'gap_to', 'earliest_seq']) if (!u64(d[k])) throw new Error(`${ctx}: ${k} not u64`);
        if (d.reason === 'recreated') {
          if (d.gap_from !== 1) throw new Error(`${ctx}: a recreated tombstone has gap_from 1`);
          this.seen[t] = new Set();
          this.records[t] = [];
        } else if (d.gap_from !== before + 1) throw new Error(`${ctx}: gap_from ${d.gap_from} is not cursor ${before} + 1`);
        if (d.gap_to !== d.earliest_seq - 1) throw new Error(`${ctx}: gap_to ${d.gap_to} is not earliest_seq ${d.earliest_seq} - 1`);
        this.cursor[t] = d.gap_to;
        break;
      }
      case 'caught-up':
        // drained to the head: the cursor is the head (filtered or deleted tails included)
        this.cursor[t] = d.head_seq;
        break;
      case 'topic-deleted':
        if (d.reason !== 'deleted') throw new Error(`${ctx}: reason must be "deleted"`);
        break;
    }
    if (f.id === undefined) throw new Error(`${ctx}: a ${ev} frame must carry an id`);
    if (!/^[A-Za-z0-9_-]+$/.test(f.id)) throw new Error(`${ctx}: id is not unpadded base64url`);
    const want = encodeCursor(this.cursor);
    if (f.id !== want) throw new Error(`${ctx}: id decodes to ${cursorText(f.id)}, expected ${cursorText(want)}`);
    this.events.push(f);
  }

  /** Applies frames from the stream until every topic in `topics` sent caught-up (or `stop` matches). */
  async untilCaughtUp(s: { next: SseStream['next'] }, topics: string[] = Object.keys(this.cursor), timeoutMs = 5000): Promise<Frame[]> {
    const pending = new Set(topics);
    const out: Frame[] = [];
    const deadline = Date.now() + timeoutMs;
    while (pending.size) {
      const f = await s.next((x) => x.kind === 'event', Math.max(1, deadline - Date.now()), `caught-up for ${[...pending].join(', ')}`);
      this.apply(f);
      out.push(f);
      if (f.event === 'caught-up') pending.delete(f.data.topic);
    }
    return out;
  }

  /** Applies frames until `pred` matches one (returned). */
  async until(s: { next: SseStream['next'] }, pred: Pred, timeoutMs = 5000, what = 'a matching frame'): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const f = await s.next((x) => x.kind === 'event', Math.max(1, deadline - Date.now()), what);
      this.apply(f);
      if (pred(f)) return f;
    }
  }
}
