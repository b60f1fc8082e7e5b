// One `/work` push connection (docs/API.md "Queues", "Work frames"): `GET /v0/topics/:q/work` yields the job frames
// the server pushes, each a leased job. It does not reconnect: when the connection closes the
// server releases every lease delivered on it, so the owner (a Worker) must know which jobs died
// with it. A terminal `error` frame (409 not_a_queue, 503 shutting_down) ends it with a SpoolError.
import { CLIENT_CODES, SpoolError } from './errors.js';
import { readSse, SseDecoder } from './sse.js';
import type { ClientCore } from './core.js';
import type { ErrorFramePayload, Job } from './types.js';

export interface WorkStreamOptions {
  node: string;
  /** Jobs kept leased to this connection (default 1, server clamp 1000). */
  max?: number;
  lease_ms?: number;
  raw?: boolean;
  /** Closes the connection (its leases are released); ending the iteration closes it too. */
  signal?: AbortSignal;
}

export type WorkEvent<S, D> = { type: 'open' } | { type: 'job'; job: Job<S, D, unknown> };

/** Heartbeats come every 15 s of silence on `/work` (docs/API.md "SSE frame formats"); two of them plus slack. */
const WORK_IDLE_MS = 32_000;

export async function* openWork<S>(client: ClientCore<S>, queue: string, opts: WorkStreamOptions): AsyncGenerator<WorkEvent<S, unknown>> {
  // Ours ends the connection when the iteration ends however it ends (a break, an error), with or
  // without the caller's signal.
  const own = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, own.signal]) : own.signal;
  try {
    const res = await client.transport.openStream(
      `/v0/topics/${encodeURIComponent(queue)}/work`,
      { node: opts.node, max: opts.max, lease_ms: opts.lease_ms },
      {},
      signal,
    );
    yield { type: 'open' };
    for await (const ev of readSse(res, new SseDecoder(), { idleMs: WORK_IDLE_MS, signal })) {
      if (ev.type === 'job') {
        yield { type: 'job', job: client.decode<Job<S, unknown, unknown>>(ev.data, opts.raw === true, true) };
      } else if (ev.type === 'error') {
        const p = JSON.parse(ev.data) as ErrorFramePayload;
        if (p.terminal) throw new SpoolError({ code: p.error, message: p.message, status: p.code, retryAfterMs: p.retry_after_ms });
      }
    }
    throw new SpoolError({ code: CLIENT_CODES.network_error, message: 'the server closed the work stream' });
  } finally {
    own.abort();
  }
}
