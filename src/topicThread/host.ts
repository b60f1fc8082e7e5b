// ActorHost: the runtime of one topic worker thread (docs/ARCHITECTURE.md "Threads"). It keeps the worker's topic
// actors, feeds them inputs one at a time stamped with the injected clock, and routes their
// replies back to the rpc calls waiting for them. Effects are carried out by HostEffects, WAL
// traffic by WalLink, recovery by WorkerRecovery and checkpoints by WorkerCheckpoints; hostWiring.ts
// makes those, and the listings (pages, stats, priorities) are HostListings (hostListings.ts).
// It owns no topic state. Invariant: an actor step never awaits; effects run inside the step
// only as far as queueing them.
import path from 'node:path';
import { stageClock } from '../core/stageClock.js';
import type { MessagePort } from 'node:worker_threads';
import type { Clock } from '../core/clock.js';
import { seededRng, Rng } from '../core/rng.js';
import type { TopicRequest, TopicResult } from '../protocol/messages/rpc.js';
import { fail, type ErrorResult } from '../protocol/errors.js';
import { parsePackFileName, parseSegmentFileName, type SegmentPlacement } from '../format/layout.js';
import { CorruptionError } from '../core/corruption.js';
import { StepCtx } from '../actors/ctx.js';
import { TopicActor } from '../actors/topic/topicActor.js';
import { applyInput, ActorInput } from '../actors/topic/inputs.js';
import { forwardsOut } from '../actors/router/forwarder.js';
import { probeFrame, readAppendHead } from '../format/frame.js';
import type { TraceWriter } from '../replay/traceWriter.js';
import type { SegmentStore } from '../storage/segmentStore.js';
import type { TopicPart } from '../format/topicPart.js';
import { HotCache, RECORD_TEXT_OVERHEAD_BYTES } from './hotCache.js';
import { EventsOutbox } from './eventsOutbox.js';
import { PeerLink } from './peers.js';
import type { WalLink } from './walLink.js';
import { HostEffects, type HostServices } from './hostEffects.js';
import type { RecoveryFinish, WorkerRecovery } from './recovery.js';
import type { WorkerCheckpoints } from './checkpointStep.js';
import type { WorkerCompaction, CompactionOptions } from './compaction.js';

import type { HostOptions } from './options.js';
import { WorkerTimers } from './workerTimers.js';
import { SortedNames } from '../core/columns/sortedNames.js';
import type { Dormancy } from './dormancy.js';
import { HostListings } from './hostListings.js';
import { dropTexts, makeCheckpoints, makeCompaction, makeDormancy, makeRecovery, makeWal } from './hostWiring.js';
import type { Fs } from '../storage/fs.js';
import { InvariantError } from '../core/invariant.js';
import { TOPICS_SLOT } from '../core/sharedCounters.js';
import { PendingTable } from '../core/pendingTable.js';

export interface ActorHostDeps {
  clock: Clock;
  opts: HostOptions;
  /** To the WAL thread: submissions in, acks out. */
  walPort: MessagePort;
  segments: SegmentStore;
  fsx: Fs;
  dataDir: string;
  trace?: TraceWriter;
  traceOutputs?: boolean;
  /** To each other worker, by index (undefined for this one). */
  peerPorts?: readonly (MessagePort | undefined)[];
  /**
   * Why a router forward must wait before it reaches its dest actor (docs/API.md "Limits" max_total_bytes:
   * "router forwards wait and retry"), or undefined to let it through. Decided here, outside
   * any actor step: the refusal reaches the forwarder as an ordinary reply, so traces replay it.
   */
  forwardRefusal?: () => ErrorResult | undefined;
  /** Segment compaction (none: never on its own, only when asked). */
  compaction?: Pick<CompactionOptions, 'livePercent' | 'bytesPerSec'>;
  /** The worker's log (compaction failures). */
  log?: (msg: string) => void;
}

/** A request of the request channel waiting for its reply: its channel id and where it goes. */
class ChannelAnswer {
  constructor(
    readonly token: number,
    readonly answer: (token: number, r: TopicResult) => void,
  ) {}
}

type ReplyTo = ((r: TopicResult) => void) | ChannelAnswer;

export class ActorHost implements HostServices {
  /** The worker's actors by topic name; only the host adds and drops them (others read). */
  readonly actorsByName = new Map<string, TopicActor>();
  /** The same names in order, for list pages and the first metrics series. */
  readonly names = new SortedNames();
  readonly byTopicId = new Map<number, TopicActor>();
  /** Generators of the actors that drew since the boot seed was set (only queue claims draw). */
  private readonly rngs = new Map<TopicActor, Rng>();
  /** The worker's log, when it has one. */
  private readonly log: ((msg: string) => void) | undefined;
  /** Traced actors whose seed is in the trace since the last reset (empty unless tracing). */
  private readonly seedTraced = new Set<TopicActor>();
  /** Step contexts not in use: one is bound to an actor per input (steps may nest). */
  private readonly freeSteps: StepSlot[] = [];
  /** What settles each request still waiting for its reply: a promise's resolve, or a channel answer. */
  private readonly replies = new PendingTable<ReplyTo>();
  /** Actors whose step is running (steps nest): an actor is never dropped inside its own step. */
  private readonly stepping: TopicActor[] = [];
  /** Peer requests that arrived before `serve()` (recovery); undefined once serving. */
  private peersHeld: { req: TopicRequest; resolve: (r: TopicResult) => void }[] | undefined = [];
  /** Live bytes over this worker's topics, kept as steps change them (see input). */
  private liveBytesTotal = 0;
  private localTopicNo = 0;
  readonly hot: HotCache;
  readonly events: EventsOutbox;
  readonly peers: PeerLink;
  readonly wal: WalLink;
  readonly recovery: WorkerRecovery;
  readonly checkpoints: WorkerCheckpoints;
  readonly compaction: WorkerCompaction;
  /**
   * Actor inputs since the last checkpoint began (requests, timers, acks, sleeps, wakes): none,
   * and no WAL bytes either, and a timed checkpoint has nothing to record (Checkpointer skips it).
   */
  inputsSinceCheckpoint = 0;
  /** Inputs taken since the start (compaction looks again only when it moved). */
  inputsTotal = 0;
  readonly timers = new WorkerTimers();
  /** Sleeping topics, and the policy that puts quiet ones to sleep (docs/ARCHITECTURE.md "Many topics"). */
  readonly dormancy: Dormancy;
  /** List pages, touches, watermarks, priorities, metrics stats. */
  readonly listings: HostListings;

  readonly clock: Clock;
  readonly opts: HostOptions;
  readonly segments: SegmentStore;
  readonly fsx: Fs;
  readonly dataDir: string;
  private readonly trace: TraceWriter | undefined;
  private readonly traceOutputs: boolean;

  constructor(deps: ActorHostDeps) {
    this.clock = deps.clock;
    this.opts = deps.opts;
    this.segments = deps.segments;
    this.fsx = deps.fsx;
    this.dataDir = deps.dataDir;
    this.trace = deps.trace;
    this.traceOutputs = deps.traceOutputs ?? false;
    // In this order: each collaborator's callbacks may name those made after it (they run later).
    this.events = new EventsOutbox();
    this.peers = this.makePeers(deps.peerPorts ?? [], deps.forwardRefusal);
    this.wal = makeWal(this, deps.walPort);
    this.hot = new HotCache(this.opts.segmentCacheBytes, (topicId, from, to) => dropTexts(this, topicId, from, to));
    this.recovery = makeRecovery(this);
    this.dormancy = makeDormancy(this);
    this.compaction = makeCompaction(this, deps.compaction, deps.log);
    this.log = deps.log;
    this.checkpoints = makeCheckpoints(this);
    this.listings = new HostListings(this);
  }

  /** Requests from and replies to the other workers (router forwards, dead letters). */
  private makePeers(peerPorts: readonly (MessagePort | undefined)[], forwardRefusal: ActorHostDeps['forwardRefusal']): PeerLink {
    return new PeerLink(this.opts.workerIndex, this.opts.workers, peerPorts, {
      request: (req) => {
        const refused = req.op === 'append' && req.forward ? forwardRefusal?.() : undefined;
        if (refused) return Promise.resolve(refused);
        // Until the whole server is recovered and its WAL writes, peer requests wait (the end
        // of a queue's recovery may ask a dead-letter topic on any worker to delete records).
        if (this.peersHeld) return new Promise((resolve) => this.peersHeld!.push({ req, resolve }));
        return this.request(req);
      },
      peerReply: (actor, token, result) => this.input(actor, { k: 'peerReply', token, result }),
    });
  }

  actorFor(name: string): TopicActor {
    let a = this.actorsByName.get(name);
    if (!a) {
      a = new TopicActor(name, this.opts);
      this.actorsByName.set(name, a);
      this.names.add(name);
    }
    return a;
  }

  /** `actor`'s generator, seeded from the boot seed and its name at its first draw. */
  rngOf(actor: TopicActor): Rng {
    let r = this.rngs.get(actor);
    if (!r) this.rngs.set(actor, (r = seededRng(`${this.opts.bootSeed}/${actor.name}`)));
    return r;
  }

  resetRngs(): void {
    this.rngs.clear();
    this.seedTraced.clear();
  }

  nextLocalTopicNo(): number {
    return this.localTopicNo++;
  }

  // ---- inputs and replies ------------------------------------------------------------------

  request(req: TopicRequest): Promise<TopicResult> {
    if (this.draining) withoutWait(req);
    // After a WAL failure the actors refuse writes themselves (storage FAILED); reads go on.
    return new Promise((resolve) => {
      const reqId = this.replies.add(resolve);
      // A sleeping topic wakes first; requests that find it waking wait for the same wake, in order.
      const waking = this.dormancy.wakeFor(req.topic);
      if (!waking) return this.input(this.actorFor(req.topic), { k: 'req', reqId, req });
      waking.then(
        () => this.input(this.actorFor(req.topic), { k: 'req', reqId, req }),
        (err: Error) => {
          this.replies.take(reqId);
          resolve(this.wakeFailed(req.topic, err));
        },
      );
    });
  }

  /**
   * A sleeping topic's wake failed (docs/ARCHITECTURE.md "Dormant topics": a damaged frame fails
   * the wake, nothing is truncated): the request's answer, naming the kind of file that failed
   * (its packed segment in a pack file, or one of its own segment files), and a log line.
   */
  private wakeFailed(topic: string, err: Error): ErrorResult {
    const where = err instanceof CorruptionError ? err.where : '';
    const kind =
      parseSegmentFileName(path.basename(where)) !== undefined
        ? 'its segment file'
        : where.includes('packed segment') || parsePackFileName(path.basename(where)) !== undefined
          ? 'its packed segment in the pack files'
          : 'disk';
    const msg = `topic ${topic} could not be read back from ${kind}: ${err.message}`;
    this.log?.(`spool: ${msg}`);
    return fail('internal', msg);
  }

  /**
   * `request` without a promise, for the request channel (serveRequests' `answerWith`):
   * `answer(token, result)` runs once, from the reply's step. A throw of the step (a bug) leaves
   * no reply waiting; the channel answers it `internal`.
   */
  requestTo(req: TopicRequest, token: number, answer: (token: number, r: TopicResult) => void): void {
    if (this.draining) withoutWait(req);
    const reqId = this.replies.add(new ChannelAnswer(token, answer));
    try {
      // A sleeping topic wakes first; requests that find it waking wait for the same wake, in order.
      const waking = this.dormancy.wakeFor(req.topic);
      if (!waking) return this.input(this.actorFor(req.topic), { k: 'req', reqId, req });
      waking.then(
        () => this.input(this.actorFor(req.topic), { k: 'req', reqId, req }),
        (err: Error) => {
          if (this.replies.take(reqId) !== undefined) answer(token, this.wakeFailed(req.topic, err));
        },
      );
    } catch (err) {
      if (this.replies.take(reqId) !== undefined) throw err;
    }
  }

  /**
   * Feeds one input to an actor: the only way actor code runs. Traced when tracing is on; the
   * step that first uses an actor's RNG (after a boot or a recovery) records the seed it came
   * from, so replay reseeds exactly there, for topics recovered and created alike.
   */
  input(actor: TopicActor, input: ActorInput): void {
    // An input for an actor dropped since (an ack, timer, cold read or peer reply that was
    // already on its way) would find nothing of it: a dropped actor is idle (TopicActor.idle).
    if (this.actorsByName.get(actor.name) !== actor) return;
    this.inputsSinceCheckpoint++;
    this.inputsTotal++;
    const traced = this.trace?.wants(actor.name)
      ? { q: [] as unknown[], out: this.traceOutputs ? ([] as unknown[]) : undefined }
      : undefined;
    const step = this.freeSteps.pop() ?? new StepSlot(this);
    step.bind(actor);
    const ctx = step.ctx.begin(this.clock.now(), step.rng, traced);
    this.stepping.push(actor);
    try {
      applyInput(actor, ctx, input, this.opts);
    } finally {
      this.stepping.pop();
      this.freeSteps.push(step);
    }
    const bytes = actor.current?.bytes ?? 0;
    this.liveBytesTotal += bytes - actor.bytesCounted;
    actor.bytesCounted = bytes;
    if (traced) {
      // The actor's first traced step since the boot seed was set carries the seed: replay
      // reseeds there. A generator only exists once the actor draws, so the draws are the same.
      const seed = this.seedTraced.has(actor) ? undefined : this.opts.bootSeed;
      if (seed !== undefined) this.seedTraced.add(actor);
      this.trace!.write({
        a: actor.name,
        at: ctx.now,
        in: input,
        ...(traced.q.length ? { q: traced.q } : {}),
        ...(seed !== undefined ? { seed } : {}),
        ...(traced.out ? { out: traced.out } : {}),
      });
    }
    // After the trace line: the replayer drops the actor after the same step (same rule).
    if (actor.idle() && !this.stepping.includes(actor)) this.drop(actor);
    else this.dormancy.stepped(actor, ctx.now);
  }

  /**
   * Forgets an idle actor (docs/ARCHITECTURE.md "Many topics"): a request naming an absent topic, or a deleted topic
   * once its delete is durable, leaves nothing behind. A later request of the name makes a
   * fresh actor; its RNG is seeded again at its first draw, and the seed goes in the trace again.
   */
  private drop(actor: TopicActor): void {
    this.actorsByName.delete(actor.name);
    if (!this.dormancy.has(actor.name)) this.names.delete(actor.name); // a sleeping topic stays listed
    this.dormancy.dropped(actor);
    this.rngs.delete(actor);
    this.seedTraced.delete(actor);
    this.timers.cancelAllFor(actor);
  }

  /** Topic actors held by this worker (live topics, plus those with something still pending). */
  get actorCount(): number {
    return this.actorsByName.size;
  }

  sendReply(actor: TopicActor, reqId: number, result: TopicResult, frameNo: number | undefined): void {
    const to = this.replies.take(reqId);
    if (!to) return;
    const fsync = frameNo !== undefined && actor.durableFrameNo >= frameNo && actor.current?.config.durability === 'fsync';
    const perf = this.wal.perf(actor, reqId, frameNo, fsync);
    if (result.ok && perf) Object.assign(result.perf, perf);
    if (stageClock.on) result.stamps = this.wal.stamps(actor, frameNo);
    if (typeof to === 'function') to(result);
    else to.answer(to.token, result);
  }

  /** Writes a frame to its segment; once there, its texts may leave memory. */
  writeSegment(place: SegmentPlacement, frame: Buffer): void {
    this.segments.append(place, frame, () => {
      // No CRC check: this worker encoded the frame (the check cost a CRC pass per append).
      const p = probeFrame(frame, 0, frame.length, false);
      if (!p.ok) throw new InvariantError(`a frame written to a segment does not decode (${p.reason})`);
      const head = readAppendHead(frame, p.frame);
      this.hot.add(place.topicId, head.firstSeq, head.firstSeq + head.count - 1, frame.length + head.count * RECORD_TEXT_OVERHEAD_BYTES);
    });
  }

  /** Clears every actor timer, for good (the worker is being abandoned); no I/O. */
  stop(): void {
    this.timers.stop();
    this.dormancy.stop();
    this.compaction.stop();
  }

  /**
   * Shutdown (docs/ARCHITECTURE.md "Startup and shutdown"): parked long-polls and blocking claims
   * answer now, and so, from now on, does every one that arrives later (a request main let in
   * before the drain whose body, pressure gate or jitter window held it): the drain waits for
   * no wait_ms.
   */
  releaseLongPolls(): void {
    this.draining = true;
    for (const a of this.actorsByName.values()) this.input(a, { k: 'release' });
  }

  /** releaseLongPolls ran: requests are answered without waiting (withoutWait). */
  private draining = false;

  /** Source actors whose forwarders stopRouters stopped. */
  private routersStopped: TopicActor[] = [];

  /**
   * Shutdown, before the drain (docs/ARCHITECTURE.md "Startup and shutdown" step 4): every
   * forwarder on this worker stops sending. Returns how many requests they still have out
   * (forwardsOut tells when those are answered).
   */
  stopRouters(): number {
    for (const a of this.actorsByName.values()) {
      if (!a.current?.routing) continue;
      this.routersStopped.push(a);
      this.input(a, { k: 'stopRouters' });
    }
    return this.forwardsOut();
  }

  /** Router requests (copy batches, probes) still out of the actors stopRouters stopped. */
  forwardsOut(): number {
    let n = 0;
    for (const a of this.routersStopped) if (a.current) n += forwardsOut(a.current);
    return n;
  }

  // ---- recovery ----------------------------------------------------------------------------

  /**
   * Recovery step 3 (every topic loads); replayed WAL chunks apply once it settles. `fsyncedPacks`:
   * [pack, bytes] the snapshot records as fsynced of each pack being written at its cut.
   */
  async loadSnapshot(
    parts: TopicPart[],
    packNames: readonly string[],
    snapshotEpoch: number,
    fsyncedPacks: readonly [string, number][] = [],
    filesTrusted = true,
  ): Promise<void> {
    let failed = true;
    try {
      this.recovery.filesTrusted = filesTrusted;
      await this.recovery.loadSnapshot(parts, packNames, snapshotEpoch, new Map(fsyncedPacks));
      failed = false;
    } finally {
      this.recovery.snapshotLoaded(failed);
    }
  }

  /** Recovery step 3 from this worker's section of a v2 snapshot (lazy: quiet topics stay asleep); replay waits for it too. */
  async loadSection(section: Buffer, packNames: readonly string[], snapshotEpoch: number, filesTrusted = true): Promise<void> {
    let failed = true;
    try {
      this.recovery.filesTrusted = filesTrusted;
      await this.recovery.loadSection(section, packNames, snapshotEpoch);
      failed = false;
    } finally {
      this.recovery.snapshotLoaded(failed);
    }
  }

  /**
   * Ends recovery: pads reservations and counts topics. Returns the count, which of `dirIds`
   * (the topic directories on disk) are live topics of this worker, and the highest router id in
   * its topics' progress.
   */
  finishRecovery(dirIds: readonly number[]): RecoveryFinish {
    const r = this.recovery.finish(dirIds);
    Atomics.add(this.opts.counters, TOPICS_SLOT, r.topics);
    this.dormancy.start();
    this.compaction.start();
    return r;
  }

  /**
   * Every worker is recovered and the WAL writes (the supervisor calls this after starting the
   * WAL, before anything else may send a peer request): held peer requests run now, in order.
   */
  serve(): void {
    const held = this.peersHeld;
    this.peersHeld = undefined;
    for (const h of held ?? []) void this.request(h.req).then(h.resolve);
  }

  // ---- listings (the rest are in `listings`) -------------------------------------------------

  /**
   * Live bytes over every topic of this worker (docs/API.md "Limits" max_total_bytes), O(1): a running total that
   * every step moves by the change in its actor's live bytes. Appends, deletes, evictions, TTL,
   * topic delete and create, and recovery all change bytes inside a step, and only there.
   */
  liveBytes(): number {
    return this.liveBytesTotal + this.dormancy.bytes;
  }
}

/**
 * The context of one step, reused: `bind` points its effects and its RNG at the actor being
 * stepped. The RNG forwards to the actor's own generator, made at its first draw.
 */
class StepSlot {
  readonly effects: HostEffects;
  readonly ctx: StepCtx;
  readonly rng: Rng;
  private actor!: TopicActor;

  constructor(host: ActorHost) {
    this.effects = new HostEffects(host);
    this.ctx = new StepCtx(this.effects, this.effects);
    this.rng = { next: () => host.rngOf(this.actor).next(), u32: () => host.rngOf(this.actor).u32() };
  }

  bind(actor: TopicActor): void {
    this.actor = actor;
    this.effects.bind(actor);
  }
}

/** A long-poll or blocking claim that arrives while the server drains answers at once (releaseLongPolls). */
function withoutWait(req: TopicRequest): void {
  if (req.op === 'diff') req.waitMs = 0;
  else if (req.op === 'claim') {
    req.waitMs = 0;
    req.now = true;
  }
}
