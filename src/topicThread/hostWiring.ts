// The wiring of a topic worker's runtime: how ActorHost's collaborators (WalLink, WorkerRecovery,
// Dormancy, WorkerCompaction, WorkerCheckpoints, the hot cache) reach the host and each other,
// made once by its constructor. Runs on the topic worker thread. Each factory's callbacks may
// name collaborators made after it: they run later, never during construction.
import type { MessagePort } from 'node:worker_threads';
import { probeFrame, readAppendHead } from '../format/frame.js';
import type { StoredFrames } from '../actors/topic/dormant.js';
import type { CompactPace } from '../storage/compactor.js';
import { RECORD_TEXT_OVERHEAD_BYTES } from './hotCache.js';
import { WalLink } from './walLink.js';
import { WorkerRecovery } from './recovery.js';
import { WorkerCheckpoints } from './checkpointStep.js';
import { WorkerCompaction } from './compaction.js';
import { Dormancy } from './dormancy.js';
import type { Clock } from '../core/clock.js';
import type { SortedNames } from '../core/columns/sortedNames.js';
import type { SegmentPlacement } from '../format/layout.js';
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { ActorInput } from '../actors/topic/inputs.js';
import type { Fs } from '../storage/fs.js';
import type { SegmentStore } from '../storage/segmentStore.js';
import type { HotCache } from './hotCache.js';
import type { HostOptions } from './options.js';
import type { WorkerTimers } from './workerTimers.js';
import type { CompactionOptions } from './compaction.js';

/** What the wiring reaches of the host (ActorHost; an interface, so the two do not import each other). */
export interface WiredHost {
  readonly opts: HostOptions;
  readonly clock: Clock;
  readonly segments: SegmentStore;
  readonly fsx: Fs;
  readonly dataDir: string;
  readonly actorsByName: ReadonlyMap<string, TopicActor>;
  readonly names: SortedNames;
  readonly byTopicId: Map<number, TopicActor>;
  readonly wal: WalLink;
  readonly recovery: WorkerRecovery;
  readonly dormancy: Dormancy;
  readonly compaction: WorkerCompaction;
  readonly checkpoints: WorkerCheckpoints;
  readonly hot: HotCache;
  readonly timers: WorkerTimers;
  readonly inputsTotal: number;
  input(actor: TopicActor, input: ActorInput): void;
  actorFor(name: string): TopicActor;
  writeSegment(place: SegmentPlacement, frame: Buffer): void;
  /** Forgets every actor's generator and traced seed (recovery reseeds from the boot seed). */
  resetRngs(): void;
}

/** Compaction's pace runs on the worker's own timers (never inside an actor step), at `bytesPerSec`. */
function compactPace(bytesPerSec: number): CompactPace {
  return {
    bytesPerSec,
    nowMs: () => performance.now(),
    sleep: (ms) => new Promise<void>((r) => (ms > 0 ? setTimeout(r, ms) : setImmediate(r))),
  };
}

/** The WAL thread's port: acks and failures become actor inputs, replayed frames go to recovery. */
export function makeWal(host: WiredHost, walPort: MessagePort): WalLink {
  return new WalLink(walPort, host.opts.walInflightBytes, {
    walAck: (actor, written, durable) => host.input(actor, { k: 'wal', written, durable }),
    writeSegment: (place, frame) => host.writeSegment(place, frame),
    redeliver: (reqId, req) => host.input(host.actorFor(req.topic), { k: 'req', reqId, req }),
    onReplay: (m) => host.recovery.onWal(m),
    walFailed: () => {
      for (const a of host.actorsByName.values()) host.input(a, { k: 'walFailed' });
    },
  });
}

/** The hot cache let go of a topic's record texts [from, to]: its actor forgets them too. */
export function dropTexts(host: WiredHost, topicId: number, from: number, to: number): void {
  const a = host.byTopicId.get(topicId);
  if (a) host.input(a, { k: 'drop', topicId, from, to });
}

/** Recovery: the actors, their rngs, the WAL replay and the sleeping topics it restores. */
export function makeRecovery(host: WiredHost): WorkerRecovery {
  return new WorkerRecovery({
    fsx: host.fsx,
    dataDir: host.dataDir,
    segments: host.segments,
    byTopicId: host.byTopicId,
    actors: { [Symbol.iterator]: () => host.actorsByName.values() },
    actorFor: (name) => host.actorFor(name),
    input: (actor, input) => host.input(actor, input),
    resetRngs: () => host.resetRngs(),
    replayAck: (bytes, buf) => host.wal.replayAck(bytes, buf),
    workerIndex: host.opts.workerIndex,
    workers: host.opts.workers,
    sleepers: {
      restore: (rec) => host.dormancy.restore(rec),
      reserve: (more) => host.dormancy.reserveRestored(more),
      listed: (names) => host.names.addAll(names),
      asleepHead: (id) => host.dormancy.asleepHead(id),
      absorbAppend: (id, buf, f, head) => host.dormancy.absorbAppend(id, buf, f, head),
      reserveAsleep: (id, ceiling) => host.dormancy.reserveAsleep(id, ceiling),
      take: (id) => host.dormancy.take(id),
      isRestoredAsleep: (id) => host.dormancy.isRestoredAsleep(id),
      endRecovery: () => host.dormancy.endRecovery(),
    },
  });
}

/** Sleeping topics: the actors it puts to sleep and wakes, and what the stores hold of them. */
export function makeDormancy(host: WiredHost): Dormancy {
  const segments = host.segments;
  return new Dormancy(
    {
      packs: segments.packs,
      fsx: host.fsx,
      dataDir: host.dataDir,
      stored: (id) => stored(host, id),
      releaseFiles: (id) => host.segments.release(id),
      ownLoaded: (id, firstSeq, bytes) => host.segments.noteLoaded(id, firstSeq, bytes, bytes),
      byTopicId: host.byTopicId,
      actorFor: (name) => host.actorFor(name),
      actorByName: (name) => host.actorsByName.get(name),
      input: (actor, input) => host.input(actor, input),
      hasTimers: (actor) => host.timers.hasAny(actor),
      textsKept: (topicId, frames) => textsKept(host, topicId, frames),
      now: () => host.clock.now(),
    },
    { sleepMs: host.opts.topicSleepMs, awakeMax: host.opts.topicsAwakeMax },
  );
}

/** A waking topic's record texts that stay in memory: the hot cache counts them. */
function textsKept(host: WiredHost, topicId: number, frames: readonly Buffer[]): void {
  for (const frame of frames) {
    const p = probeFrame(frame, 0, frame.length, false);
    if (!p.ok) continue;
    const head = readAppendHead(frame, p.frame);
    host.hot.add(topicId, head.firstSeq, head.firstSeq + head.count - 1, frame.length + head.count * RECORD_TEXT_OVERHEAD_BYTES);
  }
}

/** Segment compaction on the worker's own timers; it seals a topic's segment through its actor. */
export function makeCompaction(
  host: WiredHost,
  options: Pick<CompactionOptions, 'livePercent' | 'bytesPerSec'> | undefined,
  log: ((msg: string) => void) | undefined,
): WorkerCompaction {
  const opts = host.opts;
  const compactOpts = { livePercent: 0, bytesPerSec: 0, ...options, segmentBytes: opts.segmentBytes, packBytes: opts.packBytes ?? 0 };
  return new WorkerCompaction(
    host.fsx,
    host.dataDir,
    host.segments,
    () => host.actorsByName.values(),
    (actor, topicId) => host.input(actor, { k: 'seal', topicId }),
    compactOpts,
    compactPace(compactOpts.bytesPerSec),
    log ?? (() => undefined),
    () => host.inputsTotal,
  );
}

/** Checkpoints: the actors' parts and the sleeping topics' rows, cut against the WAL. */
export function makeCheckpoints(host: WiredHost): WorkerCheckpoints {
  return new WorkerCheckpoints(host.wal, host.segments, host.compaction, {
    actors: () => host.actorsByName.values(),
    actor: (name) => host.actorsByName.get(name),
    sleeping: host.dormancy.sleeping,
    now: () => host.clock.now(),
    stored: (id) => stored(host, id),
  });
}

/** What the worker's stores hold of a topic, as whether it may sleep depends on it. */
function stored(host: WiredHost, topicId: number): StoredFrames {
  // A topic under compaction, or whose packed segment moved to an own file, stays awake.
  const ownSettled =
    host.segments.allWritten(topicId) && !host.checkpoints.unlinkPending(topicId) && !host.segments.sealed.compactionHolds(topicId);
  return { packedWritten: host.segments.packs?.map.size(topicId) ?? -1, ownSettled };
}
