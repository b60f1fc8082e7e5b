// The queue side of one queue topic instance (docs/ARCHITECTURE.md "Queues"): its lease table, its `/work`
// connections, the claim cohort waiting for a jitter window, claim passes waiting for cold
// texts, and dead-letter moves in flight. Created with the instance when its type is `queue`.
// Pure data; the operations are in the sibling modules.
import assert from 'node:assert/strict';
import { LeaseTable, type Lease } from './leaseTable.js';
import type { ActorCtx } from '../ctx.js';
import type { RedriveRequest } from '../../protocol/messages/rpc.js';

/** A `/work` stream as the actor sees it (the socket lives on main). */
export interface WorkConn {
  connId: number;
  node: string;
  /** Jobs kept leased to the connection. */
  max: number;
  leaseMs: number;
  /** The socket is backed up: no new leases until it drains. */
  paused: boolean;
}

/**
 * A claim request. `waitUntilMs` > now: a blocking claim (`wait_ms`) that waits for jobs when a
 * pass gives it none (parked in `QueueState.waiting`, its timer `timerId`); 0: it answers.
 */
export interface PollClaimer {
  k: 'poll';
  reqId: number;
  node: string;
  max: number;
  leaseMs: number;
  waitUntilMs: number;
  timerId: number;
  /** Main's id for the claim (0: none): its client left when `cancelWait` names it. */
  waitId: number;
}

/** Someone asking for jobs in a claim pass. */
export type Claimer = PollClaimer | { k: 'work'; conn: WorkConn };

/** A pass whose jobs were leased but whose replies wait for texts read back from segments. */
export interface ParkedPass {
  claimers: Claimer[];
  given: number[][];
  deadLetter: number[];
  leasesFrameNo: number;
  /** Seqs read back from segments for this pass so far (every one is in a segment). */
  readBack?: number[];
}

/** A job being copied to the dead-letter topic (a peer request in flight or waiting to retry). */
export interface DeadLetterMove {
  seq: number;
  /** The append body sent to the dead-letter topic's actor (kept for retries). */
  body: Buffer;
  attempts: number;
  /** Timer of the next retry, or 0 while a request is in flight. */
  retryTimerId: number;
  /** The claims of the pass that started the move, until its first answer (then undefined). */
  barrier: MoveWaiters | undefined;
}

/** A term (term.ts) waiting for cold texts or for the dead-letter topic's answer. */
export interface TermOp {
  reqId: number;
  /** The held jobs being moved, and their leases (given back if the move is refused). */
  seqs: number[];
  leases: Lease[];
  skipped: number[];
  reason: string | undefined;
  /** Seqs read back from segments for this term so far (every one is in a segment). */
  readBack?: number[];
}

/** A redrive under way (redrive.ts): one at a time per queue, driven by peer answers. */
export interface RedriveOp {
  reqId: number;
  req: RedriveRequest;
  /** The dead-letter topic and its instance (0 until its first answer). */
  from: string;
  fromId: number;
  /** Seqs of the dead-letter topic looked at so far, and the last one to look at (0: not known yet). */
  cursor: number;
  untilSeq: number;
  moved: number;
  skipped: number[];
  /** The peer request being waited for and what it is. */
  token: number;
  phase: 'read' | 'append' | 'delete';
  /** The batch in hand: seqs appended (or to append) and already-held ones, the read's cursor. */
  appendSeqs: number[];
  deleteSeqs: number[];
  next: number;
  done: boolean;
}

/** Dead-letter records this queue holds copies of, their delete there not yet confirmed. */
export interface RedrivePending {
  topic: string;
  seqs: Set<number>;
}

/** Claims waiting for dead-letter moves' first answers (MoveBarrier, moveBarrier.ts). */
export interface MoveWaiters {
  /** One move got its first answer; `frameNo`: its DELETE frame (0: not moved, or no frame). */
  settle(ctx: ActorCtx, frameNo: number): void;
  /** The queue was deleted first. */
  abort(ctx: ActorCtx, topic: string): void;
}

export class QueueState {
  readonly table = new LeaseTable();
  readonly conns = new Map<number, WorkConn>();
  /** Claimers waiting for the jitter window (claim_jitter_ms > 0) and its timer (0: none). */
  cohort: Claimer[] = [];
  cohortTimerId = 0;
  /** Passes waiting for cold texts, by read token. */
  readonly parkedPasses = new Map<number, ParkedPass>();
  /** Dead-letter moves by peer-request token. */
  readonly deadLetters = new Map<number, DeadLetterMove>();
  /** Retry timers of dead-letter moves: timer id → token. */
  readonly retryTimers = new Map<number, number>();
  /** Terms under way, by cold-read or peer-request token. */
  readonly terms = new Map<number, TermOp>();
  /** The redrive under way, and the redrive requests waiting for it (redrive.ts). */
  redriveOp: RedriveOp | undefined = undefined;
  redriveWaiting: { reqId: number; req: RedriveRequest }[] = [];
  /** By dead-letter instance id: records copied back whose delete is not confirmed (redrive.ts). */
  readonly redrivePending = new Map<number, RedrivePending>();
  /** Deletes of pending records in flight (token → the dead-letter instance and seqs). */
  readonly redriveDeletes = new Map<number, { fromId: number; seqs: number[] }>();
  /** The retry timer of those deletes (0: none), and failures in a row. */
  reconcileTimerId = 0;
  reconcileFailures = 0;
  /** A timer that wakes `/work` connections and blocking claims when the next lease expires or delay elapses. */
  wakeTimerId = 0;
  wakeAtMs = 0;
  /** Blocking claims waiting for jobs, in arrival order (not those in the jitter cohort). */
  waiting: PollClaimer[] = [];
  /** Wait timers of blocking claims (waiting or in the cohort): timer id → claim. */
  readonly waitTimers = new Map<number, PollClaimer>();

  /**
   * Nothing of the queue is under way (dormant.ts: it may sleep): no lease, nack delay or job on
   * its way to the dead-letter topic, no `/work` stream, claim cohort, blocking claim, term or
   * redrive under way, no dead-letter record waiting to be deleted, no parked pass or timer. What
   * is left (delivery counts, the dead-letter counter) is its snapshot part.
   */
  quiet(): boolean {
    const t = this.table;
    return (
      !t.holdsDeadlines() &&
      t.inTransit.size === 0 &&
      this.conns.size === 0 &&
      this.cohort.length === 0 &&
      this.cohortTimerId === 0 &&
      this.parkedPasses.size === 0 &&
      this.deadLetters.size === 0 &&
      this.terms.size === 0 &&
      this.redriveOp === undefined &&
      this.redrivePending.size === 0 &&
      this.redriveDeletes.size === 0 &&
      this.reconcileTimerId === 0 &&
      this.retryTimers.size === 0 &&
      this.wakeTimerId === 0 &&
      this.waiting.length === 0 &&
      this.waitTimers.size === 0
    );
  }

  /** Leases currently held, for the `in_flight` counter. */
  get inFlight(): number {
    return this.table.active.size;
  }

  /** Claimable now, given the instance's live job count (after a sweep). */
  ready(liveCount: number): number {
    const t = this.table;
    const ready = liveCount - t.active.size - t.delayed.size - t.inTransit.size;
    // The table holds only live jobs, in one state each: the counters can never go below 0.
    // The message is built only on failure: this runs for every claim and ack reply.
    if (ready < 0)
      assert.fail(
        `queue counters disagree: ${liveCount} live, ${t.active.size} leased, ${t.delayed.size} delayed, ${t.inTransit.size} in transit`,
      );
    return ready;
  }
}
