// The worker's side of the watch and `/work` events for main (docs/ARCHITECTURE.md "Thread crossings", "Watch streams"): which topics main has open watch
// streams on (only those are rendered and pushed), and where the actors' events go: the request
// channel's message of the turn (serveRequests `event`), next to the turn's results. Runs on the
// topic worker thread.
import type { WatchEvent, WorkerEvent, WorkEvent } from '../protocol/messages/events.js';

export class EventsOutbox {
  /** Open watch streams per topic name, as counted by main. */
  private readonly interest = new Map<string, number>();
  /** Where events go; none until the request channel is attached (a host without main drops them). */
  private send: ((ev: WorkerEvent) => void) | undefined;

  /** Events from now on leave through `send` (the request channel's, once per worker). */
  attach(send: (ev: WorkerEvent) => void): void {
    this.send = send;
  }

  watched(topic: string): boolean {
    return this.interest.has(topic);
  }

  /** Main opened (+1) or closed (-1) a stream on each of these topics. */
  setInterest(topics: string[], delta: 1 | -1): void {
    for (const t of topics) {
      const n = (this.interest.get(t) ?? 0) + delta;
      if (n > 0) this.interest.set(t, n);
      else this.interest.delete(t);
    }
  }

  publish(ev: WatchEvent): void {
    this.send?.(ev);
  }

  pushWork(ev: WorkEvent): void {
    this.send?.(ev);
  }
}
