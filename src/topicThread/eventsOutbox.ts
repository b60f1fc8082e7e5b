// The worker's side of the events port to main (docs/ARCHITECTURE.md "Thread crossings", "Watch streams"): which topics main has open watch
// streams on (only those are rendered and pushed), and the watch and `/work` events of one
// event-loop turn, sent as one message with the batch and job-frame buffers transferred.
import type { MessagePort } from 'node:worker_threads';
import type { WatchEvent, WorkerEvents, WorkEvent } from '../protocol/messages/events.js';

/** True when `b` owns its whole ArrayBuffer (never a pool slice), so it can be transferred. */
function standalone(b: Uint8Array): boolean {
  return b.byteLength > 0 && b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer;
}

export class EventsOutbox {
  /** Open watch streams per topic name, as counted by main. */
  private readonly interest = new Map<string, number>();
  private watch: WatchEvent[] = [];
  private work: WorkEvent[] = [];
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
    this.watch.push(ev);
    this.schedule();
  }

  pushWork(ev: WorkEvent): void {
    if (!this.port) return;
    this.work.push(ev);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // After the turn's other steps, like the WAL submission: one message per turn.
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const msg: WorkerEvents = { t: 'events', watch: this.watch, work: this.work };
    this.watch = [];
    this.work = [];
    if (!this.port || (msg.watch.length === 0 && msg.work.length === 0)) return;
    const transfer: ArrayBuffer[] = [];
    // Batch buffers and job frames are allocated on their own by the actors, so they can move.
    for (const ev of msg.watch) if (ev.k === 'batch' && standalone(ev.buf)) transfer.push(ev.buf.buffer as ArrayBuffer);
    for (const ev of msg.work) if (ev.k === 'jobs' && standalone(ev.frames)) transfer.push(ev.frames.buffer as ArrayBuffer);
    this.port.postMessage(msg, transfer);
  }
}
