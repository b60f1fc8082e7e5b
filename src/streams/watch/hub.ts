// WatchHub (main thread): the open watch streams, the worker events that feed them, and the
// interest each worker is told about (workers render pushes only for topics with an open
// stream). It keeps the newest known state of every followed topic, so a pull that raced a push
// or a delete can tell (docs/ARCHITECTURE.md "Watch streams"). Flushing is the shared FlushPacer's (src/streams/sse/).
import type { ServerResponse } from 'node:http';
import type { Supervisor } from '../../supervisor/supervisor.js';
import type { FlushPacer } from '../sse/flushPacer.js';
import type { SseSlots } from '../sse/slots.js';
import type { TopicResult } from '../../protocol/messages/rpc.js';
import type { WatchBatch, WatchEvent } from '../../protocol/messages/events.js';
import { ProjectionCache, projectionKey, type PushFrames } from './projection.js';
import type { WatchSession, WatchRegistry } from './session.js';
import { WatchStream, type StreamDeps } from './stream.js';

interface TopicLatest {
  instanceId: number;
  head: number;
  durableHead: number;
  deleted: boolean;
}

export class WatchHub {
  /** Open streams per followed topic. */
  private readonly byTopic = new Map<string, Set<WatchStream>>();
  private readonly latestByTopic = new Map<string, TopicLatest>();
  private readonly streams = new Set<WatchStream>();

  /** The open streams (pressure pacing walks them). */
  openStreams(): Iterable<WatchStream> {
    return this.streams;
  }
  private readonly projections = new ProjectionCache();
  private readonly projectionKeys = new WeakMap<WatchSession, string>();
  private batchNo = 0;
  /** The frames last handed out: the streams of one batch mostly share one projection. */
  private lastFrames: { batchNo: number; key: string; frames: PushFrames } | undefined;
  private readonly deps: StreamDeps;

  /** Observes each pushed batch's age (now − its first record's $ts): watch delivery latency. */
  onBatchLatency: ((ms: number) => void) | undefined;

  constructor(
    private readonly sup: Supervisor,
    readonly registry: WatchRegistry,
    /** The SSE connection cap, shared with `/work` streams (docs/API.md "Limits"). */
    readonly slots: SseSlots,
    private readonly log: (msg: string) => void,
    /** The process's one flush pacer, shared with every other SSE stream. */
    pacer: FlushPacer,
  ) {
    sup.onWatchEvents = (events) => this.onEvents(events);
    this.deps = {
      read: (topic, fromSeq, first, s, probe) => this.read(topic, fromSeq, first, s, probe),
      latest: (topic) => this.latestByTopic.get(topic),
      pushFrames: (b, no, s) => this.pushFrames(b, no, s),
      singleTopicFrames: (f, topic) => this.projections.singleTopicFrames(f, topic),
      closed: (stream) => this.onClosed(stream),
      pacer,
      now: () => Date.now(),
      readFailed: (topic, message) => this.log(`spool: watch read of ${topic} failed: ${message}`),
    };
  }

  /**
   * Opens a stream on a session (its SSE slot already taken): interest first, so no push between
   * it and the first read is missed.
   */
  async open(session: WatchSession, res: ServerResponse): Promise<void> {
    const stream = new WatchStream(session, res, this.deps);
    this.streams.add(stream);
    this.registry.touch(session, 1);
    for (const name of session.names) {
      let set = this.byTopic.get(name);
      if (!set) this.byTopic.set(name, (set = new Set()));
      set.add(stream);
    }
    await this.setInterest(session.names, 1);
    stream.open();
  }

  private onClosed(stream: WatchStream): void {
    if (!this.streams.delete(stream)) return;
    this.slots.release();
    this.registry.touch(stream.session, -1);
    for (const name of stream.session.names) {
      const set = this.byTopic.get(name);
      set?.delete(stream);
      if (set && set.size === 0) {
        this.byTopic.delete(name);
        this.latestByTopic.delete(name);
      }
    }
    void this.setInterest(stream.session.names, -1);
  }

  private async setInterest(names: readonly string[], delta: 1 | -1): Promise<void> {
    const groups = this.sup.namesByWorker(names);
    await Promise.all(this.sup.workers.map((w, i) => (groups[i]!.length > 0 ? w.watchInterest(groups[i]!, delta) : undefined)));
  }

  private async read(topic: string, fromSeq: number, first: boolean, s: WatchSession, probe: boolean): Promise<TopicResult> {
    const o = s.opts;
    await this.sup.routers.drainInto(topic); // read-your-writes (docs/API.md "Routers")
    this.onDelivery?.(topic);
    return this.sup.workerFor(topic).request({
      op: 'watchRead',
      topic,
      fromSeq,
      limit: o.limit,
      maxBatchBytes: o.maxBatchBytes,
      nodes: o.nodes,
      includeTags: o.includeTags,
      includeMeta: o.includeMeta,
      includeData: o.includeData,
      strong: o.strong,
      first,
      probe,
    });
  }

  /** Called per topic on each watch delivery pass (push or pull): auto-priority recency (docs/API.md "GET /v0/topics/:topic"). */
  onDelivery: ((topic: string) => void) | undefined;

  private pushFrames(b: WatchBatch, batchNo: number, s: WatchSession): PushFrames {
    let key = this.projectionKeys.get(s);
    if (key === undefined) this.projectionKeys.set(s, (key = projectionKey(s.opts)));
    const last = this.lastFrames;
    if (last !== undefined && last.batchNo === batchNo && last.key === key) return last.frames;
    const frames = this.projections.frames(batchNo, b, s.opts, key);
    this.lastFrames = { batchNo, key, frames };
    return frames;
  }

  /** One message of a worker's turn: every event, in order, to the streams that follow its topic. */
  private onEvents(events: WatchEvent[]): void {
    for (const ev of events) {
      const streams = this.byTopic.get(ev.topic);
      if (!streams) continue;
      const prev = this.latestByTopic.get(ev.topic);
      if (prev && prev.instanceId > ev.instanceId) continue; // a late event of a dead instance
      switch (ev.k) {
        case 'batch': {
          if (this.onBatchLatency && !ev.stale && ev.offs.length > 1) this.onBatchLatency(batchAgeMs(ev));
          this.latestByTopic.set(ev.topic, { instanceId: ev.instanceId, head: ev.head, durableHead: ev.durableHead, deleted: false });
          const no = ++this.batchNo;
          this.onDelivery?.(ev.topic); // a watch delivery pass consumes the topic (docs/API.md "GET /v0/topics/:topic")
          for (const s of streams) s.onBatch(s.topic(ev.topic)!, ev, no);
          break;
        }
        case 'durable':
          this.latestByTopic.set(ev.topic, { instanceId: ev.instanceId, head: ev.head, durableHead: ev.durableHead, deleted: false });
          for (const s of streams) s.onDurable(s.topic(ev.topic)!, ev.instanceId, ev.durableHead);
          break;
        case 'deleted':
          this.latestByTopic.set(ev.topic, { instanceId: ev.instanceId, head: ev.head, durableHead: ev.head, deleted: true });
          for (const s of streams) s.onDeleted(s.topic(ev.topic)!, ev.instanceId, ev.head);
          break;
      }
    }
  }

  /** Per followed topic, the largest lag (head − cursor, in seqs) of its open streams' sessions, where the head is known. */
  watchLag(): Map<string, number> {
    const lag = new Map<string, number>();
    for (const s of this.streams) {
      s.session.names.forEach((name, i) => {
        const head = this.latestByTopic.get(name)?.head;
        if (head === undefined) return;
        lag.set(name, Math.max(lag.get(name) ?? 0, head - s.session.cursor(i)));
      });
    }
    return lag;
  }

  /** Shutdown (docs/ARCHITECTURE.md "Startup and shutdown" step 3): every open stream gets a terminal 503 error frame. */
  closeAll(): void {
    for (const s of [...this.streams]) {
      s.fail({ code: 503, error: 'shutting_down', message: 'draining before exit; reconnect later', terminal: true, retry_after_ms: 1000 });
    }
  }
}

const TS_RE = /"\$ts":(\d+)/;

/** Milliseconds since the batch's first record was stamped (its head piece holds `"$ts":…`). */
function batchAgeMs(b: WatchBatch): number {
  const head = Buffer.from(b.buf.buffer, b.buf.byteOffset + b.offs[0]!, Math.min(64, b.offs[1]! - b.offs[0]!)).toString('latin1');
  const m = TS_RE.exec(head);
  return m ? Math.max(0, Date.now() - Number(m[1])) : 0;
}
