// A topic worker's section of a v2 snapshot (docs/FORMAT.md "Snapshots"): what one worker's
// checkpoint step writes and what the same worker reads back at recovery, so the main thread only
// concatenates and checks bytes and never parses a million topic parts. NDJSON, one object per line:
//   line 1: {"configs":[...],"packs":{"whole":[name...],"tail":[name,bytes]|null}}: the distinct
//           topic configs the parts name by index, and what the worker's pack files held at the
//           cut (packs wholly covered by the parts' runs, and the pack being written with the
//           bytes written at the cut);
//   then a line per topic: its TopicPart with "c" (index into configs) instead of "config", plus
//           "runs" ([pack no, offset, length, ...]) when it has packed frames and "wm" (its
//           watermarks in WM_FIELDS order, no recency clocks) when it was quiet at the cut (it
//           may recover asleep).
// Parts are written as they come, in chunks: never one string of a million parts (V8 caps a
// string near 512 MB). Runs in topic workers (both directions) and offline tools (decode).
import { internConfig, type TopicConfig } from '../actors/topic/config.js';
import type { Watermarks } from '../actors/topic/watermarks.js';
import type { TopicPart } from './topicPart.js';

/**
 * The order of the watermarks in a part's "wm" array. The recency clocks (last write, read and
 * consumption) are not among them: they are not persisted (RESOLVED G1), so a topic restored
 * asleep has them null, as a loaded one does.
 */
export const WM_FIELDS = ['head', 'count', 'bytes', 'earliest', 'last_ts_ms', 'packed_bytes'] as const satisfies readonly (keyof Watermarks)[];

/** What a worker's packs held at the cut: recovery scans only what came after. */
export interface SectionPacks {
  /** Packs every frame of which was written before the cut (their live frames are in runs). */
  whole: string[];
  /** The pack being written at the cut and the bytes written to it by then, or null. */
  tail: [string, number] | null;
}

/** A topic part as a section holds it. */
export interface SectionPart extends TopicPart {
  /** Physical runs of its packed segment: [pack no, offset, length, ...] in logical order. */
  runs?: number[];
  /** Watermarks of a quiet topic (it may recover asleep). */
  wm?: Watermarks;
}

export interface EncodedSection {
  bytes: Uint8Array;
  topics: number;
}

const CHUNK_CHARS = 1 << 20;

/** Builds a section part by part (a worker's checkpoint step). */
export class SectionWriter {
  private readonly configIdx = new Map<TopicConfig, number>();
  private readonly configs: TopicConfig[] = [];
  private readonly chunks: Buffer[] = [];
  private lines: string[] = [];
  private chars = 0;
  private topics = 0;

  add(part: TopicPart, runs?: readonly number[], wm?: Watermarks): void {
    let c = this.configIdx.get(part.config);
    if (c === undefined) {
      c = this.configs.length;
      this.configs.push(part.config);
      this.configIdx.set(part.config, c);
    }
    // Names are [A-Za-z0-9._:-] (SPEC 2.1): no escaping. The rare fields go through JSON.stringify.
    let line = `{"id":${part.id},"name":"${part.name}","c":${c},"created_ms":${part.created_ms},"reserved":${part.reserved}`;
    if (part.evict_floor !== undefined) line += `,"evict_floor":${part.evict_floor},"ledger":${JSON.stringify(part.ledger ?? [])},"dead_below":${part.dead_below ?? 0},"deleted":${JSON.stringify(part.deleted ?? [])}`;
    if (part.queue !== undefined) line += `,"queue":${JSON.stringify(part.queue)}`;
    if (part.routers_applied !== undefined) line += `,"routers_applied":${JSON.stringify(part.routers_applied)}`;
    if (runs && runs.length > 0) line += `,"runs":[${runs.join(',')}]`;
    if (wm) line += `,"wm":[${WM_FIELDS.map((k) => String(wm[k])).join(',')}]`; // String(null) is 'null'; join leaves it empty
    line += '}\n';
    this.lines.push(line);
    this.chars += line.length;
    this.topics++;
    if (this.chars >= CHUNK_CHARS) this.flushLines();
  }

  private flushLines(): void {
    if (this.lines.length === 0) return;
    this.chunks.push(Buffer.from(this.lines.join(''), 'utf8'));
    this.lines = [];
    this.chars = 0;
  }

  /** The section's bytes (one buffer of its own, so it can be transferred) and its topic count. */
  finish(packs: SectionPacks): EncodedSection {
    this.flushLines();
    const head = Buffer.from(`${JSON.stringify({ configs: this.configs, packs })}\n`, 'utf8');
    const total = head.length + this.chunks.reduce((n, c) => n + c.length, 0);
    const out = new Uint8Array(total);
    out.set(head, 0);
    let at = head.length;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return { bytes: out, topics: this.topics };
  }
}

/** A section's first line. */
export interface SectionHead {
  configs: TopicConfig[];
  packs: SectionPacks;
}

/** Reads a section: its head, and each part (config resolved and interned) to `onPart`, in order. */
export function readSection(buf: Buffer, onPart: (p: SectionPart) => void): SectionHead {
  let nl = buf.indexOf(10);
  if (nl < 0) throw new Error('snapshot section without a head line');
  const head = JSON.parse(buf.toString('utf8', 0, nl)) as SectionHead;
  const configs = head.configs.map((c) => internConfig(c));
  for (let off = nl + 1; off < buf.length; off = nl + 1) {
    nl = buf.indexOf(10, off);
    if (nl < 0) throw new Error(`snapshot section: a part line without its end at ${off}`);
    const raw = JSON.parse(buf.toString('utf8', off, nl)) as Omit<SectionPart, 'config' | 'wm'> & { c: number; wm?: number[] };
    const config = configs[raw.c];
    if (config === undefined) throw new Error(`snapshot section: part ${raw.name} names config ${raw.c} of ${configs.length}`);
    const { c: _c, wm, ...rest } = raw;
    const part: SectionPart = { ...rest, config };
    if (wm) part.wm = watermarksOf(wm);
    onPart(part);
  }
  return head;
}

function watermarksOf(a: number[]): Watermarks {
  const wm: Watermarks = { head: 0, count: 0, bytes: 0, earliest: 0, last_ts_ms: 0, last_write_ms: null, last_read_ms: null, last_consumed_ms: null, packed_bytes: 0 };
  WM_FIELDS.forEach((k, i) => (wm[k] = a[i]!));
  return wm;
}
