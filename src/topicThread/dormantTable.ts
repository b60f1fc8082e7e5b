// DormantTable: a topic worker's sleeping topics (dormancy.ts) as rows of one Float64Array
// (docs/ARCHITECTURE.md "Many topics"). A million sleeping topics kept as a million DormantTopic objects cost ~300 bytes
// each (the object, boxed timestamps, a retention object now and then) and every major GC marked
// them; a row here is ROW_WORDS numbers, invisible to the marker, plus its name (NameRows: the
// names by row and an open-addressing index of rows by name, cheaper to fill than a Map). A row
// becomes a DormantTopic object only when one is needed (a wake, a list page); checkpoints and
// metrics read the columns. Runs on the topic worker thread; pure data.
// Invariant: a name has at most one row; `bytesTotal` is the sum of the rows' bytes.
import type { TopicConfig } from '../protocol/topicConfig.js';
import type { DormantTopic } from '../actors/topic/dormant.js';
import type { TopicPart, QueuePart } from '../format/topicPart.js';
import { NameRows } from '../core/columns/nameRows.js';
import { grownTo } from '../core/columns/grow.js';

/** Column offsets within a row. Clocks hold NaN for null. */
const ID = 0;
const CREATED = 1;
const RESERVED = 2;
const HEAD = 3;
const COUNT = 4;
const BYTES = 5;
const EARLIEST = 6;
const LAST_TS = 7;
const PACKED = 8;
const LAST_WRITE = 9;
const LAST_READ = 10;
const LAST_CONSUMED = 11;
const CONFIG = 12;
const FIRST_TS = 13;
/** A topic with an own segment file: its first seq and size (0: none). */
const OWN_FIRST = 14;
const OWN_BYTES = 15;
const ROW_WORDS = 16;

const FIRST_ROWS = 1024;

/**
 * Rows per block: a checkpoint keeps the encoded lines of each block (sleepingLines.ts) and
 * encodes again only the blocks changed since, which it tells by the block's generation.
 */
const BLOCK_ROWS = 1024;

/** Retention state: only topics that lost or deleted records have it (rare). */
type Retention = Pick<TopicPart, 'evict_floor' | 'ledger' | 'dead_below' | 'deleted'>;

/** A sleeping queue's part (delivery counts, dead-letter counter) and lease counter. */
interface QueueSide {
  queue: QueuePart;
  leaseNo: number;
}

const clock = (v: number | null): number => (v === null ? NaN : v);
const unclock = (v: number): number | null => (Number.isNaN(v) ? null : v);

export class DormantTable {
  private f = new Float64Array(FIRST_ROWS * ROW_WORDS);
  private rows = 0;
  /**
   * Per block of blockRows rows, a count of the changes to what a checkpoint writes of its rows
   * (a row put, taken or padded): equal counts, same lines. The consumption clock is not written.
   */
  private gens = new Uint32Array(1);
  private readonly freeRows: number[] = [];
  /** Each row's name, and the row of each name. */
  private readonly names = new NameRows();
  private readonly configs: TopicConfig[] = [];
  private readonly configIdx = new Map<TopicConfig, number>();
  private lastConfig: TopicConfig | undefined;
  private lastConfigIdx = 0;
  private readonly retention = new Map<number, Retention>();
  private readonly queues = new Map<number, QueueSide>();
  /** Sum of the rows' live bytes. */
  bytesTotal = 0;

  constructor(readonly blockRows = BLOCK_ROWS) {}

  get size(): number {
    return this.names.size;
  }

  /** Blocks of rows in use (block b holds rows [b × blockRows, (b + 1) × blockRows)). */
  get blocks(): number {
    return Math.ceil(this.rows / this.blockRows);
  }

  /** The generation of block `b` (see gens). */
  blockGen(b: number): number {
    return this.gens[b] ?? 0;
  }

  /** The rows of block `b` that hold a topic, with their names. */
  blockRowsOf(b: number): { rows: number[]; names: string[] } {
    const rows: number[] = [];
    const names: string[] = [];
    for (let row = b * this.blockRows, end = Math.min(this.rows, row + this.blockRows); row < end; row++) {
      const name = this.names.nameOf(row);
      if (name === undefined) continue;
      rows.push(row);
      names.push(name);
    }
    return { rows, names };
  }

  /** The configs rows name, by the index they hold (append-only: an index never changes meaning). */
  get configList(): readonly TopicConfig[] {
    return this.configs;
  }

  private changed(row: number): void {
    const b = Math.floor(row / this.blockRows);
    if (b >= this.gens.length) this.gens = grownTo(this.gens, b + 1);
    this.gens[b] = (this.gens[b]! + 1) >>> 0;
  }

  has(name: string): boolean {
    return this.names.rowOf(name) >= 0;
  }

  /** Stores `d` (a name not here); returns its row (it holds `d` until `d` is taken). */
  put(d: DormantTopic): number {
    const row = this.freeRows.pop() ?? this.grow();
    const o = row * ROW_WORDS;
    const f = this.f;
    f[o + ID] = d.id;
    f[o + CREATED] = d.created_ms;
    f[o + RESERVED] = d.reserved;
    f[o + HEAD] = d.head;
    f[o + COUNT] = d.count;
    f[o + BYTES] = d.bytes;
    f[o + EARLIEST] = d.earliest;
    f[o + LAST_TS] = d.last_ts_ms;
    f[o + FIRST_TS] = d.first_ts_ms;
    f[o + PACKED] = d.packed_bytes;
    f[o + LAST_WRITE] = clock(d.last_write_ms);
    f[o + LAST_READ] = clock(d.last_read_ms);
    f[o + LAST_CONSUMED] = clock(d.last_consumed_ms);
    f[o + CONFIG] = this.configOf(d.config);
    f[o + OWN_FIRST] = d.own_first_seq ?? 0;
    f[o + OWN_BYTES] = d.own_bytes ?? 0;
    if (d.evict_floor !== undefined)
      this.retention.set(row, { evict_floor: d.evict_floor, ledger: d.ledger, dead_below: d.dead_below, deleted: d.deleted });
    if (d.queue !== undefined) this.queues.set(row, { queue: d.queue, leaseNo: d.lease_no ?? 0 });
    this.names.add(row, d.name);
    this.bytesTotal += d.bytes;
    this.changed(row);
    return row;
  }

  /**
   * Makes room for `more` rows beyond those in use, at once (recovery knows how many topics its
   * section holds): one allocation instead of a doubling and a copy per power of two.
   */
  reserve(more: number): void {
    this.names.reserve(more);
    const words = (this.rows + more) * ROW_WORDS;
    if (words <= this.f.length) return;
    const f = new Float64Array(words);
    f.set(this.f.subarray(0, this.rows * ROW_WORDS));
    this.f = f;
  }

  /** The record of `name`, made from its row, or undefined. */
  get(name: string): DormantTopic | undefined {
    const row = this.names.rowOf(name);
    return row < 0 ? undefined : this.record(row);
  }

  /** Removes `name`'s row and returns its record. */
  take(name: string): DormantTopic | undefined {
    const row = this.names.rowOf(name);
    if (row < 0) return undefined;
    const d = this.record(row);
    this.names.remove(row);
    this.retention.delete(row);
    this.queues.delete(row);
    this.freeRows.push(row);
    this.bytesTotal -= d.bytes;
    this.changed(row);
    return d;
  }

  /** Sets the consumption clock (a list with touch=true); false when `name` is not here. */
  touch(name: string, nowMs: number): boolean {
    const row = this.names.rowOf(name);
    if (row < 0) return false;
    this.f[row * ROW_WORDS + LAST_CONSUMED] = nowMs;
    return true;
  }

  headOf(name: string): number | undefined {
    const row = this.names.rowOf(name);
    return row < 0 ? undefined : this.f[row * ROW_WORDS + HEAD];
  }

  /** The head of the topic in `row` (a row put returned, not taken since). */
  headAt(row: number): number {
    return this.f[row * ROW_WORDS + HEAD]!;
  }

  /**
   * Lazy recovery: a frame of records `firstSeq..firstSeq + count - 1` (`bytes` of payload,
   * stamped `tsMs`, `frameBytes` long) joined the packed segment of the topic in `row` after the
   * cut. The row takes it as indexing the frame and sleeping again would: head, count, bytes,
   * earliest and first timestamp (of a topic that held none), last timestamp, packed size, and a
   * reservation ceiling of at least the new head. The caller checked the topic's kind
   * (Dormancy.absorbAppend) and that `firstSeq` is past the head.
   */
  appendAt(row: number, firstSeq: number, count: number, bytes: number, tsMs: number, frameBytes: number): void {
    const f = this.f;
    const o = row * ROW_WORDS;
    const last = firstSeq + count - 1;
    if (f[o + COUNT] === 0) {
      f[o + EARLIEST] = firstSeq;
      f[o + FIRST_TS] = tsMs;
    }
    f[o + HEAD] = last;
    f[o + COUNT] = f[o + COUNT]! + count;
    f[o + BYTES] = f[o + BYTES]! + bytes;
    this.bytesTotal += bytes;
    if (tsMs > f[o + LAST_TS]!) f[o + LAST_TS] = tsMs;
    f[o + PACKED] = f[o + PACKED]! + frameBytes;
    if (f[o + RESERVED]! < last) f[o + RESERVED] = last;
    this.changed(row);
  }

  /** Lazy recovery: a replayed SEQ_RESERVE of the topic in `row` raises its reservation ceiling. */
  reserveAt(row: number, ceiling: number): void {
    const o = row * ROW_WORDS;
    if (this.f[o + RESERVED]! >= ceiling) return;
    this.f[o + RESERVED] = ceiling;
    this.changed(row);
  }

  /** The packed bytes of the topic in `row`. */
  packedAt(row: number): number {
    return this.f[row * ROW_WORDS + PACKED]!;
  }

  /** Whether the topic in `row` has an own segment file. */
  hasOwnFileAt(row: number): boolean {
    return this.f[row * ROW_WORDS + OWN_FIRST]! > 0;
  }

  /**
   * Moves every row's head (and an empty topic's earliest seq) up to its reservation ceiling: the
   * padding at the end of recovery, when every row is a topic recovery restored asleep (see
   * Dormancy.endRecovery).
   */
  padAllToReserved(): void {
    const f = this.f;
    for (let row = 0; row < this.rows; row++) {
      if (this.names.nameOf(row) === undefined) continue;
      const o = row * ROW_WORDS;
      if (f[o + RESERVED]! <= f[o + HEAD]!) continue;
      f[o + HEAD] = f[o + RESERVED]!;
      if (f[o + COUNT] === 0) f[o + EARLIEST] = f[o + HEAD]! + 1;
      this.changed(row);
    }
  }

  /** A cursor on `row` while it still holds `name` (valid until the table changes), else undefined. */
  rowIf(row: number, name: string): DormantRow | undefined {
    if (this.names.nameOf(row) !== name) return undefined;
    const cur = (this.cursor ??= new DormantRow(this));
    cur.at = row;
    return cur;
  }

  /** A cursor on `name`'s row (valid until the table changes), or undefined. */
  row(name: string): DormantRow | undefined {
    const row = this.names.rowOf(name);
    if (row < 0) return undefined;
    const cur = (this.cursor ??= new DormantRow(this));
    cur.at = row;
    return cur;
  }

  private cursor: DormantRow | undefined;

  /** Calls `fn` with a cursor on every row (valid during the call only): no object per row. */
  forEach(fn: (row: DormantRow) => void): void {
    const cur = new DormantRow(this);
    for (let row = 0; row < this.rows; row++) {
      if (this.names.nameOf(row) === undefined) continue;
      cur.at = row;
      fn(cur);
    }
  }

  /** Rows of topics with own segment files (tests and audits, O(rows)). */
  ownFilesCount(): number {
    let n = 0;
    for (let row = 0; row < this.rows; row++) if (this.names.nameOf(row) !== undefined && this.f[row * ROW_WORDS + OWN_FIRST]! > 0) n++;
    return n;
  }

  /** Column `col` of `row` (DormantRow's getters). */
  value(row: number, col: number): number {
    return this.f[row * ROW_WORDS + col]!;
  }

  nameOf(row: number): string {
    return this.names.nameOf(row)!;
  }

  configAt(row: number): TopicConfig {
    return this.configs[this.f[row * ROW_WORDS + CONFIG]!]!;
  }

  retentionOf(row: number): Retention | undefined {
    return this.retention.get(row);
  }

  queueOf(row: number): QueuePart | undefined {
    return this.queues.get(row)?.queue;
  }

  private record(row: number): DormantTopic {
    const o = row * ROW_WORDS;
    const f = this.f;
    const d: DormantTopic = {
      id: f[o + ID]!,
      name: this.names.nameOf(row)!,
      config: this.configAt(row),
      created_ms: f[o + CREATED]!,
      reserved: f[o + RESERVED]!,
      head: f[o + HEAD]!,
      count: f[o + COUNT]!,
      bytes: f[o + BYTES]!,
      earliest: f[o + EARLIEST]!,
      last_ts_ms: f[o + LAST_TS]!,
      first_ts_ms: f[o + FIRST_TS]!,
      last_write_ms: unclock(f[o + LAST_WRITE]!),
      last_read_ms: unclock(f[o + LAST_READ]!),
      last_consumed_ms: unclock(f[o + LAST_CONSUMED]!),
      packed_bytes: f[o + PACKED]!,
    };
    if (f[o + OWN_FIRST]! > 0) {
      d.own_first_seq = f[o + OWN_FIRST]!;
      d.own_bytes = f[o + OWN_BYTES]!;
    }
    const r = this.retention.get(row);
    if (r) Object.assign(d, r);
    const q = this.queues.get(row);
    if (q) {
      d.queue = q.queue;
      if (q.leaseNo !== 0) d.lease_no = q.leaseNo;
    }
    return d;
  }

  private configOf(c: TopicConfig): number {
    // Rows come in runs of one config (a section's topics mostly share one): no Map read for those.
    if (c === this.lastConfig) return this.lastConfigIdx;
    let i = this.configIdx.get(c);
    if (i === undefined) {
      i = this.configs.length;
      this.configs.push(c);
      this.configIdx.set(c, i);
    }
    this.lastConfig = c;
    this.lastConfigIdx = i;
    return i;
  }

  /** A fresh row at the end, doubling the columns when full. */
  private grow(): number {
    this.f = grownTo(this.f, (this.rows + 1) * ROW_WORDS);
    return this.rows++;
  }
}

/** A cursor on a table row (DormantTable.forEach): the record's fields without a record. */
export class DormantRow {
  at = 0;
  constructor(private readonly t: DormantTable) {}
  get name(): string {
    return this.t.nameOf(this.at);
  }
  get config(): TopicConfig {
    return this.t.configAt(this.at);
  }
  get id(): number {
    return this.t.value(this.at, ID);
  }
  get created_ms(): number {
    return this.t.value(this.at, CREATED);
  }
  get reserved(): number {
    return this.t.value(this.at, RESERVED);
  }
  get head(): number {
    return this.t.value(this.at, HEAD);
  }
  get count(): number {
    return this.t.value(this.at, COUNT);
  }
  get bytes(): number {
    return this.t.value(this.at, BYTES);
  }
  get earliest(): number {
    return this.t.value(this.at, EARLIEST);
  }
  get last_ts_ms(): number {
    return this.t.value(this.at, LAST_TS);
  }
  get first_ts_ms(): number {
    return this.t.value(this.at, FIRST_TS);
  }
  get packed_bytes(): number {
    return this.t.value(this.at, PACKED);
  }
  get own_first_seq(): number {
    return this.t.value(this.at, OWN_FIRST);
  }
  get own_bytes(): number {
    return this.t.value(this.at, OWN_BYTES);
  }
  get last_consumed_ms(): number | null {
    return unclock(this.t.value(this.at, LAST_CONSUMED));
  }
  get retention(): Retention | undefined {
    return this.t.retentionOf(this.at);
  }
  get queue(): QueuePart | undefined {
    return this.t.queueOf(this.at);
  }
}
