// A topic worker's section of a v2 snapshot (docs/FORMAT.md "Snapshots"): what one worker's
// checkpoint step writes and what the same worker reads back at recovery, so the main thread only
// concatenates and checks bytes and never parses a million topic parts. NDJSON, one object per line:
//   line 1: {"configs":[...],"packs":{"whole":[name...],"tail":[name,bytes]|null}}: the topic
//           configs the parts name by index (some may be named by no part), and what the
//           worker's pack files held at the cut (packs wholly covered by the parts' runs, and the
//           pack being written with the bytes written at the cut);
//   then a line per topic: its TopicPart with "c" (index into configs) instead of "config", plus
//           "runs" ([pack no, offset, length, ...]) when it has packed frames and "wm" (its
//           watermarks in WM_FIELDS order, no recency clocks, then first_ts_ms for a topic with
//           TTL or a queue) when it was quiet at the cut (it may recover asleep), then "own"
//           ([first seq, size] of its one own segment file) when such a topic has one.
// Parts are written as bytes into chunks: never one string of a million parts (V8 caps a string
// near 512 MB), nor a string per part; lines of sleeping topics kept from an earlier checkpoint
// join by reference (addLines). Runs in topic workers (both directions)
// and offline tools (decode).
import { internConfig, type TopicConfig } from '../actors/topic/config.js';
import type { Watermarks } from '../actors/topic/watermarks.js';
import type { TopicPart } from './topicPart.js';
import { writeUint } from '../core/decimal.js';
import { crc32 } from 'node:zlib';
import { CorruptionError } from '../core/corruption.js';
import { invariant } from '../core/invariant.js';

/**
 * The order of the watermarks in a part's "wm" array. The recency clocks (last write, read and
 * consumption) are not among them: they are not persisted (docs/API.md "GET /v0/topics/:topic"), so a topic restored
 * asleep has them null, as a loaded one does.
 */
export const WM_FIELDS = ['head', 'count', 'bytes', 'earliest', 'last_ts_ms', 'packed_bytes'] as const satisfies readonly (keyof Watermarks)[];

/**
 * The watermarks a section holds of a quiet topic: WM_FIELDS, and first_ts_ms (written after
 * them for a topic with TTL or a queue only; read as 0 when absent, which wakes a TTL topic soon
 * after recovery: dormant.ts ttlWakeAt).
 */
export type SectionWatermarks = Pick<Watermarks, (typeof WM_FIELDS)[number] | 'first_ts_ms'> & {
  /** A quiet topic's own segment file, first seq and size (0: none; TopicPart's DormantTopic). */
  readonly own_first_seq?: number;
  readonly own_bytes?: number;
};

/** What a worker's packs held at the cut: recovery scans only what came after. */
export interface SectionPacks {
  /** Packs every frame of which was written before the cut (their live frames are in runs). */
  whole: string[];
  /** The pack being written at the cut and the bytes written to it by then, or null. */
  tail: [string, number] | null;
}

/** What a section needs of a sleeping topic's table row (worker/dormantTable.ts's DormantRow). */
export interface SleepingRow extends SectionWatermarks {
  readonly id: number;
  readonly name: string;
  readonly config: TopicConfig;
  readonly created_ms: number;
  readonly retention: Partial<TopicPart> | undefined;
  readonly queue: TopicPart['queue'];
}

/** Topics whose watermarks carry first_ts_ms: with TTL (when expiry begins), queues (the oldest ready job's age). */
const withFirstTs = (c: TopicConfig) => c.ttl_ms > 0 || c.type === 'queue';

/** A topic part as a section holds it. */
export interface SectionPart extends TopicPart {
  /** Physical runs of its packed segment: [pack no, offset, length, ...] in logical order. */
  runs?: number[];
  /** Watermarks of a quiet topic (it may recover asleep). */
  wm?: Watermarks;
  /** A quiet topic's own segment file: [first seq, size]. */
  own?: [number, number];
}

/** Bytes per chunk of a section being written. */
const CHUNK_BYTES = 1 << 20;

export interface EncodedSection {
  bytes: Uint8Array;
  topics: number;
}

/** Builds a section part by part (a worker's checkpoint step). */
export class SectionWriter {
  private readonly configIdx = new Map<TopicConfig, number>();
  private readonly configs: TopicConfig[] = [];
  /**
   * The part lines, written straight into chunks of bytes (no string per part), in order:
   * `chunks`, then buf[start, at) (the bytes of `buf` before `start` are in `chunks` already).
   */
  private readonly chunks: Uint8Array[] = [];
  private buf = Buffer.allocUnsafeSlow(CHUNK_BYTES);
  /** The buffers this writer allocated (not pooled, not shared): what pieces() lets a caller transfer. */
  private readonly own: ArrayBuffer[] = [this.buf.buffer as ArrayBuffer];
  private start = 0;
  private at = 0;
  private topics = 0;
  /** Where a capture began (beginCapture): chunks.length, start and at then. */
  private capture: { chunk: number; start: number; at: number } | undefined;

  /**
   * `configs` take the indices 0..n-1, in order, whether or not a part names them: lines encoded
   * for another section seeded with the same list (sleepingLines.ts) name the same configs.
   */
  constructor(configs: readonly TopicConfig[] = []) {
    for (const c of configs) {
      this.configIdx.set(c, this.configs.length);
      this.configs.push(c);
    }
  }

  /** Parts added so far. */
  get topicCount(): number {
    return this.topics;
  }

  /**
   * Appends `lines` whole part lines encoded earlier (by a writer seeded with the same configs),
   * by reference: `bytes` must not change while this writer is in use.
   */
  addLines(bytes: Uint8Array, lines: number): void {
    invariant(!this.capture, 'addLines during a capture');
    if (this.at > this.start) this.chunks.push(this.buf.subarray(this.start, this.at));
    this.start = this.at;
    if (bytes.length > 0) this.chunks.push(bytes);
    this.topics += lines;
  }

  /** Starts collecting the bytes of the parts added from now on (endCapture returns a copy). */
  beginCapture(): void {
    this.capture = { chunk: this.chunks.length, start: this.start, at: this.at };
  }

  /** A copy of the bytes added since beginCapture. */
  endCapture(): Buffer {
    const c = this.capture;
    invariant(c, 'endCapture without beginCapture');
    this.capture = undefined;
    if (c.chunk === this.chunks.length) return Buffer.from(this.buf.subarray(c.at, this.at));
    // chunks[c.chunk] is the buffer current at the capture, from its `start` on.
    const parts = [this.chunks[c.chunk]!.subarray(c.at - c.start), ...this.chunks.slice(c.chunk + 1), this.buf.subarray(this.start, this.at)];
    return Buffer.concat(parts);
  }

  add(part: TopicPart, runs?: readonly number[], wm?: SectionWatermarks): void {
    this.head(part.id, part.name, part.config, part.created_ms, part.reserved, part);
    if (part.queue !== undefined) this.ascii(`,"queue":${JSON.stringify(part.queue)}`);
    if (part.routers_applied !== undefined) this.ascii(`,"routers_applied":${JSON.stringify(part.routers_applied)}`);
    this.end(runs, runs?.length ?? 0, wm, withFirstTs(part.config));
  }

  /**
   * A sleeping topic's part and watermarks straight from its table row (checkpoints of a million
   * sleeping topics make no record object each), `reserved` as the checkpoint records it.
   */
  addRow(d: SleepingRow, reserved: number, runs: readonly number[], runsLen: number): void {
    this.head(d.id, d.name, d.config, d.created_ms, reserved, d.retention);
    if (d.queue !== undefined) this.ascii(`,"queue":${JSON.stringify(d.queue)}`);
    this.end(runs, runsLen, d, withFirstTs(d.config));
  }

  private head(id: number, name: string, config: TopicConfig, createdMs: number, reserved: number, retention: Partial<TopicPart> | undefined): void {
    let c = this.configIdx.get(config);
    if (c === undefined) {
      c = this.configs.length;
      this.configs.push(config);
      this.configIdx.set(config, c);
    }
    // Names are [A-Za-z0-9._:-] (docs/API.md "Conventions"): no escaping. The rare fields go through JSON.stringify.
    this.ascii('{"id":');
    this.int(id);
    this.ascii(',"name":"');
    this.ascii(name);
    this.ascii('","c":');
    this.int(c);
    this.ascii(',"created_ms":');
    this.int(createdMs);
    this.ascii(',"reserved":');
    this.int(reserved);
    if (retention?.evict_floor !== undefined) this.ascii(`,"evict_floor":${retention.evict_floor},"ledger":${JSON.stringify(retention.ledger ?? [])},"dead_below":${retention.dead_below ?? 0},"deleted":${JSON.stringify(retention.deleted ?? [])}`);
  }

  private end(runs: readonly number[] | undefined, runsLen: number, wm: SectionWatermarks | undefined, firstTs: boolean): void {
    if (runs && runsLen > 0) {
      this.ascii(',"runs":[');
      for (let i = 0; i < runsLen; i++) {
        if (i > 0) this.byte(0x2c);
        this.int(runs[i]!);
      }
      this.byte(0x5d);
    }
    if (wm) {
      // WM_FIELDS order.
      this.ascii(',"wm":[');
      this.int(wm.head);
      this.byte(0x2c);
      this.int(wm.count);
      this.byte(0x2c);
      this.int(wm.bytes);
      this.byte(0x2c);
      this.int(wm.earliest);
      this.byte(0x2c);
      this.int(wm.last_ts_ms);
      this.byte(0x2c);
      this.int(wm.packed_bytes);
      if (firstTs) {
        this.byte(0x2c);
        this.int(wm.first_ts_ms);
      }
      this.byte(0x5d);
      if (wm.own_first_seq) {
        this.ascii(',"own":[');
        this.int(wm.own_first_seq);
        this.byte(0x2c);
        this.int(wm.own_bytes ?? 0);
        this.byte(0x5d);
      }
    }
    this.byte(0x7d);
    this.byte(0x0a);
    this.topics++;
  }

  /** Room for `n` more bytes in the current chunk (a fresh chunk when it is full; pieces lists them). */
  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    this.chunks.push(this.buf.subarray(this.start, this.at));
    this.buf = Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, n));
    this.own.push(this.buf.buffer as ArrayBuffer);
    this.start = 0;
    this.at = 0;
  }

  private byte(b: number): void {
    this.room(1);
    this.buf[this.at++] = b;
  }

  /**
   * A string of ASCII characters: names and keys char by char (a call into C++ per short string
   * cost more than the copy), longer JSON (rare queue and retention fields) through Buffer.write.
   */
  private ascii(s: string): void {
    if (s.length > 64) {
      this.room(s.length * 3);
      this.at += this.buf.write(s, this.at, 'utf8');
      return;
    }
    this.room(s.length);
    const b = this.buf;
    let at = this.at;
    for (let i = 0; i < s.length; i++) b[at++] = s.charCodeAt(i);
    this.at = at;
  }

  /** A non-negative integer below 2^53, in decimal, without making a string (anything else as JSON). */
  private int(v: number): void {
    if (!(v >= 0 && v <= Number.MAX_SAFE_INTEGER && Math.floor(v) === v)) return this.ascii(JSON.stringify(v));
    this.room(16);
    this.at = writeUint(this.buf, this.at, v);
  }

  /**
   * The section as its pieces in order (the first line, then the chunks: no copy of lines joined
   * by reference), their CRC-32, the topic count, and the buffers the writer allocated (a caller
   * may transfer them: the writer is done with).
   */
  pieces(packs: SectionPacks): { pieces: Uint8Array[]; crc: number; topics: number; own: ArrayBuffer[] } {
    const head = Buffer.from(`${JSON.stringify({ configs: this.configs, packs })}\n`, 'utf8');
    const pieces = [head, ...this.chunks, this.buf.subarray(this.start, this.at)].filter((p) => p.byteLength > 0);
    let crc = 0;
    for (const p of pieces) crc = crc32(p, crc);
    return { pieces, crc, topics: this.topics, own: this.own };
  }

  /** The section's bytes in one buffer and its topic count (tests and tools; a checkpoint takes pieces). */
  finish(packs: SectionPacks): EncodedSection {
    const { pieces, topics } = this.pieces(packs);
    return { bytes: Buffer.concat(pieces), topics };
  }
}

/** A section's first line. */
export interface SectionHead {
  configs: TopicConfig[];
  packs: SectionPacks;
}

/**
 * One part of a section as readSection walks it, reused for every line: copy what you keep, or
 * take `part()` (a standalone SectionPart). Its watermark fields read as a DormantTopic's do (the
 * recency clocks are null: not persisted), so a sleeping topic can be stored from it directly.
 */
export class PartCursor {
  id = 0;
  name = '';
  config!: TopicConfig;
  created_ms = 0;
  reserved = 0;
  evict_floor: number | undefined;
  ledger: TopicPart['ledger'];
  dead_below: number | undefined;
  deleted: TopicPart['deleted'];
  queue: TopicPart['queue'];
  routers_applied: TopicPart['routers_applied'];
  /** The part's runs are runs[0, runsLen) (the array is reused). */
  readonly runs: number[] = [];
  runsLen = 0;
  /** Whether the part has watermarks (the fields below). */
  hasWm = false;
  head = 0;
  count = 0;
  bytes = 0;
  earliest = 0;
  last_ts_ms = 0;
  first_ts_ms = 0;
  packed_bytes = 0;
  /** The own segment file of a quiet topic ("own"), 0 when none. */
  own_first_seq = 0;
  own_bytes = 0;
  readonly last_write_ms = null;
  readonly last_read_ms = null;
  readonly last_consumed_ms = null;

  /** The retention fields, when the part has them. */
  get retention(): Partial<TopicPart> | undefined {
    return this.evict_floor === undefined ? undefined : { evict_floor: this.evict_floor, ledger: this.ledger, dead_below: this.dead_below, deleted: this.deleted };
  }

  /** A standalone copy of the part. */
  part(): SectionPart {
    const p: SectionPart = { id: this.id, name: this.name, config: this.config, created_ms: this.created_ms, reserved: this.reserved };
    if (this.evict_floor !== undefined) Object.assign(p, this.retention);
    if (this.queue !== undefined) p.queue = this.queue;
    if (this.routers_applied !== undefined) p.routers_applied = this.routers_applied;
    if (this.runsLen > 0) p.runs = this.runs.slice(0, this.runsLen);
    if (this.hasWm) p.wm = { head: this.head, count: this.count, bytes: this.bytes, earliest: this.earliest, last_ts_ms: this.last_ts_ms, first_ts_ms: this.first_ts_ms, last_write_ms: null, last_read_ms: null, last_consumed_ms: null, packed_bytes: this.packed_bytes };
    if (this.own_first_seq > 0) p.own = [this.own_first_seq, this.own_bytes];
    return p;
  }

  reset(): void {
    this.evict_floor = this.ledger = this.dead_below = this.deleted = this.queue = this.routers_applied = undefined;
    this.runsLen = 0;
    this.hasWm = false;
    this.first_ts_ms = 0;
    this.own_first_seq = 0;
    this.own_bytes = 0;
  }
}

/**
 * Reads a section: its head, and each part to `onPart` in order, through one reused cursor. The
 * lines SectionWriter makes for most topics (id, name, config index, times, runs, watermarks) are
 * read byte by byte; any other line (retention, queue or router fields) with JSON.parse. At a
 * million topics, JSON.parse per line (an object, two arrays and a string each) was most of
 * recovery's time and garbage.
 */
export function readSection(buf: Buffer, onPart: (p: PartCursor) => void): SectionHead {
  let nl = buf.indexOf(10);
  if (nl < 0) throw new CorruptionError('snapshot section', 'no head line');
  const head = JSON.parse(buf.toString('utf8', 0, nl)) as SectionHead;
  const configs = head.configs.map((c) => internConfig(c));
  const cur = new PartCursor();
  const line = new LineReader(buf);
  for (let off = nl + 1; off < buf.length; off = nl + 1) {
    nl = buf.indexOf(10, off);
    if (nl < 0) throw new CorruptionError('snapshot section', 'a part line without its end', off);
    cur.reset();
    const c = line.read(off, nl, cur) ? line.config : parsedLine(buf, off, nl, cur);
    const config = configs[c];
    if (config === undefined) throw new CorruptionError('snapshot section', `part ${cur.name} names config ${c} of ${configs.length}`);
    cur.config = config;
    onPart(cur);
  }
  return head;
}

/** Part lines read between two yields to the event loop by sectionTopicIds. */
const IDS_PER_TURN = 64 * 1024;

/**
 * The topic ids of a section's parts, in order, without reading the parts: every part line starts
 * with `{"id":` and the id's digits (SectionWriter writes it first, fast-path line or not). The
 * main thread hands these to the WAL thread, so the WAL scan starts while the workers are still
 * reading their sections (recovery, docs/ARCHITECTURE.md "Many topics"); it yields every IDS_PER_TURN lines, as the
 * snapshot's CRC check does, so /v0/health answers meanwhile. `topics`: the part count, if known.
 */
export async function sectionTopicIds(buf: Buffer, topics = 0): Promise<Float64Array> {
  let ids = new Float64Array(topics);
  let n = 0;
  let nl = buf.indexOf(10);
  if (nl < 0) throw new CorruptionError('snapshot section', 'no head line');
  const line = new LineReader(buf);
  for (let off = nl + 1; off < buf.length; off = nl + 1) {
    nl = buf.indexOf(10, off);
    if (nl < 0) throw new CorruptionError('snapshot section', 'a part line without its end', off);
    const id = line.id(off, nl);
    if (Number.isNaN(id)) throw new CorruptionError('snapshot section', 'a part line does not start with its id', off);
    if (n === ids.length) {
      const grown = new Float64Array(Math.max(1024, ids.length * 2));
      grown.set(ids);
      ids = grown;
    }
    ids[n++] = id;
    if (n % IDS_PER_TURN === 0) await new Promise((r) => setImmediate(r));
  }
  return n === ids.length ? ids : ids.slice(0, n);
}

/** How many part lines a section holds (a line per topic, after the head line): one memchr per line. */
export function sectionPartCount(buf: Buffer): number {
  let n = -1; // the head line
  for (let at = buf.indexOf(10); at >= 0; at = buf.indexOf(10, at + 1)) n++;
  return Math.max(n, 0);
}

/** A part line through JSON.parse into `cur`; returns its config index. */
function parsedLine(buf: Buffer, off: number, end: number, cur: PartCursor): number {
  const raw = JSON.parse(buf.toString('utf8', off, end)) as Omit<SectionPart, 'config' | 'wm'> & { c: number; wm?: number[] };
  if (raw.wm && raw.own) [cur.own_first_seq, cur.own_bytes] = raw.own;
  cur.id = raw.id;
  cur.name = raw.name;
  cur.created_ms = raw.created_ms;
  cur.reserved = raw.reserved;
  if (raw.evict_floor !== undefined) {
    cur.evict_floor = raw.evict_floor;
    cur.ledger = raw.ledger;
    cur.dead_below = raw.dead_below;
    cur.deleted = raw.deleted;
  }
  cur.queue = raw.queue;
  cur.routers_applied = raw.routers_applied;
  if (raw.runs) {
    for (let i = 0; i < raw.runs.length; i++) cur.runs[i] = raw.runs[i]!;
    cur.runsLen = raw.runs.length;
  }
  if (raw.wm) {
    cur.hasWm = true;
    const wm = watermarksOf(raw.wm);
    cur.head = wm.head;
    cur.count = wm.count;
    cur.bytes = wm.bytes;
    cur.earliest = wm.earliest;
    cur.last_ts_ms = wm.last_ts_ms;
    cur.packed_bytes = wm.packed_bytes;
    cur.first_ts_ms = wm.first_ts_ms;
  }
  return raw.c;
}

const lit = (s: string) => Buffer.from(s, 'latin1');
const L_ID = lit('{"id":');
const L_NAME = lit(',"name":"');
const L_C = lit('","c":');
const L_CREATED = lit(',"created_ms":');
const L_RESERVED = lit(',"reserved":');
const L_RUNS = lit(',"runs":[');
const L_WM = lit(',"wm":[');
const L_OWN = lit(',"own":[');

/** Reads the common shape of a part line byte by byte; false when the line has anything else. */
class LineReader {
  private i = 0;
  private end = 0;
  config = 0;
  constructor(private readonly buf: Buffer) {}

  /** The id a part line starts with, or NaN when it does not start with one. */
  id(off: number, end: number): number {
    this.i = off;
    this.end = end;
    return this.lit(L_ID) ? this.int() : NaN;
  }

  read(off: number, end: number, cur: PartCursor): boolean {
    this.i = off;
    this.end = end;
    if (!this.lit(L_ID)) return false;
    cur.id = this.int();
    if (!this.lit(L_NAME)) return false;
    const q = this.buf.indexOf(0x22, this.i);
    if (q < 0 || q >= end) return false;
    const nameAt = this.i;
    this.i = q;
    if (!this.lit(L_C)) return false;
    this.config = this.int();
    if (!this.lit(L_CREATED)) return false;
    cur.created_ms = this.int();
    if (!this.lit(L_RESERVED)) return false;
    cur.reserved = this.int();
    if (this.lit(L_RUNS)) {
      let n = 0;
      for (;;) {
        const v = this.int();
        if (Number.isNaN(v)) return false;
        cur.runs[n++] = v;
        const ch = this.buf[this.i++];
        if (ch === 0x5d) break; // ]
        if (ch !== 0x2c) return false;
      }
      cur.runsLen = n;
    }
    if (this.lit(L_WM)) {
      cur.head = this.int();
      if (this.buf[this.i++] !== 0x2c) return false;
      cur.count = this.int();
      if (this.buf[this.i++] !== 0x2c) return false;
      cur.bytes = this.int();
      if (this.buf[this.i++] !== 0x2c) return false;
      cur.earliest = this.int();
      if (this.buf[this.i++] !== 0x2c) return false;
      cur.last_ts_ms = this.int();
      if (this.buf[this.i++] !== 0x2c) return false;
      cur.packed_bytes = this.int();
      if (this.buf[this.i] === 0x2c) {
        this.i++;
        cur.first_ts_ms = this.int();
        if (Number.isNaN(cur.first_ts_ms)) return false;
      }
      if (this.buf[this.i++] !== 0x5d) return false;
      cur.hasWm = true;
      if (this.lit(L_OWN)) {
        cur.own_first_seq = this.int();
        if (this.buf[this.i++] !== 0x2c) return false;
        cur.own_bytes = this.int();
        if (this.buf[this.i++] !== 0x5d || Number.isNaN(cur.own_first_seq + cur.own_bytes)) return false;
      }
    }
    if (this.i !== end - 1 || this.buf[this.i] !== 0x7d) return false; // }
    if (Number.isNaN(cur.id + this.config + cur.created_ms + cur.reserved + (cur.hasWm ? cur.head + cur.count + cur.bytes + cur.earliest + cur.last_ts_ms + cur.packed_bytes : 0))) return false;
    cur.name = this.buf.toString('latin1', nameAt, q);
    return true;
  }

  private lit(l: Buffer): boolean {
    if (this.i + l.length > this.end) return false;
    for (let k = 0; k < l.length; k++) if (this.buf[this.i + k] !== l[k]) return false;
    this.i += l.length;
    return true;
  }

  /** A non-negative decimal integer, or NaN (no digit). */
  private int(): number {
    let v = 0;
    const start = this.i;
    while (this.i < this.end) {
      const d = this.buf[this.i]! - 0x30;
      if (d < 0 || d > 9) break;
      v = v * 10 + d;
      this.i++;
    }
    return this.i === start ? NaN : v;
  }
}

function watermarksOf(a: number[]): Watermarks {
  const wm: Watermarks = { head: 0, count: 0, bytes: 0, earliest: 0, last_ts_ms: 0, first_ts_ms: 0, last_write_ms: null, last_read_ms: null, last_consumed_ms: null, packed_bytes: 0 };
  WM_FIELDS.forEach((k, i) => (wm[k] = a[i]!));
  if (a.length > WM_FIELDS.length) wm.first_ts_ms = a[WM_FIELDS.length]!;
  return wm;
}
