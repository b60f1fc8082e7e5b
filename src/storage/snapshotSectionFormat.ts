// A topic worker's section of a v2 snapshot (docs/FORMAT.md "Snapshots"): what one worker's
// checkpoint step writes and what the same worker reads back at recovery, so the main thread only
// concatenates and checks bytes and never parses a million topic parts. NDJSON, one object per line:
//   line 1: {"configs":[...],"packs":{"whole":[name...],"tail":[name,bytes,fsynced]|null}}: the
//           topic configs the parts name by index (some may be named by no part), and what the
//           worker's pack files held at the cut (packs wholly covered by the parts' runs, and the
//           pack being written with the bytes written at the cut and how many were fsynced);
//   then a line per topic: its TopicPart with "c" (index into configs) instead of "config", plus
//           "runs" ([pack no, offset, length, ...]) when it has packed frames and "wm" (its
//           watermarks in WM_FIELDS order, no recency clocks, then first_ts_ms for a topic with
//           TTL or a queue) when it was quiet at the cut (it may recover asleep), then "own":
//           [first seq, size] of its one own segment file when such a topic has one, and for any
//           other topic [first seq, bytes fsynced at the cut] of its newest own segment file, then
//           for such a topic "files": [first seq, bytes, ...] of the own files that must be there.
// This file owns the format's shared pieces: the watermark order, the types of a part and of the
// head line, and the key prefixes of a part line, which the writer writes and the fast line
// reader matches. The writer is snapshotSectionWriter.ts, the readers snapshotSectionReader.ts.
// Runs wherever they run (topic workers, the main thread, offline tools).
import type { TopicConfig } from '../protocol/topicConfig.js';
import type { Watermarks } from '../format/watermarks.js';
import type { TopicPart } from '../format/topicPart.js';
import { parsePackFileName } from '../format/layout.js';

/**
 * The order of the watermarks in a part's "wm" array. The recency clocks (last write, read and
 * consumption) are not among them: they are not persisted (docs/API.md "GET /v0/topics/:topic"), so a topic restored
 * asleep has them null, as a loaded one does.
 */
export const WM_FIELDS = [
  'head',
  'count',
  'bytes',
  'earliest',
  'last_ts_ms',
  'packed_bytes',
] as const satisfies readonly (keyof Watermarks)[];

/**
 * The watermarks a section holds of a quiet topic: WM_FIELDS, and first_ts_ms (written after
 * them for a topic with TTL or a queue only; read as 0 when absent, which makes recovery load a
 * TTL topic whose expiry may be under way instead of restoring it asleep: Dormancy.restore).
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
  /**
   * The pack being written at the cut, the bytes written to it by then, and how many of them its
   * flush fsynced (recovery never cuts below those, trusts runs only up to them and scans the
   * pack from there: runsClipper); or null. Sections from before have no third number (the
   * second stands in for it).
   */
  tail: [string, number] | [string, number, number] | null;
}

/** What a section needs of a sleeping topic's table row (topicThread/dormantTable.ts's DormantRow). */
export interface SleepingRow extends SectionWatermarks {
  readonly id: number;
  readonly name: string;
  readonly config: TopicConfig;
  readonly created_ms: number;
  readonly retention: Partial<TopicPart> | undefined;
  readonly queue: TopicPart['queue'];
}

/** Topics whose watermarks carry first_ts_ms: with TTL (when expiry begins), queues (the oldest ready job's age). */
export const withFirstTs = (c: TopicConfig) => c.ttl_ms > 0 || c.type === 'queue';

/** A topic part as a section holds it. */
export interface SectionPart extends TopicPart {
  /** Physical runs of its packed segment: [pack no, offset, length, ...] in logical order. */
  runs?: number[];
  /** Watermarks of a quiet topic (it may recover asleep). */
  wm?: Watermarks;
  /**
   * A quiet topic's own segment file: [first seq, size]; another topic's newest own segment file:
   * [first seq, bytes of it fsynced at the cut] (docs/FORMAT.md "Snapshots").
   */
  own?: [number, number];
  /**
   * A busy topic's own segment files that must be there, [first seq, bytes, ...]: each with at
   * least those bytes of whole frames (0: any, a compacted file) (docs/FORMAT.md "Snapshots").
   */
  files?: number[];
}

/**
 * The own segment files a part says must be there, [first seq, bytes, ...] (docs/FORMAT.md
 * "Snapshots"): a busy topic's `files`, or a quiet topic's one file (`own`, whole). Recovery
 * refuses a start without them, and `spool verify` reports it.
 */
export function filesThatMustExist(part: SectionPart): readonly number[] | undefined {
  return part.files ?? (part.wm && part.own ? part.own : undefined);
}

/**
 * The runs a reader may trust of the sections whose first lines record `packs` (docs/FORMAT.md
 * "Snapshots"): a checkpoint takes the runs after its flush, so a topic appended meanwhile names
 * bytes written to the pack being written after its fsync began (frames after the cut, which the
 * WAL holds), and a power loss may have taken or garbled them. A run counts in a pack some
 * section lists `whole`, and in a pack being written up to the bytes its section records as
 * fsynced (up to its length at the cut in a section without them); the first run that does not
 * is cut there, or dropped, with every run after it (a topic's runs go in pack order). Returns
 * a function that clips `runs[0, len)` in place and returns the numbers left; what it drops comes
 * back from the scan of the pack bytes after the cut and from the WAL replay.
 */
export function runsClipper(packs: readonly SectionPacks[]): (runs: number[], len: number) => number {
  const whole = new Set<number>();
  /** Per pack being written at the cut, by number: the end of the bytes its runs may name. */
  const trusted = new Map<number, number>();
  for (const p of packs) {
    for (const name of p.whole) {
      const no = parsePackFileName(name)?.no;
      if (no !== undefined) whole.add(no);
    }
    const no = p.tail ? parsePackFileName(p.tail[0])?.no : undefined;
    if (no !== undefined) trusted.set(no, p.tail![2] ?? p.tail![1]);
  }
  return (runs, len) => {
    for (let i = 0; i + 2 < len; i += 3) {
      const no = runs[i]!;
      if (whole.has(no)) continue;
      const end = trusted.get(no) ?? 0;
      const off = runs[i + 1]!;
      if (off + runs[i + 2]! <= end) continue;
      if (off >= end) return i;
      runs[i + 2] = end - off;
      return i + 3;
    }
    return len;
  };
}

/** A section's first line. */
export interface SectionHead {
  configs: TopicConfig[];
  packs: SectionPacks;
}

// The keys of a part line, in the order SectionWriter writes them, each with the punctuation
// around it (names are written unescaped between quotes: docs/API.md "Conventions").
export const KEY_ID = '{"id":';
export const KEY_NAME = ',"name":"';
export const KEY_C = '","c":';
export const KEY_CREATED = ',"created_ms":';
export const KEY_RESERVED = ',"reserved":';
export const KEY_RUNS = ',"runs":[';
export const KEY_WM = ',"wm":[';
export const KEY_OWN = ',"own":[';
export const KEY_FILES = ',"files":[';
