// Keeps one job's lease alive while its handler runs: extends it every third of the lease
// (`extend` sets the deadline to now + lease_ms, docs/QUEUES.md "Job states"), always with the job's lease_id, so a
// worker whose lease was lost can never extend someone else's delivery. The lease counts as lost
// when the server skips the seq (expired and reclaimed, or released with its /work connection),
// or when no extension has succeeded for a whole lease (the deadline has passed by our clock: a
// timer of its own, so an extend the server never answers cannot hold it off); then `onLost`
// fires once and the keeper stops.
import type { ClientCore } from './core.js';
import type { SpoolError } from './errors.js';

export interface LeaseKeeperOptions<S> {
  client: ClientCore<S>;
  queue: string;
  node: string;
  seq: S;
  leaseId: string;
  leaseMs: number;
  onLost: (why: string) => void;
  onError?: (err: SpoolError) => void;
}

export class LeaseKeeper<S> {
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Fires when the lease runs out by our clock, unless an extension moved it first. */
  private deadline: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  private lost = false;
  private lastOkAt: number;
  private inFlight: Promise<void> | undefined;
  /** Ends an extend still waiting (with its retries) once the lease is lost: nothing needs it. */
  private readonly calls = new AbortController();

  constructor(private readonly o: LeaseKeeperOptions<S>) {
    this.lastOkAt = Date.now();
  }

  get isLost(): boolean {
    return this.lost;
  }

  start(): void {
    this.armDeadline();
    this.schedule();
  }

  /**
   * Stops extending; waits for an extension already on the wire so it cannot land after an ack
   * (a lost lease is never acked: then nothing waits, not even for a call the server never answers).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.deadline !== undefined) clearTimeout(this.deadline);
    if (!this.lost) await this.inFlight;
  }

  /**
   * The lease is lost once a whole lease passed since the last extension that succeeded, whatever
   * the calls in flight do: an extend the server never answers waits for its timeout and retries,
   * minutes during which another worker may hold the job, and the handler must stop first.
   */
  private armDeadline(): void {
    if (this.deadline !== undefined) clearTimeout(this.deadline);
    const due = this.lastOkAt + this.o.leaseMs - Date.now();
    this.deadline = setTimeout(
      () => {
        if (!this.stopped) this.markLost(`no extension succeeded for ${this.o.leaseMs} ms`);
      },
      Math.max(0, due),
    );
  }

  private schedule(): void {
    if (this.stopped || this.lost) return;
    this.timer = setTimeout(
      () => {
        this.inFlight = this.tick().finally(() => {
          this.inFlight = undefined;
          this.schedule();
        });
      },
      Math.max(50, Math.floor(this.o.leaseMs / 3)),
    );
  }

  private async tick(): Promise<void> {
    const o = this.o;
    const sentAt = Date.now();
    try {
      const r = await o.client.extend(o.queue, {
        node: o.node,
        seqs: [o.seq],
        lease_ids: [o.leaseId],
        lease_ms: o.leaseMs,
        signal: this.calls.signal,
      });
      if (this.stopped) return;
      if (r.extended === 1) {
        this.lastOkAt = sentAt;
        if (!this.lost) this.armDeadline();
      } else this.markLost('the lease expired or was released (extend skipped it)');
    } catch (e) {
      if (this.lost) return; // aborted by markLost
      o.onError?.(e as SpoolError);
      if (!this.stopped && Date.now() - this.lastOkAt >= o.leaseMs) this.markLost(`no extension succeeded for ${o.leaseMs} ms`);
    }
  }

  private markLost(why: string): void {
    if (this.lost) return;
    this.lost = true;
    if (this.deadline !== undefined) clearTimeout(this.deadline);
    this.calls.abort();
    this.o.onLost(why);
  }
}
