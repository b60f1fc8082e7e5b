// Pacing of SSE streams under pressure (docs/API.md "Error frames"; docs/ARCHITECTURE.md "Admission"; main thread). Every pacing tick while
// pressure is on, each watch stream's topics whose effective_priority is below
// SERVICE_PRESSURE_PACE_BELOW are paced: the stream gets the advisory 429 `error` frame naming
// them (again whenever that set changes) and they deliver one record frame per tick, from their
// cursor, so they slow down and skip nothing. A `/work` stream of such a queue gets the advisory
// frame once per pressure episode; its delivery is already bounded by its `max` leases in
// flight. When pressure ends every paced topic resumes at once. A stream still opening is left
// to the first tick after it opened: a frame queued before its head would go out first, with
// Node's default head, and the stream's own open would then fail.
import type { PressureMonitor } from '../pressure/monitor.js';
import type { PriorityBook } from '../pressure/priorityBook.js';
import type { WatchStream } from './watch/stream.js';
import type { WorkStream } from './work/workStream.js';

export interface PacerOptions {
  paceMs: number;
  /** Topics with effective_priority below this are paced. */
  below: number;
}

export class StreamPacer {
  private timer: NodeJS.Timeout | undefined;
  private advisedWork = new WeakSet<WorkStream>();
  private readonly pacedWatch = new Set<WatchStream>();
  advisories = 0;

  constructor(
    private readonly monitor: PressureMonitor,
    private readonly book: PriorityBook,
    private readonly now: () => number,
    private readonly watch: { openStreams(): Iterable<WatchStream> },
    private readonly work: { openStreams(): Iterable<WorkStream> },
    private readonly opts: PacerOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), this.opts.paceMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private low(topic: string, now: number): boolean {
    return this.book.effective(topic, now) < this.opts.below;
  }

  tick(): void {
    if (!this.monitor.pressured) {
      for (const s of this.pacedWatch) s.setPaced([]);
      this.pacedWatch.clear();
      this.advisedWork = new WeakSet(); // a new pressure episode advises again
      return;
    }
    const now = this.now();
    const frame = {
      code: 429,
      error: 'throttled',
      message: 'the server is under pressure; delivery of these topics is slowed',
      terminal: false,
      retry_after_ms: this.opts.paceMs,
    };
    for (const s of this.watch.openStreams()) {
      if (!s.opened) continue;
      const low = s.session.names.filter((n) => this.low(n, now));
      if (s.setPaced(low) && low.length > 0) {
        s.advise({ ...frame, topics: low });
        this.advisories++;
      }
      if (low.length > 0) this.pacedWatch.add(s);
      else this.pacedWatch.delete(s);
      s.pullPaced();
    }
    for (const s of this.work.openStreams()) {
      if (!s.opened || this.advisedWork.has(s) || !this.low(s.topic, now)) continue;
      this.advisedWork.add(s);
      s.advise({ ...frame, topic: s.topic });
      this.advisories++;
    }
  }
}
