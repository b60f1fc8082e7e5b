// TopicInstance: the state of one live instance of a topic (a delete + recreate makes a new
// one with a new id). Owned by a TopicActor; pure data plus small helpers, no I/O.
import type { TopicConfig } from './config.js';
import type { ActorCtx } from './ctx.js';
import { LossLedger } from './lossLedger.js';
import { TagIndex } from './tagIndex.js';
import { IdempotencyTable } from './idempotency.js';
import { SeqIndex, SlotState } from './seqIndex.js';

/** An accepted batch that has not reached its ack point yet. */
export interface PendingBatch {
  firstSeq: number;
  lastSeq: number;
  frameNo: number; // 0 when no frame was written (ephemeral)
  durability: TopicConfig['durability'];
  bytes: number;
  tsMs: number;
}

/**
 * A reply waiting for a visibility or durability condition. `send` gets the context of the step
 * that releases it (never a captured one), so its effects belong to that step.
 */
export interface Gate {
  needHead: number;
  needDurableFrame: number;
  /** Frame that must be written (0: none). */
  needWrittenFrame?: number;
  send(ctx: ActorCtx): void;
}

export interface SegmentCursor {
  /** First seq of the active segment, its byte size, and every segment's first seq by ordinal. */
  firstSeq: number;
  size: number;
  ordinal: number;
  firstSeqs: number[];
}

export class TopicInstance {
  readonly index = new SeqIndex();
  /** Last seq handed out, acked or not. */
  assigned = 0;
  /** Last visible seq. */
  head = 0;
  /** Last seq known fsynced. */
  durableHead = 0;
  /** Durable seq ceiling (SEQ_RESERVE) and the highest one submitted. */
  reservedDurable = 0;
  reservedSubmitted = 0;
  readonly reserveFrames: { frameNo: number; ceiling: number }[] = [];
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
  ledger = new LossLedger();
  /** Floors or ledger changed since the last FLOORS frame. */
  floorsDirty = false;
  readonly tags = new TagIndex();
  /** Any user delete happened (snapshots then record deleted ranges). */
  hasDeletes = false;
  /** Recovery only: from the snapshot, applied once segments and the WAL are replayed. */
  deadBelow = 0;
  deletedRanges: [number, number][] = [];
  /** Accepted batches not yet visible: what a `discard: reject` check must count too. */
  pendingCount = 0;
  pendingBytes = 0;
  idem = new IdempotencyTable();
  readonly nodeNames: string[] = [''];
  private readonly nodeIds = new Map<string, number>();
  private readonly nodeIdsByLiteral = new Map<string, number>();
  private readonly tagsByLiteral = new Map<string, string>();
  readonly pending: PendingBatch[] = [];
  /** Visible `disk` batches whose frames are not fsynced yet (they bound durableHead). */
  readonly unsynced: PendingBatch[] = [];
  readonly gates: Gate[] = [];
  /** Frame number of the create/config frame replies must wait for (durable, G3). */
  controlFrameNo = 0;
  segment: SegmentCursor = { firstSeq: 1, size: 0, ordinal: 0, firstSeqs: [1] };
  /** Segments (by ordinal) already unlinked because every record in them is gone. */
  segmentsReclaimed = 0;
  /** Recovery: segments indexed so far (the default cursor above stands until the first). */
  segmentsLoaded = 0;
  largestRecentBatch = 0;
  /** Adaptive reservation block (grows when appends outrun the reservation's fsync). */
  reserveBlock = 1024;

  constructor(
    readonly id: number,
    readonly name: string,
    public config: TopicConfig,
    readonly createdAtMs: number,
  ) {}

  nodeId(node: string | undefined): number {
    if (node === undefined) return 0;
    let id = this.nodeIds.get(node);
    if (id === undefined) {
      id = this.nodeNames.length;
      this.nodeNames.push(node);
      this.nodeIds.set(node, id);
    }
    return id;
  }

  /** Node id from a stored JSON string literal (recovery), parsing each distinct literal once. */
  nodeIdOfLiteral(latin1Literal: string): number {
    let id = this.nodeIdsByLiteral.get(latin1Literal);
    if (id === undefined) {
      id = this.nodeId(JSON.parse(Buffer.from(latin1Literal, 'latin1').toString('utf8')) as string);
      this.nodeIdsByLiteral.set(latin1Literal, id);
    }
    return id;
  }

  /** A tag from its stored JSON string literal (recovery), parsing each distinct literal once. */
  tagOfLiteral(latin1Literal: string): string {
    let tag = this.tagsByLiteral.get(latin1Literal);
    if (tag === undefined) {
      tag = JSON.parse(Buffer.from(latin1Literal, 'latin1').toString('utf8')) as string;
      if (this.tagsByLiteral.size < 100_000) this.tagsByLiteral.set(latin1Literal, tag);
    }
    return tag;
  }

  knownNodeId(node: string): number | undefined {
    return this.nodeIds.get(node);
  }

  /** First live seq, else head + 1. */
  earliest(): number {
    let s = this.earliestHint;
    while (s <= this.head && this.index.state(s) !== SlotState.LIVE) s++;
    this.earliestHint = s;
    if (s > this.head) return this.head + 1;
    return s;
  }
}
