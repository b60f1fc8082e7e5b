// TopicInstance: the state of one live instance of a topic (a delete + recreate makes a new
// one with a new id). Owned by a TopicActor; pure data plus small helpers, no I/O.
// Invariants: assigned >= head >= durableHead; evictFloor <= earliest() <= head + 1; count and
// bytes are sums over LIVE slots at or below head.
// Memory (many-topics issue): what a topic uses only sometimes (tag index, idempotency table,
// loss ledger, reads, queue, routers) is made at first use, so an idle topic holds its
// watermarks, its seq index and little else.
import { internConfig, type TopicConfig } from '../../protocol/topicConfig.js';
import type { ActorCtx } from '../ctx.js';
import type { LossReason } from '../../format/topicPart.js';
import { LossLedger } from './lossLedger.js';
import { TagIndex } from './tagIndex.js';
import { IdempotencyTable } from './idempotency.js';
import { SeqIndex } from './seqIndex.js';
import { NodeIntern } from './nodeIntern.js';
import { SeqReservation } from './reservation.js';
import { QueueState } from '../queue/queueState.js';
import type { AppliedTable } from '../router/appliedTable.js';
import type { Provenance } from '../router/provenance.js';
import type { RoutingState } from '../router/routingState.js';
import type { Watermarks } from '../../format/watermarks.js';

/** The empty queue every idle instance shares (frozen: a push on it throws instead of leaking). */
const NONE: readonly never[] = Object.freeze([]);

/** The shared empty queue, typed for a field that holds a queue of its own once non-empty. */
export function none<T>(): T[] {
  return NONE as unknown as T[];
}

/** An accepted batch that has not reached its ack point yet. */
export interface PendingBatch {
  firstSeq: number;
  lastSeq: number;
  frameNo: number; // 0 when no frame was written (ephemeral)
  durability: TopicConfig['durability'];
  /** Records it adds to `count` when visible (a router's trim marker adds none). */
  live: number;
  bytes: number;
  tsMs: number;
}

/**
 * A reply waiting for a visibility or durability condition. `send` gets the context of the step
 * that releases it (never a captured one), so its effects belong to that step.
 */
export interface Gate extends GateCondition {
  send(ctx: ActorCtx): void;
}

/** What a gate waits for, and the request it answers (failed if the WAL fails meanwhile). */
export interface GateCondition {
  reqId?: number;
  needHead?: number;
  /** Frame that must be fsynced (0: none). */
  needDurableFrame?: number;
  /** Frame that must be written (0: none). */
  needWrittenFrame?: number;
}

export interface SegmentCursor {
  /** First seq of the active segment, its byte size, and every segment's first seq by ordinal. */
  firstSeq: number;
  size: number;
  /** Frames in the active segment (bounded while packed: PACK_FRAMES_MAX, appendOp.ts). */
  frames: number;
  ordinal: number;
  firstSeqs: number[];
  /** Segments (by ordinal) already unlinked because every record in them is gone. */
  reclaimed: number;
  /**
   * Bytes of each sealed segment by ordinal, as sealed (made at the topic's first roll; a
   * compacted file loaded at recovery: 0). A checkpoint lists the own files that must be there
   * (docs/FORMAT.md "Snapshots", `files`).
   */
  sealedBytes?: number[];
  /**
   * The segment of ordinal 0 lives in the worker's shared pack files, not a file of its own
   * (docs/FORMAT.md "Pack files"); it rolls over to an own file at the pack threshold.
   */
  packed: boolean;
}

/** State that exists only while the instance is being recovered (dropped by finish). */
export interface RecoveryScratch {
  /** From the snapshot: every seq below it is gone (evicted below evictFloor, else deleted). */
  deadBelow: number;
  /** From the snapshot: user-deleted ranges at or above deadBelow, inclusive. */
  deletedRanges: [number, number][];
  /** Segments indexed so far (the default segment cursor stands until the first). */
  segmentsLoaded: number;
  /** A sleeping topic waking (not a recovery): its watermarks stand, nothing is padded. */
  wake?: Watermarks;
}

/** The ledger of every instance that never lost a record: frozen, so a write to it throws. */
const NO_LOSS: LossLedger = Object.freeze(new LossLedger());

export class TopicInstance {
  readonly index = new SeqIndex();
  /** Last seq handed out, acked or not. */
  assigned = 0;
  /** Last visible seq. */
  head = 0;
  /** Last seq known fsynced. */
  durableHead = 0;
  readonly reserve = new SeqReservation();
  lastTsMs = 0;
  lastWriteTsMs: number | null = null;
  lastReadTsMs: number | null = null;
  lastConsumedMs: number | null = null;
  count = 0;
  bytes = 0;
  private earliestHint = 1;
  /** 1 + the highest seq removed while live by cap or TTL (the involuntary floor). */
  evictFloor = 1;
  /** Largest before_seq a prefix delete applied. */
  deleteBelow = 0;
  /** Made at the first involuntary loss (recordLoss) or restored from a snapshot or frame. */
  private lossLedger: LossLedger | undefined = undefined;
  /** Floors or ledger changed since the last FLOORS frame. */
  floorsDirty = false;
  private tagIndex: TagIndex | undefined = undefined;
  /** Any user delete happened (snapshots then record deleted ranges). */
  hasDeletes = false;
  /**
   * Records were appended while the class was `ephemeral`: they live only in memory (no frame),
   * so this instance may not sleep (a wake rebuilds from frames) until a restart drops them.
   */
  holdsUnwritten = false;
  recovery: RecoveryScratch | undefined;
  /** Accepted batches not yet visible: what a `discard: reject` check must count too. */
  pendingCount = 0;
  pendingBytes = 0;
  private idemTable: IdempotencyTable | undefined = undefined;
  /** Made at the first node name (most topics never see one); see `nodes`. */
  private nodeIntern: NodeIntern | undefined = undefined;
  /**
   * The three queues below are the shared frozen empty array while empty (an idle topic holds
   * no array of its own; a push on the shared one throws): add with addPending, addUnsynced and
   * addGate; an emptied queue is set back to none().
   */
  pending: PendingBatch[] = none();
  /** Visible `disk` batches whose frames are not fsynced yet (they bound durableHead). */
  unsynced: PendingBatch[] = none();
  gates: Gate[] = none();
  /**
   * The sum of the watermarks the gates were last checked at (TopicActor.runInstanceGates); -1
   * before any check. A field: as a WeakMap entry per gated instance (every creation waits on a
   * gate) its inserts and their GC cost were ~3% of a worker creating topics.
   */
  gatesCheckedAt = -1;
  /** Frame number of the create/config frame replies must wait for (durable, docs/API.md "Topic lifecycle"). */
  controlFrameNo = 0;
  segment: SegmentCursor = { firstSeq: 1, size: 0, frames: 0, ordinal: 0, firstSeqs: [1], reclaimed: 0, packed: true };
  /** The lease side of a queue topic (a type never changes within an instance); else undefined. */
  readonly queue: QueueState | undefined;
  /** Routers with this topic as source (created at the first install), else undefined. */
  routing: RoutingState | undefined = undefined;
  /** Dest side: progress of each router copying into this topic (created at the first copy). */
  applied: AppliedTable | undefined = undefined;
  /** Dest side: origin topic and hop count of copies (created at the first copy). */
  provenance: Provenance | undefined = undefined;

  private cfg: TopicConfig;

  constructor(
    readonly id: number,
    readonly name: string,
    config: TopicConfig,
    readonly createdAtMs: number,
  ) {
    this.cfg = internConfig(config);
    this.queue = config.type === 'queue' ? new QueueState() : undefined;
  }

  /** Node names of this topic's records, made at the first one. */
  get nodes(): NodeIntern {
    return (this.nodeIntern ??= new NodeIntern());
  }

  /** The node names interned so far, if any were (no NodeIntern is made to ask). */
  get nodesIfAny(): NodeIntern | undefined {
    return this.nodeIntern;
  }

  addPending(b: PendingBatch): void {
    (this.pending === none() ? (this.pending = []) : this.pending).push(b);
  }

  addUnsynced(b: PendingBatch): void {
    (this.unsynced === none() ? (this.unsynced = []) : this.unsynced).push(b);
  }

  addGate(g: Gate): void {
    (this.gates === none() ? (this.gates = []) : this.gates).push(g);
  }

  /**
   * The class a change to this topic's records (a delete, an ack, a dead-letter or redrive move,
   * new floors) is logged with: its own, except that an `ephemeral` topic whose segments hold
   * records stored under an earlier class logs it as a `disk` one does (written before the
   * reply). Those records come back after a crash, so their deletes must too.
   */
  get logClass(): TopicConfig['durability'] {
    const cls = this.cfg.durability;
    return cls === 'ephemeral' && (this.segment.ordinal > 0 || this.segment.size > 0) ? 'disk' : cls;
  }

  /** The resolved config: a shared, frozen object (interned), replaced whole on a change. */
  get config(): TopicConfig {
    return this.cfg;
  }
  set config(c: TopicConfig) {
    this.cfg = internConfig(c);
  }

  /** Why seqs were lost (a shared empty ledger until the first loss). */
  get ledger(): LossLedger {
    return this.lossLedger ?? NO_LOSS;
  }
  set ledger(l: LossLedger) {
    this.lossLedger = l;
  }

  /** Records the involuntary loss of `seq` in the ledger. */
  recordLoss(seq: number, reason: LossReason): void {
    (this.lossLedger ??= new LossLedger()).add(seq, reason);
  }

  /** Tag → seqs; made at the first tagged record (or a delete by match). */
  get tags(): TagIndex {
    return (this.tagIndex ??= new TagIndex());
  }

  /** Idempotency keys in the window; made at the first append that sends a key. */
  get idem(): IdempotencyTable {
    return (this.idemTable ??= new IdempotencyTable());
  }

  /** First live seq, else head + 1. */
  earliest(): number {
    const s = this.index.nextLive(this.earliestHint, this.head);
    this.earliestHint = s;
    return s;
  }
}
