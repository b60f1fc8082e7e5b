// A Server-Sent Events reader over a fetch response body, following the WHATWG EventSource
// parsing rules (lines end in LF, CRLF or CR; `:` starts a comment; `field: value` with one
// optional space; `data` lines join with LF; a blank line dispatches; `id` persists as the last
// event id; `retry` sets the reconnection time; an unfinished event at the end is dropped).
// Unlike EventSource it reconnects nowhere by itself: the watch and work streams own that, with
// a resume position EventSource cannot express. spool's frames: docs/API.md "SSE frame formats", "Frames".
import { abortError } from './backoff.js';
import { CLIENT_CODES, SpoolError } from './errors.js';

export interface SseEvent {
  /** The `event:` name, `message` when the block had none. */
  type: string;
  /** Data lines joined with LF. */
  data: string;
  /** The last event id seen so far on this stream (EventSource's `lastEventId`). */
  lastEventId: string;
}

export class SseDecoder {
  /** The last `retry:` value, ms. */
  retryMs: number | undefined;
  lastEventId = '';
  private buf = '';
  /** How much of `buf` is known to hold no line end. */
  private scanned = 0;
  private idBuf = '';
  private type = '';
  private data = '';
  private hasData = false;

  /** Feeds decoded text; returns the events it completed. */
  push(text: string): SseEvent[] {
    const out: SseEvent[] = [];
    this.buf += text;
    let start = 0;
    // Searches start where the previous push stopped (a long data line arrives in many chunks),
    // and the next CR is looked up once, not once per line: spool ends lines with LF only.
    let from = this.scanned;
    let cr = this.buf.indexOf('\r', from);
    for (;;) {
      const lf = this.buf.indexOf('\n', from);
      if (cr >= 0 && cr < from) cr = this.buf.indexOf('\r', from);
      const end = cr >= 0 && (lf < 0 || cr < lf) ? cr : lf;
      if (end < 0) {
        from = this.buf.length;
        break;
      }
      let next = end + 1;
      if (end === cr) {
        if (end + 1 >= this.buf.length) {
          from = end; // an LF may follow in the next chunk
          break;
        }
        if (this.buf.charCodeAt(end + 1) === 10) next++;
      }
      this.line(this.buf.slice(start, end), out);
      start = from = next;
    }
    this.buf = this.buf.slice(start);
    this.scanned = from - start;
    return out;
  }

  /** The stream ended: a CR held back (an LF might have followed) ends its line after all. */
  finish(): SseEvent[] {
    return this.buf.endsWith('\r') ? this.push('\n') : [];
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === '') return this.dispatch(out);
    if (line.charCodeAt(0) === 58) return; // a comment (`: hb`)
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    switch (field) {
      case 'event':
        this.type = value;
        break;
      case 'data':
        this.data = this.hasData ? `${this.data}\n${value}` : value;
        this.hasData = true;
        break;
      case 'id':
        if (!value.includes('\0')) this.idBuf = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default: // unknown fields are ignored
    }
  }

  private dispatch(out: SseEvent[]): void {
    this.lastEventId = this.idBuf;
    if (this.hasData) out.push({ type: this.type || 'message', data: this.data, lastEventId: this.lastEventId });
    this.type = '';
    this.data = '';
    this.hasData = false;
  }
}

export interface ReadSseOptions {
  /**
   * Give up when no byte arrives for this long (a dead connection the OS has not noticed):
   * throws SpoolError `timeout`. 0 = never.
   */
  idleMs: number;
  /** The signal the stream was opened with: a read failing after it fired is an abort. */
  signal?: AbortSignal;
}

/** Yields the events of an SSE response body until it ends; throws SpoolError on a broken stream. */
export async function* readSse(res: Response, decoder: SseDecoder, opts: ReadSseOptions): AsyncGenerator<SseEvent> {
  if (!res.body) throw new SpoolError({ code: CLIENT_CODES.bad_response, message: 'the stream response has no body' });
  const reader = res.body.getReader();
  const text = new TextDecoder('utf-8');
  let idle = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    if (opts.idleMs <= 0) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      idle = true;
      reader.cancel().catch(() => undefined);
    }, opts.idleMs);
  };
  // An abort while the caller holds an event (this generator suspended at its yield) stops the
  // idle timer too: armed, it kept a process whose watch was closed alive for its whole length.
  const onAbort = () => {
    if (timer !== undefined) clearTimeout(timer);
    reader.cancel().catch(() => undefined);
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    arm();
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (e) {
        if (opts.signal?.aborted) throw abortError(opts.signal);
        throw new SpoolError({ code: CLIENT_CODES.network_error, message: `the stream broke: ${(e as Error).message}`, cause: e });
      }
      if (idle) throw new SpoolError({ code: CLIENT_CODES.timeout, message: `no bytes on the stream for ${opts.idleMs} ms` });
      if (opts.signal?.aborted) throw abortError(opts.signal); // onAbort cancelled the reader: not the stream's end
      if (chunk.done) {
        yield* decoder.finish();
        return;
      }
      arm();
      for (const ev of decoder.push(text.decode(chunk.value, { stream: true }))) yield ev;
    }
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    if (timer !== undefined) clearTimeout(timer);
    reader.cancel().catch(() => undefined);
  }
}
