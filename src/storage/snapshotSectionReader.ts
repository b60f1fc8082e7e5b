// The readers of a topic worker's snapshot section (format: snapshotSectionFormat.ts,
// docs/FORMAT.md "Snapshots"): readSection walks the parts through one reused PartCursor (a topic
// worker at recovery, the main thread and offline tools reading a snapshot whole);
// sectionTopicIds reads only the ids (the main thread, so the WAL scan starts early);
// sectionPartCount counts the lines. The common part line is read byte by byte (LineReader),
// any other through JSON.parse.
import { internConfig, type TopicConfig } from '../protocol/topicConfig.js';
import type { Watermarks } from '../format/watermarks.js';
import type { TopicPart } from '../format/topicPart.js';
import { CorruptionError } from '../core/corruption.js';
import {
  KEY_C,
  KEY_CREATED,
  KEY_ID,
  KEY_NAME,
  KEY_OWN,
  KEY_FILES,
  KEY_RESERVED,
  KEY_RUNS,
  KEY_WM,
  WM_FIELDS,
  type SectionHead,
  type SectionPart,
} from './snapshotSectionFormat.js';
import { grownTo } from '../core/columns/grow.js';

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
  trim_markers: TopicPart['trim_markers'];
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
  /**
   * "own": a quiet topic's own segment file (first seq and size), or a busy topic's newest one
   * (first seq and the bytes of it fsynced at the cut); 0 when none.
   */
  own_first_seq = 0;
  own_bytes = 0;
  /** "files": a busy topic's own segment files that must be there, [first seq, bytes, ...]. */
  files: number[] | undefined;
  readonly last_write_ms = null;
  readonly last_read_ms = null;
  readonly last_consumed_ms = null;

  /** The retention fields, when the part has them. */
  get retention(): Partial<TopicPart> | undefined {
    return this.evict_floor === undefined
      ? undefined
      : { evict_floor: this.evict_floor, ledger: this.ledger, dead_below: this.dead_below, deleted: this.deleted };
  }

  /** A standalone copy of the part. */
  part(): SectionPart {
    const p: SectionPart = { id: this.id, name: this.name, config: this.config, created_ms: this.created_ms, reserved: this.reserved };
    if (this.evict_floor !== undefined) Object.assign(p, this.retention);
    if (this.queue !== undefined) p.queue = this.queue;
    if (this.routers_applied !== undefined) p.routers_applied = this.routers_applied;
    if (this.trim_markers !== undefined) p.trim_markers = this.trim_markers;
    if (this.runsLen > 0) p.runs = this.runs.slice(0, this.runsLen);
    if (this.hasWm)
      p.wm = {
        head: this.head,
        count: this.count,
        bytes: this.bytes,
        earliest: this.earliest,
        last_ts_ms: this.last_ts_ms,
        first_ts_ms: this.first_ts_ms,
        last_write_ms: null,
        last_read_ms: null,
        last_consumed_ms: null,
        packed_bytes: this.packed_bytes,
      };
    if (this.own_first_seq > 0) p.own = [this.own_first_seq, this.own_bytes];
    if (this.files !== undefined) p.files = this.files;
    return p;
  }

  reset(): void {
    this.evict_floor = this.ledger = this.dead_below = this.deleted = this.queue = this.routers_applied = this.trim_markers = undefined;
    this.runsLen = 0;
    this.hasWm = false;
    this.first_ts_ms = 0;
    this.own_first_seq = 0;
    this.own_bytes = 0;
    this.files = undefined;
  }
}

/**
 * Reads a section: its head (to `onHead` first, when given), and each part to `onPart` in order,
 * through one reused cursor. Runs come as written: a reader that uses them clips them first
 * (runsClipper). The lines SectionWriter makes for most topics (id, name, config index, times,
 * runs, watermarks) are read byte by byte; any other line (retention, queue or router fields)
 * with JSON.parse. At a million topics, JSON.parse per line (an object, two arrays and a string
 * each) was most of recovery's time and garbage.
 */
export function readSection(buf: Buffer, onPart: (p: PartCursor) => void, onHead?: (head: SectionHead) => void): SectionHead {
  let nl = buf.indexOf(10);
  if (nl < 0) throw new CorruptionError('snapshot section', 'no head line');
  const head = JSON.parse(buf.toString('utf8', 0, nl)) as SectionHead;
  onHead?.(head);
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
    if (n === ids.length) ids = grownTo(ids, Math.max(1024, n + 1));
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
  if (raw.own) [cur.own_first_seq, cur.own_bytes] = raw.own;
  if (Array.isArray(raw.files)) cur.files = raw.files;
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
  cur.trim_markers = raw.trim_markers;
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
const L_ID = lit(KEY_ID);
const L_NAME = lit(KEY_NAME);
const L_C = lit(KEY_C);
const L_CREATED = lit(KEY_CREATED);
const L_RESERVED = lit(KEY_RESERVED);
const L_RUNS = lit(KEY_RUNS);
const L_WM = lit(KEY_WM);
const L_OWN = lit(KEY_OWN);
const L_FILES = lit(KEY_FILES);

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
    if (this.lit(L_RUNS) && !this.runs(cur)) return false;
    if (this.lit(L_WM) && !this.watermarks(cur)) return false;
    if (this.lit(L_OWN) && !this.own(cur)) return false;
    if (this.lit(L_FILES) && !this.files(cur)) return false;
    if (this.i !== end - 1 || this.buf[this.i] !== 0x7d) return false; // }
    if (
      Number.isNaN(
        cur.id +
          this.config +
          cur.created_ms +
          cur.reserved +
          (cur.hasWm ? cur.head + cur.count + cur.bytes + cur.earliest + cur.last_ts_ms + cur.packed_bytes : 0),
      )
    )
      return false;
    cur.name = this.buf.toString('latin1', nameAt, q);
    return true;
  }

  /** The numbers of "runs" up to its "]" (the key read). */
  private runs(cur: PartCursor): boolean {
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
    return true;
  }

  /** The numbers of "wm" up to its "]" (the key read). */
  private watermarks(cur: PartCursor): boolean {
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
    return true;
  }

  /** The numbers of "files" up to its "]" (the key read). */
  private files(cur: PartCursor): boolean {
    const files: number[] = [];
    for (;;) {
      const v = this.int();
      if (Number.isNaN(v)) return false;
      files.push(v);
      const ch = this.buf[this.i++];
      if (ch === 0x5d) break; // ]
      if (ch !== 0x2c) return false;
    }
    cur.files = files;
    return true;
  }

  /** The two numbers of "own" up to its "]" (the key read). */
  private own(cur: PartCursor): boolean {
    cur.own_first_seq = this.int();
    if (this.buf[this.i++] !== 0x2c) return false;
    cur.own_bytes = this.int();
    return this.buf[this.i++] === 0x5d && !Number.isNaN(cur.own_first_seq + cur.own_bytes);
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
  const wm: Watermarks = {
    head: 0,
    count: 0,
    bytes: 0,
    earliest: 0,
    last_ts_ms: 0,
    first_ts_ms: 0,
    last_write_ms: null,
    last_read_ms: null,
    last_consumed_ms: null,
    packed_bytes: 0,
  };
  WM_FIELDS.forEach((k, i) => (wm[k] = a[i]!));
  if (a.length > WM_FIELDS.length) wm.first_ts_ms = a[WM_FIELDS.length]!;
  return wm;
}
