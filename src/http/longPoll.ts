// One diff long-poll on main (docs/API.md "Diff" `wait_ms`; docs/ARCHITECTURE.md "Thread
// crossings"), from its route to its answer: counted in `spool_long_polls_waiting` until the
// answer comes, and ended at once when its client leaves, whenever that happens. Main thread.
//
// The rule for a client gone early: before the diff is posted to its worker (while the route
// drains routers into the topic), the diff is posted as a plain read (`waitMs` 0), so it never
// parks; after it is posted, `cancelWait` follows it on the same port, so the worker sees the
// diff first and the cancel cannot be lost. Nothing is remembered on the worker for it.
//
// A parked long-poll is this one object, its three callbacks and the route's (Fastify's and
// node:http's) request and response: it keeps the topic and id, not the diff request
// (docs/PERFORMANCE.md "The request path, stage by stage").
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

const POSTED = 1;
const GONE = 2;
const ANSWERED = 4;

let lastWaitId = 0;

/** A new id for a request whose wait `cancelWait` may end (long-polls and claims share them). */
export function nextWaitId(): number {
  return ++lastWaitId;
}

export abstract class LongPoll {
  private state = 0;
  private readonly topic: string;
  private readonly waitId: number;

  /** The worker's answer (`then`'s callbacks, made once per long-poll). */
  readonly answer = (r: TopicResult): void => {
    this.settle();
    this.send(r);
  };

  /** The request failed (an abandoned worker): nothing is parked, and the count goes down too. */
  readonly failed = (err: unknown): void => {
    this.settle();
    this.sendError(err);
  };

  private readonly onClose = (): void => {
    if (this.state & ANSWERED) return;
    this.state |= GONE;
    if (!(this.state & POSTED)) return; // post() sends it as a plain read
    this.port.request({ op: 'cancelWait', topic: this.topic, waitId: this.waitId }).catch(() => {}); // only an abandoned worker rejects, and then nothing is parked
  };

  /** Numbers `diff` (DiffRequest.waitId), counts it, and listens for `res`'s close. */
  constructor(
    diff: DiffRequest,
    private readonly port: WaitPort,
    private readonly counter: WaitCounter,
    res: ClosingResponse,
  ) {
    this.topic = diff.topic;
    this.waitId = diff.waitId = nextWaitId();
    counter.longPollsWaiting++;
    res.on('close', this.onClose);
  }

  /** Posts `diff` (the one given to the constructor) to its worker: a plain read when the client is gone already. */
  post(diff: DiffRequest): Promise<TopicResult> {
    if (this.state & GONE || this.socketGone()) diff.waitMs = 0;
    this.state |= POSTED;
    return this.port.request(diff);
  }

  /** The answer came (or the request failed): the count goes down once, a later close does nothing. */
  private settle(): void {
    if (this.state & ANSWERED) return;
    this.state |= ANSWERED;
    this.counter.longPollsWaiting--;
  }

  /** Sends the worker's result to the client. */
  protected abstract send(r: TopicResult): void;
  /** Sends a failure of the request itself. */
  protected abstract sendError(err: unknown): void;
  /** Whether the client's connection is gone already (its `close` may have come before this object). */
  protected abstract socketGone(): boolean;
}
