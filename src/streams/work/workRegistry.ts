// WorkRegistry (main thread): the open `/work` streams by connection id (ids minted here, never
// reused in a process), the work events from the workers routed to them, and the rpc calls that
// tell a queue actor a stream paused, drained or closed. Every stream holds one SSE slot (docs/API.md "Limits")
// from before it opens until it closes.
import type { ServerResponse } from 'node:http';
import type { Supervisor } from '../../supervisor/supervisor.js';
import type { WorkEvent } from '../../protocol/messages/events.js';
import type { FlushPacer } from '../sse/flushPacer.js';
import type { SseSlots } from '../sse/slots.js';
import { WorkStream } from './workStream.js';

export class WorkRegistry {
  private readonly streams = new Map<number, WorkStream>();

  /** The open streams (pressure pacing walks them). */
  openStreams(): Iterable<WorkStream> {
    return this.streams.values();
  }
  private nextConnId = 1;
  /** Releases in flight (rpc), so a shutdown can wait for them before the final checkpoint. */
  private readonly releasing = new Set<Promise<unknown>>();

  constructor(
    private readonly sup: Supervisor,
    private readonly pacer: FlushPacer,
    readonly slots: SseSlots,
  ) {
    sup.onWorkEvents = (events) => this.onEvents(events);
  }

  get size(): number {
    return this.streams.size;
  }

  /** A new stream (its SSE slot already taken), registered before the actor is asked to open it. */
  create(topic: string, res: ServerResponse): WorkStream {
    const stream = new WorkStream(this.nextConnId++, topic, res, this.pacer, {
      flow: (s, paused) => void this.sup.workerFor(s.topic).request({ op: 'workFlow', topic: s.topic, connId: s.connId, paused }),
      closed: (s) => this.onClosed(s),
    });
    this.streams.set(stream.connId, stream);
    return stream;
  }

  private onClosed(s: WorkStream): void {
    if (this.streams.get(s.connId) !== s) return;
    this.streams.delete(s.connId);
    this.slots.release();
    // Every lease delivered on the stream is released at once (docs/QUEUES.md "Job states"); harmless if the actor
    // never opened it or the queue is gone.
    const p = this.sup.workerFor(s.topic).request({ op: 'workClose', topic: s.topic, connId: s.connId });
    this.releasing.add(p);
    void p.finally(() => this.releasing.delete(p));
  }

  private onEvents(events: WorkEvent[]): void {
    for (const ev of events) {
      const s = this.streams.get(ev.connId);
      if (!s) continue; // closed meanwhile: its leases are being released
      if (ev.k === 'jobs') s.jobs(Buffer.from(ev.frames.buffer, ev.frames.byteOffset, ev.frames.byteLength));
      else s.fail({ code: ev.code, error: ev.error, message: ev.message, terminal: true, topic: ev.topic });
    }
  }

  /** Shutdown (docs/ARCHITECTURE.md "Startup and shutdown" step 3): a terminal 503 frame on every stream, and their leases released. */
  async closeAll(): Promise<void> {
    for (const s of [...this.streams.values()]) {
      s.fail({
        code: 503,
        error: 'shutting_down',
        message: 'draining before exit; reconnect later',
        terminal: true,
        retry_after_ms: 1000,
        topic: s.topic,
      });
    }
    await Promise.allSettled([...this.releasing]);
  }
}
