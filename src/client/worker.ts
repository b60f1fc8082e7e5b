// `spool.worker(queue, handler, opts)`: runs a handler per job, `concurrency` at a time.
//
// Jobs come from `/work` push connections (mode 'push', the default: the server keeps
// `concurrency` jobs leased to the connection and refills as we ack) or from `claim` polling
// (mode 'poll'). Each running job has a LeaseKeeper extending its lease; success acks it and
// failure nacks it with a backoff delay, both with the job's lease_id, so a worker that lost a
// lease can never settle someone else's delivery (the server skips it; counted as `lost`).
// When a push connection closes, the server releases every lease delivered on it: the handlers
// still running for those jobs see their signal abort (the job will be delivered again).
//
// stop() is graceful: no new jobs are started, running handlers finish and are settled, then the
// connection closes (in push mode jobs pushed meanwhile are left alone and released by that close).
// A handler that throws an UnrecoverableError fails its job for good: the job is termed (sent to
// the queue's dead-letter topic at once, the error's message as its reason) instead of nacked.
// Poll mode uses blocking claims (`wait_ms`), so an idle worker waits on the server, not in a loop.
import { backoffMs, onAbortOf, sleep } from './backoff.js';
import { CLIENT_CODES, SpoolError } from './errors.js';
import { randomHex } from './ids.js';
import { LeaseKeeper } from './leaseKeeper.js';
import { openWork } from './work.js';
import type { ClientCore } from './core.js';
import type { Job } from './types.js';

/**
 * Thrown by a job handler: the job can never succeed (bad input, a permanent refusal), so it is
 * not retried. The worker terms it: the job goes to the queue's dead-letter topic at once with
 * `$dead_letter_reason` = the message (or, with no dead-letter topic, back to the queue). As
 * BullMQ's UnrecoverableError or nats.js `term`.
 */
export class UnrecoverableError extends Error {
  /** Recognized across bundles (a second copy of this module) by this flag, not only by instanceof. */
  readonly unrecoverable = true;
  constructor(message: string) {
    super(message);
    this.name = 'UnrecoverableError';
  }
}

function isUnrecoverable(err: unknown): err is Error {
  return err instanceof UnrecoverableError || (err instanceof Error && (err as { unrecoverable?: unknown }).unrecoverable === true);
}

/** The reason stamped on a termed job: the error's message, cut to the server's 1024 bytes. */
function reasonOf(err: Error): string {
  let r = err.message;
  while (new TextEncoder().encode(r).length > 1024) r = r.slice(0, -1);
  return r;
}

export interface JobContext {
  /** Aborts when the lease is lost (the job will be delivered again) or on a forced stop. */
  signal: AbortSignal;
  node: string;
  queue: string;
}

export type JobHandler<J> = (job: J, ctx: JobContext) => unknown;

export interface WorkerOptions {
  /** Worker identity sent as `node` (default `worker-<random hex>`). */
  node?: string;
  /** Jobs handled at once (default 1). */
  concurrency?: number;
  /** Lease per job and extension length (default: the queue's `lease_ms`). */
  leaseMs?: number;
  /** 'push' (default): `/work` streams; 'poll': `claim` requests. */
  mode?: 'push' | 'poll';
  /** Jobs' `data`/`meta` as verbatim JSON texts. */
  raw?: boolean;
  /** Aborting it stops the worker gracefully, as stop() does. */
  signal?: AbortSignal;
  /** Delay of the nack after a failed handler (default 1 s doubling per delivery, at most 60 s, jittered). */
  nackDelayMs?: (deliveries: number, err: unknown) => number;
  /** Poll mode: how long one blocking claim waits for a job, ms (default 1000; the server allows up to 30000). */
  pollIntervalMs?: number;
  /** Told about handler failures, lost leases and transport errors (default: ignored). */
  onError?: (err: unknown, job?: { seq: unknown; deliveries: number }) => void;
}

export interface WorkerStats {
  started: number;
  acked: number;
  nacked: number;
  /** Jobs failed for good (UnrecoverableError) and moved to the dead-letter topic. */
  terminated: number;
  /** Jobs whose lease was gone before they could be settled (they will be delivered again). */
  lost: number;
}

type AnyJob<S> = Job<S, unknown, unknown>;

interface Running {
  job: AnyJob<unknown>;
  ctl: AbortController;
  lost: string | undefined;
  settled: Promise<void>;
}

const RECONNECT = { baseMs: 250, maxMs: 5000 };
const NACK_BACKOFF = { baseMs: 1000, maxMs: 60_000 };

export class Worker<S> {
  readonly node: string;
  readonly stats: WorkerStats = { started: 0, acked: 0, nacked: 0, terminated: 0, lost: 0 };
  /** Settles when the worker has stopped and every started job is settled; rejects on a fatal error. */
  readonly done: Promise<void>;
  private readonly concurrency: number;
  private readonly running = new Map<string, Running>();
  private readonly stopCtl = new AbortController();
  private conn: AbortController | undefined;
  private slotWaiter: (() => void) | undefined;
  private draining = false;
  private leaseMs = 0;

  constructor(
    private readonly client: ClientCore<S>,
    readonly queue: string,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- decoded or raw jobs, as the overloads of `worker()` chose
    private readonly handler: JobHandler<any>,
    private readonly opts: WorkerOptions,
  ) {
    this.node = opts.node ?? `worker-${randomHex(6)}`;
    this.concurrency = Math.max(1, Math.floor(opts.concurrency ?? 1));
    // A signal aborted already stops the worker before it asks for anything.
    if (opts.signal?.aborted) {
      this.draining = true;
      this.stopCtl.abort();
    }
    this.done = this.main();
    this.done.catch(() => undefined); // callers who never look at `done` get no unhandled rejection
    const unlink = onAbortOf(opts.signal, () => void this.stop());
    this.done.then(unlink, unlink);
  }

  /**
   * Graceful stop: no job starts any more and running handlers finish. After `timeoutMs` (default:
   * none) their signals abort; the stop still waits for them to return.
   */
  async stop(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (!this.draining) {
      this.draining = true;
      this.stopCtl.abort();
      this.slotWaiter?.();
    }
    if (opts.timeoutMs !== undefined) {
      const t = setTimeout(() => this.abortAll('the worker is stopping'), opts.timeoutMs);
      await this.done.catch(() => undefined);
      clearTimeout(t);
    } else await this.done.catch(() => undefined);
  }

  /**
   * Hands an error to the caller's `onError`. A callback that throws must not stop the worker or
   * leave a job unsettled (it ran before the job's nack), nor become an unhandled rejection: what
   * it threw goes to the console.
   */
  private report(err: unknown, job?: { seq: unknown; deliveries: number }): void {
    try {
      this.opts.onError?.(err, job);
    } catch (thrown) {
      console.error('spool worker: onError threw', thrown);
    }
  }

  /**
   * Aborts the running handlers' signals. The `/work` connection stays open until they settle (as
   * in a stop without a timeout): closing it now would release their leases, so a handler that
   * returns after the abort could not ack its job, where a polling worker's would.
   */
  private abortAll(why: string): void {
    for (const r of this.running.values()) r.ctl.abort(new SpoolError({ code: CLIENT_CODES.aborted, message: why }));
  }

  private async main(): Promise<void> {
    try {
      const leaseMs = this.opts.leaseMs ?? (await this.queueLeaseMs());
      if (leaseMs === undefined) return; // stopped before the server answered
      this.leaseMs = leaseMs;
      if (this.opts.mode === 'poll') await this.pollLoop();
      else await this.pushLoop();
    } finally {
      this.draining = true;
      await Promise.all([...this.running.values()].map((r) => r.settled));
      this.conn?.abort();
    }
  }

  /**
   * The queue's lease_ms, asked until the server answers: a worker started while the server is
   * down or still recovering waits for it, as a running one rides out an outage.
   */
  private async queueLeaseMs(): Promise<number | undefined> {
    for (let failures = 0; !this.draining; failures++) {
      try {
        return (await this.client.getTopic(this.queue, { touch: false })).config.lease_ms;
      } catch (e) {
        if (this.isFatal(e)) throw e;
        this.report(e);
        await sleep(backoffMs(RECONNECT, failures), this.stopCtl.signal).catch(() => undefined);
      }
    }
    return undefined;
  }

  private isFatal(err: unknown): boolean {
    if (!(err instanceof SpoolError)) return true;
    return !(err.transient || err.code === CLIENT_CODES.aborted || err.code === CLIENT_CODES.bad_response);
  }

  // ---- job sources ----------------------------------------------------------------------

  private async pollLoop(): Promise<void> {
    let idle = 0;
    let failures = 0;
    const maxIdleMs = this.opts.pollIntervalMs ?? 1000;
    const waitMs = Math.min(30_000, Math.max(0, maxIdleMs));
    while (!this.draining) {
      if (this.running.size >= this.concurrency) {
        await new Promise<void>((r) => (this.slotWaiter = r));
        continue;
      }
      let got: AnyJob<S>[];
      const askedAt = Date.now();
      try {
        // Not aborted by stop(): a claim cut off mid-flight would lease jobs nobody sees. A
        // blocking claim: while the queue is empty it waits on the server (at most waitMs).
        const r = await this.client.claim(this.queue, {
          node: this.node,
          max: this.concurrency - this.running.size,
          lease_ms: this.leaseMs,
          wait_ms: waitMs,
          raw: this.opts.raw,
        });
        got = r.claimed as AnyJob<S>[];
        failures = 0;
      } catch (e) {
        if (this.isFatal(e)) throw e;
        this.report(e);
        await sleep(backoffMs(RECONNECT, failures++), this.stopCtl.signal).catch(() => undefined);
        continue;
      }
      for (const job of got) this.start(job, undefined);
      // An empty answer that came back early (a server before blocking claims, a shutdown) is
      // followed by the old backoff, so an empty queue never turns into a busy loop.
      if (got.length === 0 && Date.now() - askedAt < waitMs / 2)
        await sleep(Math.min(maxIdleMs, 50 * 2 ** Math.min(idle++, 10)), this.stopCtl.signal).catch(() => undefined);
      else idle = 0;
    }
  }

  private async pushLoop(): Promise<void> {
    let failures = 0;
    // Once stopping (no job starts any more), close the connection when the running jobs are
    // settled: closing earlier would release their leases under them.
    const closeWhenDrained = async () => {
      await Promise.all([...this.running.values()].map((r) => r.settled));
      this.conn?.abort();
    };
    this.stopCtl.signal.addEventListener('abort', () => void closeWhenDrained(), { once: true });
    while (!this.draining) {
      const conn = new AbortController();
      this.conn = conn;
      const mine = new Set<Running>();
      try {
        for await (const ev of openWork(this.client, this.queue, {
          node: this.node,
          max: this.concurrency,
          lease_ms: this.leaseMs,
          raw: this.opts.raw,
          signal: conn.signal,
        })) {
          if (ev.type === 'open') {
            failures = 0;
            continue;
          }
          // While draining, pushed jobs are not started: closing the connection releases them.
          if (this.draining) continue;
          mine.add(this.start(ev.job as AnyJob<S>, mine));
        }
      } catch (e) {
        if (conn.signal.aborted && this.draining) break;
        if (this.isFatal(e)) throw e;
        this.report(e);
      } finally {
        // The server released every lease delivered on this connection.
        for (const r of mine) this.lose(r, 'its /work connection closed (the server released the lease)');
      }
      if (this.draining) break;
      await sleep(backoffMs(RECONNECT, failures++), this.stopCtl.signal).catch(() => undefined);
      // The next connection is leased `concurrency` jobs at once: handlers of the closed one
      // (aborted, but a handler may finish its work first) settle before it opens.
      await Promise.all([...this.running.values()].map((r) => r.settled));
    }
  }

  // ---- one job ---------------------------------------------------------------------------

  private start(job: AnyJob<S>, mine: Set<Running> | undefined): Running {
    let settle!: () => void;
    // `settled` exists before the handler runs: a handler may call stop(), which waits on it.
    const r: Running = { job, ctl: new AbortController(), lost: undefined, settled: new Promise<void>((res) => (settle = res)) };
    this.running.set(job.lease_id, r);
    this.stats.started++;
    void this.runJob(r).finally(() => {
      this.running.delete(job.lease_id);
      mine?.delete(r);
      settle();
      const w = this.slotWaiter;
      this.slotWaiter = undefined;
      w?.();
    });
    return r;
  }

  /**
   * A job whose ack was skipped is gone when no live record holds its seq any more: the ack was
   * applied, and its answer lost (the client resends an ack, and the resend finds nothing held),
   * or another holder acked it. Either way it is done and not delivered again: not `lost`.
   */
  private async gone(seq: S): Promise<boolean> {
    try {
      const before = (typeof seq === 'bigint' ? seq - 1n : (seq as number) - 1) as S;
      const r = await this.client.diff(this.queue, { from_seq: before, limit: 1 });
      const first = r.records[0] as { $seq: S } | undefined;
      return first === undefined || first.$seq !== seq;
    } catch {
      return false;
    }
  }

  private lose(r: Running, why: string): void {
    if (r.lost !== undefined) return;
    r.lost = why;
    r.ctl.abort(new SpoolError({ code: 'lease_lost', message: `job ${String(r.job.$seq)}: ${why}` }));
  }

  private async runJob(r: Running): Promise<void> {
    const job = r.job as AnyJob<S>;
    const info = { seq: job.$seq, deliveries: job.deliveries };
    const keeper = new LeaseKeeper<S>({
      client: this.client,
      queue: this.queue,
      node: this.node,
      seq: job.$seq,
      leaseId: job.lease_id,
      leaseMs: this.leaseMs,
      onLost: (why) => this.lose(r, why),
      onError: (e) => this.report(e, info),
    });
    keeper.start();
    let failure: { err: unknown } | undefined;
    try {
      await this.handler(job, { signal: r.ctl.signal, node: this.node, queue: this.queue });
    } catch (err) {
      failure = { err };
    }
    await keeper.stop();
    if (r.lost !== undefined) {
      this.stats.lost++;
      this.report(new SpoolError({ code: 'lease_lost', message: `job ${String(job.$seq)} not settled: ${r.lost}` }), info);
      return;
    }
    const fence = { node: this.node, seqs: [job.$seq], lease_ids: [job.lease_id] };
    try {
      if (!failure) {
        const a = await this.client.ack(this.queue, fence);
        if (a.acked === 1 || (await this.gone(job.$seq))) this.stats.acked++;
        else this.stats.lost++;
      } else if (isUnrecoverable(failure.err)) {
        this.report(failure.err, info);
        const t = await this.client.term(this.queue, { ...fence, reason: reasonOf(failure.err) });
        if (t.terminated === 1) this.stats.terminated++;
        else if (t.released === 1)
          this.stats.nacked++; // no dead-letter topic: back in the queue
        else this.stats.lost++;
      } else {
        this.report(failure.err, info);
        const delay = this.opts.nackDelayMs?.(job.deliveries, failure.err) ?? backoffMs(NACK_BACKOFF, job.deliveries - 1);
        const n = await this.client.nack(this.queue, { ...fence, delay_ms: Math.max(0, Math.round(delay)) });
        if (n.nacked === 1) this.stats.nacked++;
        else this.stats.lost++;
      }
    } catch (e) {
      // The lease expires on its own and the job is delivered again.
      this.stats.lost++;
      this.report(e, info);
    }
  }
}
