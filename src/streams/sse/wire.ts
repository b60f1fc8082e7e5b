// Server-Sent Events on the wire (docs/API.md "SSE frame formats", "Which error wins"), for every SSE stream of
// the server (watch and work): the Accept rule, the response head, and frame encoding. Pure
// functions and constants, run on the main thread. Payloads are JSON on one `data:` line
// (record texts hold no raw newlines: insignificant whitespace was removed at append, docs/API.md
// "Records"); only data-bearing frames carry an `id:` line, so nothing else moves a resume cursor.

/** How specific each range that covers text/event-stream is (RFC 9110: the most specific one decides). */
const SPECIFICITY = new Map([
  ['text/event-stream', 3],
  ['text/*', 2],
  ['*/*', 1],
]);

/**
 * True when Accept lists text/event-stream, text/* or *\/* and the most specific of those has a q
 * other than 0 (docs/API.md "Which error wins"): `text/event-stream;q=0, *\/*` refuses the
 * stream, as RFC 9110 ranks a range that names the type over a wildcard.
 */
export function acceptsEventStream(accept: string | undefined): boolean {
  if (!accept) return false;
  let best = 0;
  let accepted = false;
  for (const range of accept.split(',')) {
    const [type, ...params] = range.split(';').map((p) => p.trim().toLowerCase());
    const rank = SPECIFICITY.get(type!) ?? 0;
    if (rank === 0 || rank < best) continue;
    const q = params.find((p) => p.startsWith('q='));
    const refused = q !== undefined && Number(q.slice(2)) === 0;
    // Two ranges of the same rank: any one that accepts is enough.
    accepted = rank > best ? !refused : accepted || !refused;
    best = rank;
  }
  return accepted;
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

/** Sent once at open: the client's reconnect backoff. */
export const RETRY_FRAME = 'retry: 2000\n\n';
/** A heartbeat: a bare comment, no id, so it never moves the resume cursor (docs/API.md "SSE frame formats"). */
export const HEARTBEAT_FRAME = ': hb\n\n';

/** A data-bearing frame whose payload is already-encoded JSON bytes. */
export function frameHead(event: string, id: string): string {
  return `id: ${id}\nevent: ${event}\ndata: `;
}

export const FRAME_END = '\n\n';

/** One data-bearing SSE frame as bytes: `id:`, `event:`, the payload on one `data:` line. */
export function frame(event: string, id: string, payload: Buffer): Buffer {
  const head = frameHead(event, id);
  const out = Buffer.allocUnsafe(head.length + payload.length + FRAME_END.length);
  out.write(head, 0, 'latin1'); // ids are base64url, event names ASCII
  payload.copy(out, head.length);
  out.write(FRAME_END, head.length + payload.length, 'latin1');
  return out;
}

export interface ErrorFrame {
  code: number;
  error: string;
  message: string;
  terminal: boolean;
  retry_after_ms?: number;
  /** `/work` frames: the queue topic (docs/API.md "Error frames"). */
  topic?: string;
  /** Watch 429: the topics being paced (docs/API.md "Error frames"; docs/ARCHITECTURE.md "Admission"). */
  topics?: string[];
}

/** An `error` frame (docs/API.md "Error frames"): no id line, so it never moves the cursor. */
export function errorFrame(e: ErrorFrame): string {
  return `event: error\ndata: ${JSON.stringify(e)}\n\n`;
}
