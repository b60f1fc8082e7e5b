// SimActor: one topic actor for unit tests, with a manual clock, a seeded RNG and a WAL whose acks
// are delivered only on command, so a test chooses every interleaving; timers and cold reads also
// wait for the test. SimHost (simHost.ts) is the multi-actor simulator with crashes; both handle
// effects through simEffects.ts.
import { StepCtx, type ActorCtx, type ColdRange } from '../../src/actors/ctx.js';
import type { SegmentPlacement } from '../../src/format/layout.js';
import type { TopicResult } from '../../src/protocol/messages/rpc.js';
import type { WatchEvent } from '../../src/protocol/messages/events.js';
import { seededRng } from '../../src/core/rng.js';
import { TopicActor } from '../../src/actors/topic/topicActor.js';
import type { TopicRequest } from '../../src/protocol/messages/rpc.js';
import { effectSink, ignored } from './simEffects.js';

export interface SubmittedFrame {
  frameNo: number;
  frame: Buffer;
  durable: boolean;
  segment: SegmentPlacement | undefined;
  /** Nothing waits for it: the worker may hold it for its next submission. */
  lazy: boolean;
}

export class SimActor {
  now = 1_700_000_000_000;
  readonly actor: TopicActor;
  readonly replies = new Map<number, TopicResult>();
  readonly frames: SubmittedFrame[] = [];
  readonly timers = new Map<number, number>();
  private nextReq = 1;
  private nextTopic = 1;
  topics = 0;
  walCreditExhausted = false;
  /** StorageState the actor sees (0 OK, 1 FULL, 2 FAILED). */
  storageState = 0;
  /** Whether the WAL has room for a frame on a full disk (the walRoomFor query). */
  walRoom = true;
  /** Whether a watch stream follows the topic, and what the actor published for it. */
  watched = false;
  readonly published: WatchEvent[] = [];
  readonly deferred: number[] = [];
  /** Cold reads the actor asked for, answered only by `answerColdRead`. */
  readonly coldReads: { token: number; ranges: ColdRange[] }[] = [];
  /** Requests the actor sent to other actors (never answered here). */
  readonly peerRequests: { token: number; req: TopicRequest }[] = [];
  /** The bytes of every segment file, by its first seq, as the frames' placements wrote them. */
  private readonly segmentBytes = new Map<number, Buffer>();
  private readonly rng = seededRng('sim');

  constructor(name = 't', opts = { maxLimit: 1000, segmentBytes: 64 * 1024 * 1024, maxTopics: 0 }) {
    this.actor = new TopicActor(name, opts);
  }

  private readonly stepCtx = new StepCtx(
    effectSink({
      reply: (e) => void this.replies.set(e.reqId, e.result),
      submit: (e) => {
        if (e.segment) this.writeSegment(e.segment, e.frame);
        this.frames.push({ frameNo: e.frameNo, frame: e.frame, durable: e.durable, segment: e.segment, lazy: e.lazy });
      },
      setTimer: (e) => void this.timers.set(e.timerId, e.atMs),
      cancelTimer: (e) => void this.timers.delete(e.timerId),
      readCold: (e) => void this.coldReads.push({ token: e.token, ranges: e.ranges }),
      deferForCredit: (e) => void this.deferred.push(e.reqId),
      releaseTopicSlot: () => void this.topics--,
      publish: (e) => void this.published.push(e.event),
      peerRequest: (e) => void this.peerRequests.push({ token: e.token, req: e.req }),
      textsLoaded: ignored,
      rewriteSegment: ignored,
      topicCreated: ignored,
      topicDeleted: ignored,
      work: ignored,
    }),
    {
      walCreditExhausted: () => this.walCreditExhausted,
      newTopicId: () => this.nextTopic++,
      tryAcquireTopicSlot: () => (this.topics++, true),
      watched: () => this.watched,
      bootEpoch: () => 1,
      storageState: () => this.storageState,
      volumeHas: () => true,
      walRoomFor: () => this.walRoom,
    },
  );

  private writeSegment(place: SegmentPlacement, frame: Buffer): void {
    const old = this.segmentBytes.get(place.segFirstSeq) ?? Buffer.alloc(0);
    const buf = Buffer.alloc(Math.max(old.length, place.offset + frame.length));
    old.copy(buf);
    frame.copy(buf, place.offset);
    this.segmentBytes.set(place.segFirstSeq, buf);
  }

  /** Answers the oldest outstanding cold read with the segment bytes it asked for. */
  answerColdRead(): void {
    const read = this.coldReads.shift();
    if (!read) throw new Error('no cold read outstanding');
    const bufs = read.ranges.map((r) => Buffer.from(this.segmentBytes.get(r.segFirstSeq)!.subarray(r.offset, r.offset + r.len)));
    this.actor.onColdRead(this.ctx(), read.token, bufs);
  }

  /** The host's cache evicts the texts of seqs from..to (they are in segments). */
  evict(fromSeq: number, toSeq: number): void {
    this.actor.dropTexts(this.actor.current!.id, fromSeq, toSeq);
  }

  ctx(): ActorCtx {
    return this.stepCtx.begin(this.now, this.rng, undefined);
  }

  /** Sends a request; returns its id (the reply may come later). */
  send(req: Omit<TopicRequest, 'topic'> & { op: TopicRequest['op'] }): number {
    const id = this.nextReq++;
    this.actor.step(this.ctx(), id, { topic: this.actor.name, ...req } as TopicRequest);
    return id;
  }

  append(body: unknown, returnSeqs = true, headerIdemKey?: string): number {
    return this.send({ op: 'append', body: Buffer.from(JSON.stringify(body)), returnSeqs, headerIdemKey } as never);
  }

  /** Acks every submitted frame up to `frameNo` as written (and durable if asked). */
  ack(written: number, durable: number): void {
    this.actor.onWalAck(this.ctx(), written, durable);
  }

  ackAll(durable = true): void {
    const last = this.frames.length ? this.frames[this.frames.length - 1]!.frameNo : 0;
    this.ack(last, durable ? last : 0);
  }

  reply(id: number): any {
    const r = this.replies.get(id);
    if (!r) return undefined;
    if (!r.ok) return { error: r };
    return { status: r.status, body: JSON.parse(Buffer.from(r.json).toString('utf8') + '}') };
  }
}
