// Retry timing shared by requests, stream reconnects and worker nacks: capped exponential
// backoff with jitter, and an abortable sleep. Pure apart from the sleep's timer.
import { CLIENT_CODES, SpoolError } from './errors.js';

export interface BackoffPolicy {
  /** First delay, ms. */
  baseMs: number;
  /** Largest delay, ms. */
  maxMs: number;
}

/**
 * Delay before retry number `attempt` (0-based): base × 2^attempt capped at max, then "equal
 * jitter" (half fixed, half random) so a crowd of clients spreads out without ever retrying at once.
 */
export function backoffMs(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * The wait before retrying after `err`: the server's own figure when it gave one (Retry-After or
 * detail.retry_after_ms), never less than the backoff's fixed half; otherwise the backoff.
 */
export function retryDelayMs(policy: BackoffPolicy, attempt: number, err: SpoolError, random: () => number = Math.random): number {
  const b = backoffMs(policy, attempt, random);
  return err.retryAfterMs === undefined ? b : Math.max(err.retryAfterMs, Math.round(b / 2));
}

/** Resolves after `ms`, or rejects with SpoolError `aborted` as soon as `signal` fires. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Runs `onAbort` once when `signal` aborts, at once if it already has (an `abort` listener alone
 * would never hear it); returns the undo, which takes the listener off the caller's signal again,
 * so one signal shared by many watches or workers does not gather theirs.
 */
export function onAbortOf(signal: AbortSignal | undefined, onAbort: () => void): () => void {
  if (signal === undefined) return () => undefined;
  if (signal.aborted) {
    onAbort();
    return () => undefined;
  }
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

export function abortError(signal: AbortSignal): SpoolError {
  return signal.reason instanceof SpoolError
    ? signal.reason
    : new SpoolError({ code: CLIENT_CODES.aborted, message: 'aborted', cause: signal.reason });
}
