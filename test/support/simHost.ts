// SimHost (docs/ARCHITECTURE.md "Tests and fuzzing"): the real topic actors in one thread with a
// manual clock, seeded RNGs and a simulated WAL whose writes, fsyncs, timers and peer messages
// happen only on command, so a test or a fuzzer chooses every interleaving. A crash keeps the
// durable frames plus all written ones (SIGKILL) or a prefix of them (power loss) and rebuilds the
// actors through the real recovery code (snapshot part, segments, WAL frames). A compaction pass
// (`compact`) rewrites mostly dead segments as the worker does (src/topicThread/compaction.ts:
// seal, copy, checkpoint, swap), with the same decisions (src/topicThread/compactPlan.ts) and copy
// format (src/storage/compactFrames.ts). Effects are handled through simEffects.ts. Same inputs
// and seed, same outputs: nothing here reads the wall clock or Math.random. Test and fuzz code.
import type { SegmentPlacement } from '../../src/format/layout.js';
import { StepCtx, type EffectSink, type Queries } from '../../src/actors/ctx.js';
import { effectSink, ignored } from './simEffects.js';
import { TopicActor } from '../../src/actors/topic/topicActor.js';
import { applyInput, type ActorInput } from '../../src/actors/topic/inputs.js';
import { retentionPart } from '../../src/actors/topic/replay.js';
import type { ActorOptions } from '../../src/actors/topic/actorCore.js';
import type { TopicRequest, TopicResult } from '../../src/protocol/messages/rpc.js';
import type { WorkEvent } from '../../src/protocol/messages/events.js';
import { seededRng, type Rng } from '../../src/core/rng.js';
import { decodeJsonBody, probeFrame } from '../../src/format/frame.js';
import { FrameType } from '../../src/format/constants.js';
import type { TopicPart } from '../../src/format/topicPart.js';
import type { LoadedSegment } from '../../src/storage/segmentLoad.js';
import { CopyBuilder, walkSegment, type Relocation } from '../../src/storage/compactFrames.js';
import { SlotState } from '../../src/actors/topic/seqIndex.js';
import { liveEstimate, mostlyDead, sealedCandidates, worthSealing } from '../../src/topicThread/compactPlan.js';

export type FrameState = 'queued' | 'written' | 'durable';

export interface SimFrame {
  actor: string;
  frameNo: number;
  buf: Buffer;
  needsDurable: boolean;
  segment: SegmentPlacement | undefined;
  state: FrameState;
}

interface SimTimer {
  actor: string;
  timerId: number;
  atMs: number;
  /** Arming order: ties on `atMs` fire in the order they were armed. */
  order: number;
}

/** A message between actors waiting to be delivered: a peer request, or its answer. */
type PeerDelivery =
  { k: 'req'; from: string; token: number; req: TopicRequest } | { k: 'res'; to: string; token: number; result: TopicResult };

/** A topic instance's segment files: first seq → bytes (a compacted one starts with an EXTENT frame). */
type SegmentFiles = Map<number, Buffer>;

interface Checkpoint {
  parts: TopicPart[];
  /** Frames before this index are covered by the parts and segments. */
  cut: number;
  /** Segment files per topic instance at the checkpoint (fsynced by it). */
  segments: Map<number, SegmentFiles>;
}

/** What a compaction pass did. */
export interface SimCompaction {
  sealed: number;
  /** Segments rewritten with their live records, and those unlinked (nothing of them lived). */
  rewritten: number;
  unlinked: number;
}

export interface SimOptions extends ActorOptions {
  seed: string;
  startMs?: number;
}

export class SimHost {
  nowMs: number;
  epoch = 1;
  /** What the actors are told about the disk (StorageState), for tests of the refusals. */
  storageState = 0;
  private bootSeed: string;
  private actors = new Map<string, TopicActor>();
  private readonly rngs = new Map<string, Rng>();
  private readonly ctxs = new Map<string, StepCtx>();
  readonly frames: SimFrame[] = [];
  private timers: SimTimer[] = [];
  private timerOrder = 0;
  readonly peers: PeerDelivery[] = [];
  /** Replies by request id (requests from the driver); peer replies go to `peers`. */
  readonly replies = new Map<number, TopicResult>();
  private readonly peerReqs = new Map<number, { from: string; token: number }>();
  readonly work: WorkEvent[] = [];
  private nextReqId = 1;
  private localTopicNo = 0;
  /** Segment files per topic instance (APPEND frames at their placed offsets, once written). */
  private segments = new Map<number, SegmentFiles>();
  /** Compacted segments: `topicId:firstSeq` → where original offsets are in the file now. */
  private relocations = new Map<string, Relocation>();
  private checkpoint: Checkpoint | undefined;
  /** Steps taken, for reports. */
  steps = 0;
  /** Inputs an effect asked for (cold reads), delivered right after the step that asked. */
  private followUps: { name: string; input: ActorInput }[] = [];
  private inStep = false;

  constructor(private readonly opts: SimOptions) {
    this.nowMs = opts.startMs ?? 1_700_000_000_000;
    this.bootSeed = `${opts.seed}/boot1`;
  }

  actor(name: string): TopicActor {
    let a = this.actors.get(name);
    if (!a) this.actors.set(name, (a = new TopicActor(name, this.opts)));
    return a;
  }

  // ---- driving actors ----------------------------------------------------------------------

  /** Sends a request to its topic's actor; the reply (maybe later) lands in `replies`. */
  request(req: TopicRequest): number {
    const reqId = this.nextReqId++;
    this.input(req.topic, { k: 'req', reqId, req });
    return reqId;
  }

  input(name: string, input: ActorInput): void {
    const a = this.actor(name);
    let ctx = this.ctxs.get(name);
    if (!ctx) this.ctxs.set(name, (ctx = new StepCtx(this.sinkFor(name), this.queriesFor())));
    let rng = this.rngs.get(name);
    if (!rng) this.rngs.set(name, (rng = seededRng(`${this.bootSeed}/${name}`)));
    ctx.begin(this.nowMs, rng, undefined);
    this.steps++;
    const outer = !this.inStep;
    this.inStep = true;
    applyInput(a, ctx, input, this.opts);
    this.inStep = false;
    if (!outer) return;
    while (this.followUps.length > 0) {
      const f = this.followUps.shift()!;
      this.input(f.name, f.input);
    }
  }

  private queriesFor(): Queries {
    return {
      walCreditExhausted: () => false,
      newTopicId: () => this.epoch * 0x100_0000 + this.localTopicNo++,
      tryAcquireTopicSlot: () => true,
      watched: () => false,
      bootEpoch: () => this.epoch,
      storageState: () => this.storageState,
      volumeHas: () => true,
      walRoomFor: () => true,
    };
  }

  private sinkFor(name: string): EffectSink {
    return effectSink({
      reply: (e) => {
        const peer = this.peerReqs.get(e.reqId);
        if (peer) {
          this.peerReqs.delete(e.reqId);
          this.peers.push({ k: 'res', to: peer.from, token: peer.token, result: e.result });
        } else this.replies.set(e.reqId, e.result);
      },
      submit: (e) => {
        this.frames.push({
          actor: name,
          frameNo: e.frameNo,
          buf: e.frame,
          needsDurable: e.durable,
          segment: e.segment,
          state: 'queued',
        });
      },
      setTimer: (e) => {
        this.timers.push({ actor: name, timerId: e.timerId, atMs: e.atMs, order: this.timerOrder++ });
      },
      cancelTimer: (e) => {
        this.timers = this.timers.filter((t) => !(t.actor === name && t.timerId === e.timerId));
      },
      readCold: (e) => {
        const bufs = e.ranges.map((r) => this.readRange(e.topicId, r.segFirstSeq, r.offset, r.len));
        // Delivered as the next input, like the host's asynchronous read.
        this.followUps.push({ name, input: { k: 'cold', token: e.token, bufs } });
      },
      rewriteSegment: (e) => this.writeSegment(e.place, e.frame),
      work: (e) => void this.work.push(e.event),
      peerRequest: (e) => void this.peers.push({ k: 'req', from: name, token: e.token, req: e.req }),
      textsLoaded: ignored,
      deferForCredit: ignored,
      releaseTopicSlot: ignored,
      topicCreated: ignored,
      topicDeleted: ignored,
      publish: ignored,
    });
  }

  private writeSegment(place: SegmentPlacement, frame: Buffer): void {
    let files = this.segments.get(place.topicId);
    if (!files) this.segments.set(place.topicId, (files = new Map()));
    const cur = files.get(place.segFirstSeq) ?? Buffer.alloc(0);
    const end = place.offset + frame.length;
    const next = cur.length >= end ? cur : Buffer.concat([cur, Buffer.alloc(end - cur.length)]);
    frame.copy(next, place.offset);
    files.set(place.segFirstSeq, next);
  }

  /** Original bytes [offset, offset + len) of a segment, through its relocation when compacted. */
  private readRange(topicId: number, segFirstSeq: number, offset: number, len: number): Buffer {
    const buf = this.segments.get(topicId)?.get(segFirstSeq);
    if (!buf) return Buffer.alloc(0);
    const reloc = this.relocations.get(`${topicId}:${segFirstSeq}`);
    const at = reloc ? reloc.map(offset, len) : { offset, len };
    return at ? buf.subarray(at.offset, at.offset + at.len) : Buffer.alloc(0);
  }

  // ---- the simulated WAL -------------------------------------------------------------------

  get queuedFrames(): number {
    return this.frames.filter((f) => f.state === 'queued').length;
  }

  /** Writes the next `n` queued frames (page cache), then acks their actors. */
  writeFrames(n = Infinity): void {
    const touched = new Set<string>();
    for (const f of this.frames) {
      if (n <= 0) break;
      if (f.state !== 'queued') continue;
      f.state = 'written';
      if (f.segment) this.writeSegment(f.segment, f.buf);
      touched.add(f.actor);
      n--;
    }
    this.ackActors(touched);
  }

  /** fdatasync: every written frame becomes durable, then their actors are acked. */
  syncFrames(): void {
    const touched = new Set<string>();
    for (const f of this.frames) {
      if (f.state !== 'written') continue;
      f.state = 'durable';
      touched.add(f.actor);
    }
    this.ackActors(touched);
  }

  /** Writes and syncs everything queued (a quiet WAL). */
  flushAll(): void {
    this.writeFrames();
    this.syncFrames();
  }

  private ackActors(names: Set<string>): void {
    for (const name of names) {
      let w = 0;
      let d = 0;
      for (const f of this.frames) {
        if (f.actor !== name) continue;
        if (f.state !== 'queued') w = Math.max(w, f.frameNo);
        if (f.state === 'durable') d = Math.max(d, f.frameNo);
      }
      this.input(name, { k: 'wal', written: w, durable: d });
    }
  }

  // ---- time and messages -------------------------------------------------------------------

  /** When the next timer is due, if any. */
  nextTimerAtMs(): number | undefined {
    let at: number | undefined;
    for (const t of this.timers) if (at === undefined || t.atMs < at) at = t.atMs;
    return at;
  }

  /** Moves the clock and fires every timer that came due, earliest first. */
  advance(ms: number): void {
    const until = this.nowMs + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.atMs <= until).sort((a, b) => a.atMs - b.atMs || a.order - b.order)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.nowMs = Math.max(this.nowMs, due.atMs);
      this.input(due.actor, { k: 'timer', id: due.timerId });
    }
    this.nowMs = until;
  }

  /** Delivers the oldest waiting peer message; false when none waits. */
  deliverPeer(): boolean {
    const m = this.peers.shift();
    if (!m) return false;
    if (m.k === 'req') {
      const reqId = this.nextReqId++;
      this.peerReqs.set(reqId, { from: m.from, token: m.token });
      this.input(m.req.topic, { k: 'req', reqId, req: m.req });
    } else {
      this.input(m.to, { k: 'peerReply', token: m.token, result: m.result });
    }
    return true;
  }

  // ---- checkpoints and crashes -------------------------------------------------------------

  /**
   * A checkpoint as the real one takes it: everything written is in segments and parts. `final`:
   * the shutdown's, after the drain, which records each topic's exact head (no padding owed).
   */
  takeCheckpoint(final = false): void {
    this.writeFrames();
    const parts: TopicPart[] = [];
    for (const a of this.actors.values()) {
      const inst = a.current;
      if (!inst) continue;
      parts.push({
        id: inst.id,
        name: inst.name,
        config: inst.config,
        created_ms: inst.createdAtMs,
        reserved: final ? inst.assigned : Math.max(inst.reserve.submitted, inst.assigned),
        ...retentionPart(inst),
      });
    }
    this.checkpoint = {
      parts: JSON.parse(JSON.stringify(parts)) as TopicPart[],
      cut: this.frames.length,
      segments: copyFiles(this.segments),
    };
  }

  /**
   * A compaction pass as the worker runs one (src/topicThread/compaction.ts): every frame written;
   * each topic's mostly dead active segment sealed (any size); each sealed segment below
   * `livePercent` % live copied with its live records; a checkpoint (its snapshot records what
   * the copies left out as dead); then each copy swapped in, on "disk" too (the checkpoint's
   * files: the rename comes after the snapshot is durable), or the segment unlinked when
   * nothing of it lives.
   */
  compact(livePercent: number): SimCompaction {
    this.writeFrames();
    const done: SimCompaction = { sealed: 0, rewritten: 0, unlinked: 0 };
    const copies: { topicId: number; firstSeq: number; buf: Buffer; relocation: Relocation | undefined }[] = [];
    for (const a of [...this.actors.values()]) {
      const inst = a.current;
      if (!inst || inst.recovery) continue;
      if (worthSealing(inst, livePercent, undefined)) {
        this.input(a.name, { k: 'seal', topicId: inst.id });
        done.sealed++;
      }
      for (const c of sealedCandidates(inst)) {
        const src = this.segments.get(inst.id)?.get(c.from);
        if (!src || !mostlyDead(liveEstimate(inst, c.from, c.end - 1), src.length, livePercent)) continue;
        const copy = new CopyBuilder((seq) => inst.index.state(seq) === SlotState.LIVE);
        for (let off = 0; off < src.length;) {
          const p = probeFrame(src, off, src.length);
          if (!p.ok) break; // zeros past the last frame
          copy.frame(src, p.frame, off);
          off += p.frame.size;
        }
        copy.flush();
        const relocation = copy.relocation.extents > 0 ? copy.relocation : undefined;
        copies.push({ topicId: inst.id, firstSeq: c.from, buf: Buffer.concat(copy.take()), relocation });
      }
    }
    this.takeCheckpoint();
    for (const c of copies) {
      for (const files of [this.segments.get(c.topicId), this.checkpoint!.segments.get(c.topicId)]) {
        if (c.relocation) files?.set(c.firstSeq, c.buf);
        else files?.delete(c.firstSeq);
      }
      const key = `${c.topicId}:${c.firstSeq}`;
      if (c.relocation) this.relocations.set(key, c.relocation);
      else this.relocations.delete(key);
      if (c.relocation) done.rewritten++;
      else done.unlinked++;
    }
    return done;
  }

  /**
   * A crash: `kill` keeps every written frame (the page cache survives a SIGKILL); `power` keeps
   * the durable frames plus the first `keepWritten` written-but-unsynced ones. Then recovery.
   */
  crash(mode: 'kill' | 'power', keepWritten = 0): void {
    let kept = 0;
    const survivors: SimFrame[] = [];
    for (const f of this.frames) {
      if (f.state === 'durable' || (f.state === 'written' && (mode === 'kill' || kept++ < keepWritten))) survivors.push(f);
      else if (mode === 'power' && f.state === 'written')
        break; // the log is a prefix: the rest is torn
      else if (f.state === 'queued') break;
    }
    this.recover(survivors);
  }

  private recover(survivors: SimFrame[]): void {
    const cp = this.checkpoint;
    const cut = cp ? Math.min(cp.cut, survivors.length) : 0;
    this.actors = new Map();
    this.ctxs.clear();
    this.rngs.clear();
    this.timers = [];
    this.peers.length = 0;
    this.peerReqs.clear();
    this.work.length = 0;
    this.segments = copyFiles(cp?.segments ?? new Map());
    this.relocations = new Map();
    this.epoch++;
    this.localTopicNo = 0;
    this.bootSeed = `${this.opts.seed}/boot${this.epoch}`;
    const byId = new Map<number, string>();
    for (const part of cp?.parts ?? []) {
      this.input(part.name, { k: 'load', part: structuredClone(part) });
      byId.set(part.id, part.name);
      // Oldest first, as recovery lists them; a compacted file's relocation serves cold reads.
      for (const [firstSeq, buf] of [...(this.segments.get(part.id) ?? [])].sort((x, y) => x[0] - y[0])) {
        if (buf.length === 0) continue;
        const seg = loadedSegment(firstSeq, buf);
        if (seg.relocation) this.relocations.set(`${part.id}:${firstSeq}`, seg.relocation);
        this.input(part.name, { k: 'segment', seg });
      }
    }
    // Frames after the cut replay in log order; the survivors become the new WAL (all durable:
    // recovery fsyncs what it replayed).
    for (const f of survivors.slice(cut)) {
      const p = probeFrame(f.buf, 0, f.buf.length);
      if (!p.ok) throw new Error(`sim frame does not decode (${p.reason})`);
      if (p.frame.type === FrameType.TOPIC_CREATE) byId.set(p.frame.topicId, (decodeJsonBody(f.buf, p.frame) as { name: string }).name);
      const name = byId.get(p.frame.topicId);
      if (name !== undefined) this.input(name, { k: 'frame', frame: f.buf });
    }
    this.frames.length = 0;
    for (const f of survivors) this.frames.push({ ...f, state: 'durable', actor: '' });
    for (const a of [...this.actors.values()]) if (a.current) this.input(a.name, { k: 'finish' });
    // The real server checkpoints at the end of recovery, so the next crash replays from here.
    this.takeCheckpoint();
  }
}

function copyFiles(from: Map<number, SegmentFiles>): Map<number, SegmentFiles> {
  const out = new Map<number, SegmentFiles>();
  for (const [id, files] of from) out.set(id, new Map([...files].map(([seq, buf]) => [seq, Buffer.from(buf)])));
  return out;
}

/** A segment file as recovery reads it (src/storage/segmentLoad.ts readSegment, without the checks). */
function loadedSegment(firstSeq: number, buf: Buffer): LoadedSegment {
  const first = probeFrame(buf, 0, buf.length);
  if (first.ok && first.frame.type === FrameType.EXTENT) {
    const relocation = walkSegment(buf, () => undefined)!;
    return { firstSeq, size: relocation.origEnd, buf, relocation };
  }
  return { firstSeq, size: buf.length, buf };
}
