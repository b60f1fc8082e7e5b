// The live effect sink and query answers of one actor on a topic worker (docs/ARCHITECTURE.md "Threads"): what the
// actor's steps ask for, carried out against the worker's real services. It depends only on the
// HostServices interface below (ActorHost implements it), so the host and this module do not
// import each other.
import type { EffectSink, Queries, Effect } from '../actors/ctx.js';
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { TopicResult } from '../protocol/messages/rpc.js';
import { assertNever } from '../protocol/errors.js';
import type { ActorInput } from '../actors/topic/inputs.js';
import type { SegmentPlacement } from '../format/layout.js';
import type { SegmentStore } from '../storage/segmentStore.js';
import type { Clock } from '../core/clock.js';
import { RECORD_TEXT_OVERHEAD_BYTES, type HotCache } from './hotCache.js';
import type { WalLink } from './walLink.js';
import type { EventsOutbox } from './eventsOutbox.js';
import type { PeerLink } from './peers.js';
import type { HostOptions } from './options.js';
import type { WorkerTimers } from './workerTimers.js';
import { storageStateOf } from '../storage/storageState.js';
import { TOPICS_SLOT } from '../core/sharedCounters.js';
import { takeWalRoom } from '../wal/walRoom.js';

export interface HostServices {
  readonly clock: Clock;
  readonly opts: HostOptions;
  readonly segments: SegmentStore;
  readonly hot: HotCache;
  readonly wal: WalLink;
  readonly events: EventsOutbox;
  readonly peers: PeerLink;
  readonly byTopicId: Map<number, TopicActor>;
  readonly timers: WorkerTimers;
  input(actor: TopicActor, input: ActorInput): void;
  sendReply(actor: TopicActor, reqId: number, result: TopicResult, frameNo: number | undefined): void;
  writeSegment(place: SegmentPlacement, frame: Buffer): void;
  /** A never reused local counter for topic ids. */
  nextLocalTopicNo(): number;
}

/**
 * The effect sink and query answers of whichever actor is bound for the current step. The host
 * reuses one per step instead of keeping one per actor (with 100k+ topics a sink, a context and a
 * timer map per actor were ~0.5 KB each of idle memory). Anything that outlives the step (a
 * timer, a cold read) captures the actor itself, never this object.
 */
export class HostEffects implements EffectSink, Queries {
  private actor!: TopicActor;

  constructor(private readonly host: HostServices) {}

  bind(actor: TopicActor): void {
    this.actor = actor;
  }

  run(e: Effect): void {
    const { host, actor } = this;
    switch (e.k) {
      case 'reply':
        return host.sendReply(actor, e.reqId, e.result, e.frameNo);
      case 'submit':
        return host.wal.queueFrame({ actor, frameNo: e.frameNo, buf: e.frame, durable: e.durable, segment: e.segment, lazy: e.lazy });
      case 'setTimer': {
        const timerId = e.timerId;
        return host.timers.setFor(actor, timerId, Math.max(0, e.atMs - host.clock.now()), () =>
          host.input(actor, { k: 'timer', id: timerId }),
        );
      }
      case 'cancelTimer':
        return host.timers.cancelFor(actor, e.timerId);
      case 'readCold': {
        const { token, topicId } = e;
        Promise.all(e.ranges.map((r) => host.segments.readRange(topicId, r.segFirstSeq, r.offset, r.len, r.packed))).then(
          (bufs) => host.input(actor, { k: 'cold', token, bufs }),
          (err: Error) => host.input(actor, { k: 'cold', token, bufs: err.message }),
        );
        return;
      }
      case 'textsLoaded':
        return host.hot.add(e.topicId, e.fromSeq, e.toSeq, e.bytes + (e.toSeq - e.fromSeq + 1) * RECORD_TEXT_OVERHEAD_BYTES);
      case 'deferForCredit':
        return host.wal.defer(e.reqId, e.req, e.priority);
      case 'rewriteSegment':
        return host.writeSegment(e.place, e.frame);
      case 'releaseTopicSlot':
        Atomics.sub(host.opts.counters, TOPICS_SLOT, 1);
        return;
      case 'topicCreated':
        host.byTopicId.set(e.topicId, actor);
        return;
      case 'topicDeleted':
        host.byTopicId.delete(e.topicId);
        host.hot.dropTopic(e.topicId);
        host.segments.dropTopic(e.topicId);
        return;
      case 'publish':
        return host.events.publish(e.event);
      case 'work':
        return host.events.pushWork(e.event);
      case 'peerRequest':
        return host.peers.send(actor, e.token, e.req);
      default:
        assertNever(e);
    }
  }

  walCreditExhausted(): boolean {
    return this.host.wal.creditExhausted();
  }

  newTopicId(): number {
    const o = this.host.opts;
    return o.bootEpoch * 0x100_0000 + this.host.nextLocalTopicNo() * o.workers + o.workerIndex;
  }

  tryAcquireTopicSlot(): boolean {
    const o = this.host.opts;
    const n = Atomics.add(o.counters, TOPICS_SLOT, 1) + 1;
    if (o.maxTopics > 0 && n > o.maxTopics) {
      Atomics.sub(o.counters, TOPICS_SLOT, 1);
      return false;
    }
    return true;
  }

  watched(): boolean {
    return this.host.events.watched(this.actor.name);
  }

  bootEpoch(): number {
    return this.host.opts.bootEpoch;
  }

  storageState(): number {
    return storageStateOf(this.host.opts.counters);
  }

  volumeHas(bytes: number): boolean {
    const free = this.host.opts.freeBytes?.();
    return free === undefined || free >= bytes;
  }

  walRoomFor(bytes: number): boolean {
    return takeWalRoom(this.host.opts.counters, bytes);
  }
}
