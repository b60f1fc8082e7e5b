// `spool.follow(topic)`: one topic read forever by long-poll diff (docs/API.md "Diff"). The cursor is the
// diff's `next_from_seq`, moved only after the records of a page were handed out, so a lost
// answer or a server restart just repeats the same diff: nothing is skipped, and records at or
// below the cursor are never yielded again. Transient failures (no answer, 429, 503) are waited
// out with backoff, forever; anything else (404 topic_not_found, 400) ends the iteration.
import { abortError, backoffMs, retryDelayMs, sleep } from './backoff.js';
import { SpoolError } from './errors.js';
import type { ClientCore } from './core.js';
import type { DiffResult, WatchEvent } from './types.js';

export interface FollowOptions<S> {
  /** Exclusive start cursor (default 0: from the earliest retained record). */
  from_seq?: S;
  /**
   * Start at the first record whose `$ts` is at or after this (ms since the epoch) instead of
   * `from_seq` (not both); the first diff resolves it, every later one goes on by seq.
   */
  from_ts?: number;
  /** Records per diff (default 256, server clamp 1000). */
  limit?: number;
  /** Long-poll wait per diff, ms (default 30000, the server's clamp). */
  wait_ms?: number;
  node?: string | string[];
  include_tags?: boolean;
  include_meta?: boolean;
  raw?: boolean;
  signal?: AbortSignal;
  /** Longest wait between attempts after a failure, ms (default 5000). */
  maxRetryDelayMs?: number;
  onRetry?: (err: SpoolError, attempt: number, delayMs: number) => void;
}

type Seq = number | bigint;

export async function* follow<S extends Seq>(
  client: ClientCore<S>,
  topic: string,
  opts: FollowOptions<S>,
): AsyncGenerator<WatchEvent<S, unknown>> {
  const policy = { baseMs: 250, maxMs: opts.maxRetryDelayMs ?? 5000 };
  const waitMs = opts.wait_ms ?? 30_000;
  // Undefined until the first page when starting from a time (the server resolves it).
  let cursor: S | undefined = opts.from_ts !== undefined ? undefined : (opts.from_seq ?? ((client.bigint ? 0n : 0) as S));
  let caughtUp = false;
  let attempt = 0;
  for (;;) {
    let page: DiffResult<S, { $seq: S }>;
    try {
      page = (await client.diff(topic, {
        // Both given: sent as given, for the server's 400.
        ...(cursor === undefined ? { from_ts: opts.from_ts, from_seq: opts.from_seq } : { from_seq: cursor }),
        limit: opts.limit,
        node: opts.node,
        include_tags: opts.include_tags,
        include_meta: opts.include_meta,
        wait_ms: waitMs,
        raw: opts.raw,
        signal: opts.signal,
      })) as DiffResult<S, { $seq: S }>;
      attempt = 0;
    } catch (e) {
      const err = e as SpoolError;
      if (!(err instanceof SpoolError) || !err.transient || opts.signal?.aborted) throw e;
      const delay = err.retryAfterMs !== undefined ? retryDelayMs(policy, attempt, err) : backoffMs(policy, attempt);
      attempt++;
      opts.onRetry?.(err, attempt, delay);
      await sleep(delay, opts.signal);
      continue;
    }
    const stopped = () => {
      if (opts.signal?.aborted) throw abortError(opts.signal); // aborted while the caller held an event
    };
    if (page.tombstone) {
      yield { ...page.tombstone, type: 'tombstone', topic };
      stopped();
      caughtUp = false;
    }
    for (const record of page.records) {
      // After a `recreated` tombstone the new instance starts below the old cursor.
      if (!page.tombstone && cursor !== undefined && record.$seq <= cursor) continue;
      yield { type: 'record', topic, record };
      stopped();
      caughtUp = false;
    }
    cursor = page.next_from_seq;
    if (page.caught_up && !caughtUp) {
      caughtUp = true;
      yield { type: 'caught-up', topic, head_seq: page.head_seq };
      stopped();
    }
  }
}
