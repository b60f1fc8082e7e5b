// `spool.watch(...)`: an async iterable over a watch session's SSE stream that survives
// disconnects, server restarts and collected sessions without losing or repeating a record.
//
// The client keeps its own per-topic cursor: the seq of the last record it handed to the caller
// (and, once a frame is fully handed out, the frame's `to_seq`, which also covers records the
// server filtered). On any reconnect it sends that map as `Last-Event-ID` (docs/API.md "GET /v0/watch/:wid": the
// server rewinds to min(its cursor, ours), so nothing handed out is skipped); when the session is
// gone (404 after a restart or idle collection, or a 410 error frame) it POSTs the same
// subscription again with `cursor` = that map (docs/API.md "POST /v0/watch"). Records at or below a topic's cursor
// are dropped as duplicates; a frame starting above the cursor would be a silent gap and throws
// SpoolError `stream_gap` instead. docs/CLIENT.md "Watch".
import { abortError, backoffMs, onAbortOf, retryDelayMs, sleep } from './backoff.js';
import { CLIENT_CODES, SpoolError } from './errors.js';
import { encodeCursor } from './json.js';
import { readSse, SseDecoder, type SseEvent } from './sse.js';
import type { ClientCore } from './core.js';
import type { ErrorFramePayload, RecordFrame, Tombstone, WatchEvent, WatchRequest, WatchSession } from './types.js';

export interface WatchOptions<S> extends WatchRequest<S> {
  /** `data`/`meta` as verbatim JSON texts. */
  raw?: boolean;
  /** Ends the iteration with SpoolError `aborted`. */
  signal?: AbortSignal;
  /** false: the first lost stream ends the iteration with its error (default true). */
  reconnect?: boolean;
  /** Longest wait between reconnect attempts, ms (default 5000). */
  maxReconnectDelayMs?: number;
  /** Told about every reconnect (for logging). */
  onReconnect?: (err: SpoolError, attempt: number, delayMs: number) => void;
}

const HEARTBEAT_DEFAULT_MS = 15_000;
/** Watchdog slack over two heartbeats (docs/API.md "SSE frame formats"). */
const WATCHDOG_SLACK_MS = 2000;

type Seq = number | bigint;

export class WatchStream<S extends Seq, R> implements AsyncIterable<WatchEvent<S, R>> {
  /** The current session id (changes when a collected session is re-created). */
  wid: string | undefined;
  private readonly cursors = new Map<string, S>();
  private readonly deleted = new Set<string>();
  private readonly ctl = new AbortController();
  private closed = false;
  private started = false;
  /** Takes our listener off the caller's signal (when the watch ends). */
  private readonly unlink: () => void;

  constructor(
    private readonly client: ClientCore<S>,
    private readonly opts: WatchOptions<S>,
  ) {
    this.unlink = onAbortOf(opts.signal, () => this.ctl.abort(opts.signal!.reason));
  }

  /** The composite cursor after the last event handed out; pass it as `cursor` to resume later. */
  get cursor(): string {
    return encodeCursor(this.cursors);
  }

  /** Ends the iteration quietly (the pending `next()` resolves done). */
  close(): void {
    this.closed = true;
    this.ctl.abort();
    this.unlink();
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent<S, R>> {
    if (this.started) throw new SpoolError({ code: 'invalid_request', message: 'a watch stream can be iterated once' });
    this.started = true;
    return this.run();
  }

  private request(): WatchRequest<S> {
    const { raw: _raw, signal: _signal, reconnect: _r, maxReconnectDelayMs: _m, onReconnect: _o, ...req } = this.opts;
    return req;
  }

  /** POSTs the subscription (again, from our cursors, when `resume`); yields topics that vanished. */
  private async *openSession(resume: boolean): AsyncGenerator<WatchEvent<S, R>> {
    const req = this.request();
    let session: WatchSession<S>;
    try {
      session = await this.client.createWatch(resume ? { ...req, cursor: this.cursor } : req, { lenient: resume, signal: this.ctl.signal });
    } catch (e) {
      // Lenient: 404 means no named topic exists any more.
      if (!(resume && e instanceof SpoolError && e.code === 'topic_not_found')) throw e;
      session = { wid: '', stream_url: '', session_ttl_ms: 0, topics: {} };
    }
    this.wid = session.wid || undefined;
    for (const t of Object.keys(req.topics)) {
      const got = session.topics[t];
      if (got) {
        if (!resume) this.cursors.set(t, got.from_seq);
        this.deleted.delete(t);
      } else if (!this.deleted.has(t)) {
        // Deleted while we were away (the new session could not include it).
        this.deleted.add(t);
        yield { type: 'topic-deleted', topic: t, head_seq: this.cursors.get(t) ?? (0 as S), reason: 'deleted' };
      }
    }
  }

  private allDeleted(): boolean {
    return this.deleted.size >= Object.keys(this.opts.topics).length;
  }

  private async *run(): AsyncGenerator<WatchEvent<S, R>> {
    const policy = { baseMs: 250, maxMs: this.opts.maxReconnectDelayMs ?? 5000 };
    const hb = this.opts.heartbeat_ms ?? HEARTBEAT_DEFAULT_MS;
    const idleMs = 2 * Math.min(60_000, Math.max(1000, hb)) + WATCHDOG_SLACK_MS;
    let session: 'new' | 'again' | 'ok' = 'new';
    let attempt = 0;
    try {
      for (;;) {
        let delayMs = 0;
        try {
          if (session !== 'ok') {
            yield* this.openSession(session === 'again');
            session = 'ok';
            if (this.allDeleted()) return;
          }
          const res = await this.client.transport.openStream(
            `/v0/watch/${encodeURIComponent(this.wid!)}`,
            undefined,
            { 'last-event-id': this.cursor },
            this.ctl.signal,
          );
          attempt = 0;
          for await (const ev of readSse(res, new SseDecoder(), { idleMs, signal: this.ctl.signal })) {
            for (const out of this.onEvent(ev)) {
              yield out;
              if (this.ctl.signal.aborted) throw abortError(this.ctl.signal); // close() or abort while the caller held the event
            }
          }
          if (this.allDeleted()) return; // the server ends a stream whose topics are all gone
          throw new SpoolError({ code: CLIENT_CODES.network_error, message: 'the server closed the stream' });
        } catch (e) {
          const err = e instanceof SpoolError ? e : new SpoolError({ code: CLIENT_CODES.network_error, message: String(e), cause: e });
          if (this.ctl.signal.aborted) {
            if (this.closed) return;
            throw err;
          }
          const gone = (err.status === 404 && err.code === 'not_found') || err.status === 410;
          if (this.opts.reconnect === false || !(gone || err.transient) || (session === 'new' && !err.transient)) throw err;
          if (gone) session = 'again';
          delayMs =
            gone && attempt === 0 ? 0 : err.retryAfterMs !== undefined ? retryDelayMs(policy, attempt, err) : backoffMs(policy, attempt);
          attempt++;
          this.opts.onReconnect?.(err, attempt, delayMs);
        }
        await sleep(delayMs, this.ctl.signal).catch(() => undefined);
        if (this.ctl.signal.aborted) {
          if (this.closed) return;
          throw new SpoolError({ code: CLIENT_CODES.aborted, message: 'the watch was aborted' });
        }
      }
    } finally {
      this.ctl.abort();
      this.unlink();
    }
  }

  /** One SSE event: yields what it carries and moves the cursors; throws on a terminal error frame. */
  private *onEvent(ev: SseEvent): Generator<WatchEvent<S, R>> {
    switch (ev.type) {
      case 'record': {
        const f = this.client.decode<RecordFrame<S, R & { $seq: S }>>(ev.data, this.opts.raw === true);
        const cur = this.cursors.get(f.topic);
        if (cur === undefined) return; // not a topic of ours
        if (f.from_seq > cur) {
          throw new SpoolError({
            code: CLIENT_CODES.stream_gap,
            message: `${f.topic}: frame starts after ${String(f.from_seq)} but ${String(cur)} was the last seq handed out`,
          });
        }
        for (const record of f.records) {
          if (record.$seq <= this.cursors.get(f.topic)!) continue; // already handed out before a reconnect
          this.cursors.set(f.topic, record.$seq);
          yield { type: 'record', topic: f.topic, record };
        }
        if (f.to_seq > this.cursors.get(f.topic)!) this.cursors.set(f.topic, f.to_seq);
        return;
      }
      case 'tombstone': {
        const t = this.client.decode<Tombstone<S> & { topic: string }>(ev.data);
        if (!this.cursors.has(t.topic)) return;
        yield { ...t, type: 'tombstone' };
        this.cursors.set(t.topic, t.gap_to); // also moves back: `recreated` starts a new instance
        return;
      }
      case 'caught-up': {
        const c = this.client.decode<{ topic: string; head_seq: S }>(ev.data);
        if (this.cursors.has(c.topic)) yield { type: 'caught-up', topic: c.topic, head_seq: c.head_seq };
        return;
      }
      case 'topic-deleted': {
        const d = this.client.decode<{ topic: string; head_seq: S }>(ev.data);
        if (!this.cursors.has(d.topic) || this.deleted.has(d.topic)) return;
        this.deleted.add(d.topic);
        yield { type: 'topic-deleted', topic: d.topic, head_seq: d.head_seq, reason: 'deleted' };
        return;
      }
      case 'error': {
        const p = JSON.parse(ev.data) as ErrorFramePayload;
        if (!p.terminal) return; // advisory pacing: delivery slows, nothing is skipped
        throw new SpoolError({ code: p.error, message: p.message, status: p.code, retryAfterMs: p.retry_after_ms });
      }
      default: // unknown events are ignored (docs/API.md "Conventions": versions are additive)
    }
  }
}
