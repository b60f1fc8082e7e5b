// A raw SSE client for the queue push stream, `GET /v0/topics/:q/work` (docs/API.md "Queues", "Work frames";
// docs/API.md "Which error wins", "Queues", "Error frames"; docs/QUEUES.md), over a plain TCP socket with the request written by
// hand: exact request headers (no Accept unless given), the response head kept as text, chunked
// transfer decoding, and the body parsed with the shared SseParser into a FrameQueue. A non-200
// answer is read to its end (Content-Length, chunked or close) and its JSON body parsed, so
// establishment errors can be checked with the usual assertions. `close()` destroys the socket,
// which is how a worker "disconnects" (the server must then release the stream's leases).
import net from 'node:net';
import { Frame, FrameQueue, SseParser } from './sse.js';
import { ChunkedDecoder } from './chunked.js';

export interface WorkOpenOptions {
  /** Query parameters (node, max, lease_ms, ...), encoded with URLSearchParams. */
  query?: Record<string, string>;
  /** The whole path and query, used verbatim instead of /v0/topics/<topic>/work?<query>. */
  path?: string;
  /** Request headers; `accept` defaults to text/event-stream unless given (null leaves it out). */
  headers?: Record<string, string | null>;
  method?: string;
  /** How long to wait for the response head (and a non-200 body). Default 10 s. */
  timeoutMs?: number;
}

type Pred = (f: Frame) => boolean;

export interface WorkStream {
  status: number;
  /** The response head (status line and header lines), latin1. */
  headerText: string;
  /** Response headers, names lower-cased (repeated headers joined with ", "). */
  headers: Record<string, string>;
  /** A non-200 answer's body: parsed JSON when it is JSON, else the text. Undefined on 200. */
  body: any;
  /** Body text received so far (after de-chunking); the whole body of a non-200 answer. */
  readonly text: string;
  queue: FrameQueue;
  frames: Frame[];
  readonly closed: boolean;
  /** See FrameQueue.next. */
  next(pred?: Pred, timeoutMs?: number, what?: string): Promise<Frame>;
  /** The next `job` frame (frames before it are passed over). */
  nextJob(timeoutMs?: number, what?: string): Promise<Frame>;
  /** The next frame with this event name. */
  nextEvent(event: string, timeoutMs?: number, pred?: Pred): Promise<Frame>;
  /** Frames arriving within ms from the read position on. */
  collect(ms: number): Promise<Frame[]>;
  waitClosed(timeoutMs?: number): Promise<void>;
  /** Every `job` frame received so far (whatever the read position). */
  jobFrames(): Frame[];
  /** Destroys the socket (client side close); resolves once it is closed. */
  close(): Promise<void>;
  pause(): void;
  resume(): void;
  socket: net.Socket;
}

/** The path of the work stream of `topic` with the given query. */
export function workPath(topic: string, query: Record<string, string> = {}): string {
  const q = new URLSearchParams(query).toString();
  return `/v0/topics/${encodeURIComponent(topic)}/work${q ? '?' + q : ''}`;
}

/**
 * Opens the work stream. Resolves once the response head arrived for a 200, or once a non-200
 * answer's body is complete (the socket is then closed). Rejects on a socket error or timeout
 * before that.
 */
export function openWork(base: string, topic: string, opts: WorkOpenOptions = {}): Promise<WorkStream> {
  const u = new URL(base);
  const path = opts.path ?? workPath(topic, opts.query);
  const headers: Record<string, string> = { host: `${u.hostname}:${u.port}` };
  const given = opts.headers ?? {};
  if (!Object.keys(given).some((k) => k.toLowerCase() === 'accept')) headers['accept'] = 'text/event-stream';
  for (const [k, v] of Object.entries(given)) if (v !== null) headers[k.toLowerCase()] = v;
  const timeoutMs = opts.timeoutMs ?? 10_000;

  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port) });
    const queue = new FrameQueue();
    const parser = new SseParser((f) => queue.add(f));
    const decoder = new TextDecoder('utf-8');
    let head: Buffer = Buffer.alloc(0);
    let headerDone = false;
    let chunked = false;
    let contentLength = -1;
    const bodyChunks: Buffer[] = [];
    let bodyText = '';
    let settled = false;
    let ended = false; // the body ended (terminating chunk, Content-Length reached, or close)
    let closeResolve!: () => void;
    const closedP = new Promise<void>((r) => (closeResolve = r));

    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      socket.destroy();
      reject(
        new Error(
          `GET ${path}: no complete answer within ${timeoutMs} ms (received: ${JSON.stringify(head.toString('latin1').slice(0, 300))})`,
        ),
      );
    }, timeoutMs);

    const s: WorkStream = {
      status: 0,
      headerText: '',
      headers: {},
      body: undefined,
      get text() {
        return bodyText;
      },
      queue,
      frames: queue.frames,
      get closed() {
        return queue.closed;
      },
      next: (pred, ms, what) => queue.next(pred, ms, what),
      nextJob: (ms = 5000, what = 'a job frame') => queue.next((f) => f.kind === 'event' && f.event === 'job', ms, what),
      nextEvent: (event, ms = 5000, pred = () => true) =>
        queue.next((f) => f.kind === 'event' && f.event === event && pred(f), ms, `event: ${event}`),
      collect: (ms) => queue.collect(ms),
      waitClosed: (ms) => queue.waitClosed(ms),
      jobFrames: () => queue.frames.filter((f) => f.kind === 'event' && f.event === 'job'),
      close: async () => {
        socket.destroy();
        await closedP;
      },
      pause: () => socket.pause(),
      resume: () => socket.resume(),
      socket,
    };

    const finishNon200 = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const text = Buffer.concat(bodyChunks).toString('utf8');
      bodyText = text;
      s.body = text;
      if ((s.headers['content-type'] ?? '').includes('json')) {
        try {
          s.body = JSON.parse(text);
        } catch {
          /* leave text */
        }
      }
      socket.destroy();
      resolve(s);
    };

    const endBody = () => {
      if (ended) return;
      ended = true;
      if (s.status === 200) {
        parser.push(decoder.decode());
        queue.markClosed();
      } else finishNon200();
    };

    const feedBody = (b: Buffer) => {
      if (b.length === 0) return;
      if (s.status === 200) {
        const t = decoder.decode(b, { stream: true });
        bodyText += t;
        parser.push(t);
      } else {
        bodyChunks.push(b);
        if (contentLength >= 0 && Buffer.concat(bodyChunks).length >= contentLength) endBody();
      }
    };

    const chunks = new ChunkedDecoder(feedBody, endBody);
    const dechunk = (b: Buffer) => chunks.push(b);

    socket.on('data', (b: Buffer) => {
      if (headerDone) return chunked ? dechunk(b) : feedBody(b);
      head = Buffer.concat([head, b]);
      const at = head.indexOf('\r\n\r\n');
      if (at < 0) return;
      headerDone = true;
      s.headerText = head.subarray(0, at).toString('latin1');
      const lines = s.headerText.split('\r\n');
      s.status = Number(/^HTTP\/1\.\d (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
      for (const line of lines.slice(1)) {
        const c = line.indexOf(':');
        if (c < 0) continue;
        const k = line.slice(0, c).trim().toLowerCase();
        const v = line.slice(c + 1).trim();
        s.headers[k] = k in s.headers ? `${s.headers[k]}, ${v}` : v;
      }
      chunked = /chunked/i.test(s.headers['transfer-encoding'] ?? '');
      contentLength = s.headers['content-length'] !== undefined ? Number(s.headers['content-length']) : -1;
      const rest = head.subarray(at + 4);
      if (s.status === 200) {
        settled = true;
        clearTimeout(timer);
        resolve(s);
      }
      if (rest.length && chunked) dechunk(rest);
      else if (rest.length) feedBody(rest);
      if (s.status !== 200 && !chunked && contentLength === 0) endBody();
    });
    socket.on('close', () => {
      if (!ended) {
        ended = true;
        if (s.status === 200) {
          parser.push(decoder.decode());
          queue.markClosed();
        } else if (headerDone) finishNon200();
      }
      queue.markClosed();
      closeResolve();
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        reject(
          new Error(`GET ${path}: connection closed before an answer (received: ${JSON.stringify(head.toString('latin1').slice(0, 300))})`),
        );
      }
    });
    socket.on('error', (e) => {
      queue.markClosed();
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        reject(e);
      }
    });
    const method = opts.method ?? 'GET';
    socket.write(
      `${method} ${path} HTTP/1.1\r\n` +
        Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('') +
        '\r\n',
    );
  });
}
