// Dormancy: a topic worker's sleeping topics and the policy that puts quiet topics to sleep
// (docs/ARCHITECTURE.md "Many topics"; the rules of what may sleep are src/actors/topic/dormant.ts; docs/ARCHITECTURE.md
// "Dormant topics"). Runs on the topic worker thread, owned by ActorHost.
// - Awake actors are kept in the order of their last step (a Map's insertion order). Every
//   SWEEP_MS a sweep puts to sleep the topics whose last step is older than `sleepMs`, and the
//   least recently stepped ones beyond `awakeMax`, as far as each one's dormancy() allows; a topic
//   that may not sleep ('no') leaves the order until its next step, one that may not sleep yet
//   ('later') goes to the back. A sweep stops after SWEEP_BUDGET_MS.
// - A sleeping topic is one row of the DormantTable here. A request for it wakes it first: its
//   packed segment is read back, then its record (made from the row), its frames and `finish` go to a fresh actor as
//   inputs (traced like any input, so replay rebuilds it the same way). Requests that arrive
//   while it wakes wait for the same wake, in order.
// - A queue sleeps once no lease, delay or stream is under way; the sweep expires its leases
//   first (expiry is lazy), as a traced step.
// - TTL (dormant.ts): a topic with TTL sleeps only while none of its records is about to expire
//   or all have; asleep, it is woken TTL_WAKE_AHEAD_MS before its first record expires, and awake
//   with expiry under way it may sleep again once its last record has expired. Both moments wait
//   in one heap of due times, looked at by every sweep.
// Invariant: a name is sleeping or has an actor, never both; a sleeping topic's bytes stay in
// the worker's live-bytes total (`bytes`).
import { performance } from 'node:perf_hooks';
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { ActorInput } from '../actors/topic/inputs.js';
import {
  SLEEP_BYTES_MAX,
  ttlAwakeUntil,
  ttlExpired,
  ttlSleepAt,
  ttlWakeAt,
  type DormantTopic,
  type StoredFrames,
} from '../actors/topic/dormant.js';
import { MinHeap } from '../core/minHeap.js';
import { DormantTable } from './dormantTable.js';
import { IdIndex } from '../core/columns/idIndex.js';
import type { PackStore } from '../storage/packStore.js';
import { forEachAppendRecord, payloadBytesOf, probeFrame, type AppendHead, type FrameView } from '../format/frame.js';
import type { Fs } from '../storage/fs.js';
import { listSegments, readSegment, type LoadedSegment } from '../storage/segmentLoad.js';
import { CorruptionError } from '../core/corruption.js';
import { InvariantError } from '../core/invariant.js';

/** How often quiet topics are looked for. */
const SWEEP_MS = 100;
/** Longest a sweep runs (the worker's other work waits meanwhile). */
const SWEEP_BUDGET_MS = 10;
/**
 * Wakes ahead of TTL expiry started per tick at most: many topics due at once wake over several
 * ticks (the margin, TTL_WAKE_AHEAD_MS, is ten of them) rather than all reading their packs at once.
 */
const TTL_WAKES_PER_TICK = 256;

export interface DormancyHost {
  readonly packs: PackStore | undefined;
  /** Where a woken topic's own segment files are read from. */
  readonly fsx: Fs;
  readonly dataDir: string;
  /** What the stores hold of a topic (whether it may sleep depends on it). */
  stored(topicId: number): StoredFrames;
  /** A topic with own segment files went to sleep: the segment store may forget it (SegmentStore.release). */
  releaseFiles(topicId: number): void;
  /** A woken topic's newest own segment file, as read back: durable whole (SegmentStore.noteLoaded). */
  ownLoaded(topicId: number, firstSeq: number, bytes: number): void;
  readonly byTopicId: Map<number, TopicActor>;
  actorFor(name: string): TopicActor;
  /** The actor holding `name`, if any (never made). */
  actorByName(name: string): TopicActor | undefined;
  input(actor: TopicActor, input: ActorInput): void;
  /** The woken topic's records keep their texts (`frames`): they count in the cache budget. */
  textsKept(topicId: number, frames: readonly Buffer[]): void;
  /** The actor has a timer armed (a sleeping topic has none). */
  hasTimers(actor: TopicActor): boolean;
  now(): number;
}

export interface DormancyOptions {
  /** A topic sleeps once its last step is this old (0: topics never sleep). */
  sleepMs: number;
  /** Awake topics kept at most; the least recently stepped beyond it sleep first (0: no bound). */
  awakeMax: number;
}

export class Dormancy {
  /** The sleeping topics, as rows (dormantTable.ts). */
  readonly sleeping = new DormantTable();
  /** Awake actors with a live instance, least recently stepped first, with that step's time. */
  private readonly awake = new Map<TopicActor, number>();
  /** The actor last put at the back of `awake` (it may have left it since: check). */
  private lastAwake: TopicActor | undefined;
  private readonly waking = new Map<string, Promise<void>>();
  /**
   * Table rows of the topics restored asleep by recovery, by id (recovery applies frames by id),
   * until it ends. An IdIndex: recovery fills one entry per topic (a million at times).
   */
  private recovering: IdIndex | undefined;
  private timer: NodeJS.Timeout | undefined;
  /**
   * TTL moments (see the header), by time: a sleeping topic to wake, or an awake one that left the
   * sweep's order to try to put to sleep. Stale entries are skipped when due (the name changed state).
   */
  private readonly ttlDue = new MinHeap<{ at: number; name: string }>((a, b) => a.at < b.at);

  constructor(
    private readonly host: DormancyHost,
    private readonly opts: DormancyOptions,
  ) {}

  /**
   * Starts the sweeps (after recovery). With sleepMs 0 they only wake TTL topics restored asleep
   * by recovery ahead of their expiry.
   */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.wakeDue().catch(() => undefined); // a failed wake is the next request's to report
      if (this.opts.sleepMs > 0) this.sweep();
    }, SWEEP_MS);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  get sleepingCount(): number {
    return this.sleeping.size;
  }

  /** Live bytes of the sleeping topics (they stay in the worker's max_total_bytes total). */
  get bytes(): number {
    return this.sleeping.bytesTotal;
  }

  /** A sleeping topic's record (made from its row), or undefined. */
  get(name: string): DormantTopic | undefined {
    return this.sleeping.get(name);
  }

  has(name: string): boolean {
    return this.sleeping.has(name);
  }

  /** A list with touch=true consumed a sleeping topic: its record keeps the time (the wake input carries it). */
  touch(name: string, nowMs: number): void {
    this.sleeping.touch(name, nowMs);
  }

  /**
   * After every step of `actor`: an actor with a live instance moves to the back of the order.
   * One already at the back only gets its time: a delete and an insert per step made V8 rebuild
   * the map's table every few steps of a busy topic (docs/PERFORMANCE.md "Maps of requests in
   * flight").
   */
  stepped(actor: TopicActor, now: number): void {
    if (!actor.current) {
      this.awake.delete(actor);
      return;
    }
    if (this.lastAwake !== actor || !this.awake.has(actor)) {
      this.awake.delete(actor);
      this.lastAwake = actor;
    }
    this.awake.set(actor, now);
  }

  /** Puts `actor`, not in `awake`, at its back. */
  private setAwake(actor: TopicActor, now: number): void {
    this.awake.set(actor, now);
    this.lastAwake = actor;
  }

  /** The host dropped `actor`. */
  dropped(actor: TopicActor): void {
    this.awake.delete(actor);
  }

  /**
   * Puts quiet topics to sleep (see the header); returns how many went to sleep. With `all`,
   * every topic that may sleep now does, whatever its last step's time (tests and tools).
   */
  sweep(all = false): number {
    const started = performance.now();
    const now = this.host.now();
    const later: TopicActor[] = [];
    let slept = 0;
    let looked = 0;
    for (const [actor, at] of this.awake) {
      if (!all) {
        const over = this.opts.awakeMax > 0 && this.awake.size + later.length > this.opts.awakeMax;
        if (!over && now - at < this.opts.sleepMs) break;
        if ((++looked & 63) === 0 && performance.now() - started > SWEEP_BUDGET_MS) break;
      }
      // Out of the order: back at its next step, or below when it may sleep later.
      this.awake.delete(actor);
      const r = this.trySleep(actor, now);
      if (r === 'later') later.push(actor);
      else if (r === 'slept') slept++;
    }
    for (const a of later) this.setAwake(a, now);
    return slept;
  }

  /**
   * Puts `actor` to sleep if it may (it is out of the order): 'later' when it may once its work in
   * flight or its timers are done, 'no' when its kind or state keeps it awake until its next step
   * (or, for TTL expiry under way, until the moment the heap holds for it).
   */
  private trySleep(actor: TopicActor, now: number): 'slept' | 'later' | 'no' {
    const inst = actor.current;
    if (inst?.queue?.table.holdsDeadlines() || (inst && ttlExpired(inst, now))) {
      // Lease and TTL expiry are lazy: a queue nobody claims from would hold its expired leases,
      // and a topic nobody reads its expired records and their space, forever. The sweep is a
      // step like any (traced); it puts the actor back in the order, taken out again.
      this.host.input(actor, { k: 'sweep' });
      this.awake.delete(actor);
    }
    const d = inst ? actor.dormancy(this.host.stored(inst.id), now) : 'no';
    if (d === 'no') {
      const at = inst ? ttlSleepAt(inst, now) : undefined;
      if (at !== undefined) this.ttlDue.push({ at, name: actor.name });
      return 'no';
    }
    if (d === 'later' || this.host.hasTimers(actor)) return 'later';
    this.sleep(actor, d);
    return 'slept';
  }

  /**
   * The TTL moments due now (see the header): wakes the sleeping topics whose first record
   * expires within TTL_WAKE_AHEAD_MS, and tries again to put to sleep the awake ones whose
   * records have all expired since. Resolves once those wakes are done; returns how many woke.
   */
  async wakeDue(): Promise<number> {
    const now = this.host.now();
    const wakes: Promise<void>[] = [];
    for (let top = this.ttlDue.peek(); top !== undefined && top.at <= now && wakes.length < TTL_WAKES_PER_TICK; top = this.ttlDue.peek()) {
      this.ttlDue.pop();
      const row = this.sleeping.row(top.name);
      if (row) {
        const at = ttlWakeAt(row, now);
        if (at !== undefined && at <= now) wakes.push(this.wakeFor(top.name)!);
        continue;
      }
      const actor = this.host.actorByName(top.name);
      // Stepped since (back in the order) or gone: the sweep or its next step decides.
      if (this.opts.sleepMs <= 0 || !actor || this.awake.has(actor)) continue;
      if (this.trySleep(actor, now) === 'later') this.setAwake(actor, now);
    }
    await Promise.all(wakes);
    return wakes.length;
  }

  private sleep(actor: TopicActor, rec: DormantTopic): void {
    this.sleeping.put(rec);
    this.scheduleWake(rec);
    this.host.byTopicId.delete(rec.id);
    // The actor forgets its instance and is dropped as idle after this step; the name stays listed.
    this.host.input(actor, { k: 'sleep' });
    if (rec.own_first_seq) this.host.releaseFiles(rec.id);
  }

  // ---- lazy recovery (recovery.ts): topics of the snapshot restored asleep ---------------------

  /**
   * Keeps a topic of the snapshot asleep (`rec` may be readSection's cursor: the table copies its
   * fields); the index by id finds it until endRecovery. Returns false, keeping nothing, for a
   * topic with TTL whose expiry began since the cut (or begins within TTL_WAKE_AHEAD_MS): its
   * record cannot count a partly expired topic (dormantFigures), and the wake the heap would
   * make comes a sweep tick after recovery at the earliest, while lists are served at once, so
   * recovery loads it (as dormantOf would not let it sleep now).
   */
  restore(rec: DormantTopic): boolean {
    if (ttlAwakeUntil(rec.config.ttl_ms, rec.count, rec.first_ts_ms, rec.last_ts_ms, this.host.now()) !== undefined) return false;
    const row = this.sleeping.put(rec);
    (this.recovering ??= new IdIndex()).set(rec.id, row);
    this.scheduleWake(rec);
    return true;
  }

  /** A topic with TTL going to sleep: when its first record is about to expire, it wakes (wakeDue). */
  private scheduleWake(rec: DormantTopic): void {
    const at = ttlWakeAt(rec, this.host.now());
    if (at !== undefined) this.ttlDue.push({ at, name: rec.name });
  }

  /** Room for `more` topics restored asleep (recovery: the count of its section's topics, a bound). */
  reserveRestored(more: number): void {
    this.sleeping.reserve(more);
  }

  /** The head of the topic of that id restored asleep (recovery), or undefined when it is not asleep. */
  asleepHead(topicId: number): number | undefined {
    const row = this.recovering?.get(topicId);
    return row === undefined ? undefined : this.sleeping.headAt(row);
  }

  /**
   * Lazy recovery: a frame of a pack written after the cut (`f`, its head `head`, in `buf`), of a
   * topic restored asleep, past its head. A plain append to a plain topic (no caps, TTL, queue,
   * retention state, router header or own segment file, and its packed segment still one a wake
   * may read: SLEEP_BYTES_MAX) joins its row and the topic stays asleep: nothing is read back or
   * indexed. Returns false for anything else (recovery wakes the topic). A later wake indexes the
   * frame from the pack, and checks the row's count and bytes against it.
   */
  absorbAppend(topicId: number, buf: Buffer, f: FrameView, head: AppendHead): boolean {
    const row = this.recovering?.get(topicId);
    if (row === undefined || head.fwd !== undefined || head.firstSeq <= this.sleeping.headAt(row)) return false;
    const c = this.sleeping.configAt(row);
    if (c.type !== 'log' || c.ttl_ms > 0 || c.cap_records > 0 || c.cap_bytes > 0) return false;
    if (this.sleeping.retentionOf(row) || this.sleeping.queueOf(row) || this.sleeping.hasOwnFileAt(row)) return false;
    if (this.sleeping.packedAt(row) + f.size > SLEEP_BYTES_MAX) return false;
    let bytes = 0;
    forEachAppendRecord(buf, f, head, (_i, r) => (bytes += payloadBytesOf(r)));
    this.sleeping.appendAt(row, head.firstSeq, head.count, bytes, head.tsMs, f.size);
    return true;
  }

  /** Lazy recovery: a replayed seq reservation of a topic restored asleep (it stays asleep). */
  reserveAsleep(topicId: number, ceiling: number): void {
    const row = this.recovering?.get(topicId);
    if (row !== undefined) this.sleeping.reserveAt(row, ceiling);
  }

  /** Takes a topic restored asleep out of sleep (recovery loads it). */
  take(topicId: number): DormantTopic {
    const row = this.recovering?.get(topicId);
    const rec = row === undefined ? undefined : this.sleeping.take(this.sleeping.nameOf(row));
    if (!rec) throw new InvariantError(`topic ${topicId.toString(16)} is not asleep`);
    this.recovering!.delete(topicId);
    return rec;
  }

  /** Recovery: the topic of that id was restored asleep and is asleep still (until endRecovery). */
  isRestoredAsleep(topicId: number): boolean {
    return this.recovering?.get(topicId) !== undefined;
  }

  /**
   * Recovery is over: the topics still asleep pad their head up to their reservation ceiling,
   * as finishInstanceRecovery pads every loaded topic (seqs that may have been handed out before
   * a crash are never reused); returns how many there are. The index by id goes.
   */
  endRecovery(): number {
    const asleep = this.recovering?.size ?? 0;
    // Only recovery has put topics to sleep so far (the sweep starts after it): every row pads.
    this.sleeping.padAllToReserved();
    this.recovering = undefined;
    return asleep;
  }

  /** Resolves once `name` is awake, or undefined when it is not sleeping (nothing to wait for). */
  wakeFor(name: string): Promise<void> | undefined {
    const w = this.waking.get(name);
    if (w) return w;
    if (!this.sleeping.has(name)) return undefined;
    const p = this.wake(name).finally(() => this.waking.delete(name));
    this.waking.set(name, p);
    return p;
  }

  private async wake(name: string): Promise<void> {
    const first = this.sleeping.get(name)!;
    // Packs are append-only and a sleeping topic writes nothing, so its frames stay where they are.
    const buf = first.packed_bytes > 0 ? await this.host.packs!.read(first.id, 0, first.packed_bytes) : undefined;
    const frames = buf ? checkedFrames(buf, name) : [];
    const segs = first.own_first_seq ? await this.readOwnSegments(first.id) : [];
    const rec = this.sleeping.take(name)!; // the same topic, maybe touched meanwhile (a list with touch=true)
    // Its row may go to another topic now: recovery's index by id must not point at it.
    this.recovering?.delete(rec.id);
    const actor = this.host.actorFor(name);
    // Its bytes move from `bytes` here back to the host's running total as the steps count them.
    this.host.byTopicId.set(rec.id, actor);
    this.host.input(actor, { k: 'wake', part: rec });
    // Hot: the request that woke the topic usually reads its records next (no second read).
    for (const frame of frames) this.host.input(actor, { k: 'packed', frame, hot: true });
    // Own segment files after it, indexed cold as recovery indexes them.
    for (const seg of segs) this.host.input(actor, { k: 'segment', seg });
    // Its newest file is durable whole (it slept with every frame written, and its store entry
    // went only once synced; or recovery found it as the snapshot recorded it).
    const newest = segs[segs.length - 1];
    if (newest && !newest.relocation) this.host.ownLoaded(rec.id, newest.firstSeq, newest.size);
    this.host.input(actor, { k: 'finish' });
    this.host.textsKept(rec.id, frames);
  }

  /**
   * A sleeping topic's own segment files, oldest first, every frame CRC-checked. None may have
   * a torn tail: a sleeping topic wrote every frame whole before it slept, and recovery restores
   * one asleep only when its directory holds exactly the file it had at the cut, at that size
   * (recovery.ts ownFileAsAtCut); anything written after the cut woke it during the replay.
   * (Files of segments reclaimed since the topic went to sleep cannot be here: it may not sleep
   * with an unlink pending.)
   */
  private async readOwnSegments(topicId: number): Promise<LoadedSegment[]> {
    const list = await listSegments(this.host.fsx, this.host.dataDir, topicId);
    const out: LoadedSegment[] = [];
    for (const seg of list) out.push(await readSegment(this.host.fsx, topicId, seg, false));
    return out;
  }
}

/** The frames of a sleeping topic's packed segment, each CRC-checked (a bad one fails the wake, not the worker). */
function checkedFrames(buf: Buffer, name: string): Buffer[] {
  const out: Buffer[] = [];
  for (let off = 0; off < buf.length;) {
    const p = probeFrame(buf, off, buf.length);
    if (!p.ok) throw new CorruptionError(`topic ${name} packed segment`, `frame does not check (${p.reason})`, off);
    out.push(buf.subarray(off, off + p.frame.size));
    off += p.frame.size;
  }
  return out;
}
