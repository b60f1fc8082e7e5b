// One diff long-poll on main (docs/API.md "Diff" `wait_ms`; docs/ARCHITECTURE.md "Thread
// crossings"), from its route to its answer: counted in `spool_long_polls_waiting` until the
// answer comes, and ended at once when its client leaves, whenever that happens. Main thread.
//
// The rule for a client gone early: before the diff is posted to its worker (while the route
// drains routers into the topic), the diff is posted as a plain read (`waitMs` 0), so it never
// parks; after it is posted, `cancelWait` follows it on the same channel, so the worker sees the
// diff first and the cancel cannot be lost. Nothing is remembered on the worker for it.
import type { DiffRequest, TopicRequest, TopicResult } from '../protocol/messages/rpc.js';

/** Where the diff and its cancel go: the topic's worker (one ordered channel). */
export interface WaitPort {
  request(req: TopicRequest): Promise<TopicResult>;
}

/** The response's raw side: `close` once, when it ends or its client leaves. */
export interface ClosingResponse {
  on(event: 'close', listener: () => void): unknown;
}

/** The count the route keeps (Metrics.longPollsWaiting). */
export interface WaitCounter {
  longPollsWaiting: number;
}

let lastWaitId = 0;

export class LongPoll {
  private posted = false;
  private answered = false;
  private gone = false;

  constructor(
    private readonly diff: DiffRequest,
    private readonly port: WaitPort,
    private readonly counter: WaitCounter,
    /** Whether the client's connection is gone already (its `close` may have come before this object). */
    private readonly socketGone: () => boolean,
  ) {
    diff.waitId = ++lastWaitId;
    counter.longPollsWaiting++;
  }

  /** Listens for the response's close (call once, at the route). */
  watch(res: ClosingResponse): void {
    res.on('close', () => {
      if (this.answered) return;
      this.gone = true;
      if (!this.posted) return; // post() sends it as a plain read
      const { topic, waitId } = this.diff;
      this.port.request({ op: 'cancelWait', topic, waitId: waitId! }).catch(() => {}); // only an abandoned worker rejects, and then nothing is parked
    });
  }

  /** Posts the diff to its worker: a plain read when the client is gone already. */
  post(): Promise<TopicResult> {
    if (this.gone || this.socketGone()) this.diff.waitMs = 0;
    this.posted = true;
    return this.port.request(this.diff);
  }

  /** The answer came (or the request failed): the count goes down, a later close does nothing. */
  settle(): void {
    if (this.answered) return;
    this.answered = true;
    this.counter.longPollsWaiting--;
  }
}
