// The source side of routers (docs/ARCHITECTURE.md "Routers"): one Forwarder per router whose source is this topic
// instance, and the read-your-writes drains waiting on them. Plain data owned by one
// TopicInstance (a deleted topic takes its routers with it); forwarder.ts runs it.
import type { RouterDef } from '../../protocol/messages/router.js';

/** The one request a forwarder has out at a time. */
export interface InFlight {
  token: number;
  /** A probe asks the dest how far it holds this router; a forward carries copies of (cursor, srcLast]. */
  kind: 'probe' | 'forward';
  srcLast: number;
  /** Copies in a forward. */
  count: number;
}

export interface Forwarder {
  def: RouterDef;
  /** Every source seq at or below it is handled: copied (the dest acknowledged), filtered or skipped. */
  cursor: number;
  /** The dest answered a probe since this forwarder was installed (after a restart, it resumes there). */
  known: boolean;
  destId: number;
  inflight: InFlight | null;
  /** Backoff after a refusal (50 ms doubling to 2 s); 0 when not waiting. */
  retryTimerId: number;
  attempts: number;
  /** Waiting for texts read back from segments (a cold read token), else 0. */
  coldToken: number;
  /** forwarded_total as the dest last acknowledged it. */
  total: number;
  lastError: string | null;
  /** Records per batch now: halved when a dest refuses a batch as too large for its caps. */
  batchMax: number;
}

/** A routerDrain waiting until each named forwarder reaches `target` (or is blocked). */
export interface DrainWaiter {
  reqId: number;
  target: number;
  routers: string[];
}

export class RoutingState {
  readonly forwarders = new Map<string, Forwarder>();
  drains: DrainWaiter[] = [];
  /**
   * The server is draining (docs/ARCHITECTURE.md "Startup and shutdown" step 4): no batch or
   * probe is sent any more, so nothing lands in a dest after the final checkpoint. For good:
   * the process exits, and the next start resumes after what each dest holds.
   */
  stopped = false;
}
