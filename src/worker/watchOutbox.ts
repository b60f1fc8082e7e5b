// The worker's side of watch fan-out (DESIGN 6): which topics main has open streams on (only
// those are rendered and pushed), and the events of one event-loop turn, sent to main as one
// message on the raw events port with the batch buffers transferred.
import type { MessagePort } from 'node:worker_threads';
import type { WatchEvent, WatchEvents } from '../core/messages/events.js';

export class WatchOutbox {
  /** Open streams per topic name, as counted by main. */
  private readonly interest = new Map<string, number>();
  private events: WatchEvent[] = [];
  private scheduled = false;

  constructor(private readonly port: MessagePort | undefined) {}

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
    if (!this.port) return;
    this.events.push(ev);
    if (!this.scheduled) {
      this.scheduled = true;
      // After the turn's other steps, like the WAL submission: one message per turn.
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    const events = this.events;
    this.events = [];
    if (events.length === 0 || !this.port) return;
    const transfer: ArrayBuffer[] = [];
    for (const ev of events) {
      // renderPush allocates each batch buffer on its own (never a pool slice), so it can move.
      if (ev.k === 'batch' && ev.buf.byteLength > 0 && ev.buf.byteOffset === 0 && ev.buf.byteLength === ev.buf.buffer.byteLength) {
        transfer.push(ev.buf.buffer as ArrayBuffer);
      }
    }
    const msg: WatchEvents = { t: 'watch', events };
    this.port.postMessage(msg, transfer);
  }
}
