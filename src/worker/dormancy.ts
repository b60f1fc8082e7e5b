// Dormancy: a topic worker's sleeping topics and the policy that puts quiet topics to sleep
// (issue 15; the rules of what may sleep are src/actors/topic/dormant.ts; docs/ARCHITECTURE.md
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
// Invariant: a name is sleeping or has an actor, never both; a sleeping topic's bytes stay in
// the worker's live-bytes total (`bytes`).
import { performance } from 'node:perf_hooks';
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { ActorInput } from '../actors/topic/inputs.js';
import type { DormantTopic } from '../actors/topic/dormant.js';
import { DormantTable } from './dormantTable.js';
import { IdIndex } from '../core/idIndex.js';
import type { PackStore } from '../storage/packStore.js';
import { probeFrame } from '../wal/frame.js';

/** How often quiet topics are looked for. */
const SWEEP_MS = 100;
/** Longest a sweep runs (the worker's other work waits meanwhile). */
const SWEEP_BUDGET_MS = 10;

export interface DormancyHost {
  readonly packs: PackStore | undefined;
  readonly byTopicId: Map<number, TopicActor>;
  actorFor(name: string): TopicActor;
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
  private readonly waking = new Map<string, Promise<void>>();
  /**
   * Table rows of the topics restored asleep by recovery, by id (recovery applies frames by id),
   * until it ends. An IdIndex: recovery fills one entry per topic (a million at times).
   */
  private recovering: IdIndex | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly host: DormancyHost,
    private readonly opts: DormancyOptions,
  ) {}

  /** Starts the sweeps (after recovery; never when topics may not sleep). */
  start(): void {
    if (this.opts.sleepMs <= 0 || this.timer) return;
    this.timer = setInterval(() => this.sweep(), SWEEP_MS);
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

  /** After every step of `actor`: an actor with a live instance moves to the back of the order. */
  stepped(actor: TopicActor, now: number): void {
    this.awake.delete(actor);
    if (actor.current) this.awake.set(actor, now);
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
      const d = actor.current ? actor.dormancy(this.host.packs?.map.size(actor.current.id) ?? -1) : 'no';
      if (d === 'no') continue;
      if (d === 'later' || this.host.hasTimers(actor)) later.push(actor);
      else {
        this.sleep(actor, d);
        slept++;
      }
    }
    for (const a of later) this.awake.set(a, now);
    return slept;
  }

  private sleep(actor: TopicActor, rec: DormantTopic): void {
    this.sleeping.put(rec);
    this.host.byTopicId.delete(rec.id);
    // The actor forgets its instance and is dropped as idle after this step; the name stays listed.
    this.host.input(actor, { k: 'sleep' });
  }

  // ---- lazy recovery (recovery.ts): topics of the snapshot restored asleep ---------------------

  /**
   * Keeps a topic of the snapshot asleep (`rec` may be readSection's cursor: the table copies its
   * fields); the index by id finds it until endRecovery.
   */
  restore(rec: DormantTopic): void {
    const row = this.sleeping.put(rec);
    (this.recovering ??= new IdIndex()).set(rec.id, row);
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

  /** Takes a topic restored asleep out of sleep (recovery loads it). */
  take(topicId: number): DormantTopic {
    const row = this.recovering?.get(topicId);
    const rec = row === undefined ? undefined : this.sleeping.take(this.sleeping.nameOf(row));
    if (!rec) throw new Error(`topic ${topicId.toString(16)} is not asleep`);
    this.recovering!.delete(topicId);
    return rec;
  }

  /**
   * Recovery is over: the topics still asleep pad their head up to their reservation ceiling,
   * as finishInstanceRecovery pads every loaded topic (seqs that may have been handed out before
   * a crash are never reused); returns their ids. The index by id goes.
   */
  endRecovery(): number[] {
    const ids: number[] = [];
    this.recovering?.idsInto(ids);
    // Only recovery has put topics to sleep so far (the sweep starts after it): every row pads.
    this.sleeping.padAllToReserved();
    this.recovering = undefined;
    return ids;
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
    const rec = this.sleeping.take(name)!; // the same topic, maybe touched meanwhile (a list with touch=true)
    // Its row may go to another topic now: recovery's index by id must not point at it.
    this.recovering?.delete(rec.id);
    const actor = this.host.actorFor(name);
    // Its bytes move from `bytes` here back to the host's running total as the steps count them.
    this.host.byTopicId.set(rec.id, actor);
    this.host.input(actor, { k: 'wake', part: rec });
    // Hot: the request that woke the topic usually reads its records next (no second read).
    for (const frame of frames) this.host.input(actor, { k: 'packed', frame, hot: true });
    this.host.input(actor, { k: 'finish' });
    this.host.textsKept(rec.id, frames);
  }
}

/** The frames of a sleeping topic's packed segment, each CRC-checked (a bad one fails the wake, not the worker). */
function checkedFrames(buf: Buffer, name: string): Buffer[] {
  const out: Buffer[] = [];
  for (let off = 0; off < buf.length; ) {
    const p = probeFrame(buf, off, buf.length);
    if (!p.ok) throw new Error(`topic ${name}: its packed frame at ${off} does not check (${p.reason})`);
    out.push(buf.subarray(off, off + p.frame.size));
    off += p.frame.size;
  }
  return out;
}
