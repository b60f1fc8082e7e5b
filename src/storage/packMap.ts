// PackMap: where each small topic's packed segment lives in the pack files, and how many live
// bytes each pack holds (docs/FORMAT.md "Pack files"). Pure bookkeeping, no I/O; one per topic
// worker, owned by its PackStore (writes) and filled by the pack scan at recovery.
// A topic's packed segment is one logical byte range [0, size): its frames in the order written,
// as the actor placed them. Physically it is a short list of runs (pack, offset, length): frames
// written back to back into the same pack merge into one run, so a small topic costs one Map
// entry and a 4-number row of a shared pool (one run), or a flat number array of 1 + 3 × runs
// entries (more runs); never an object per frame. The slots are an IdIndex (paged typed arrays),
// not a Map: recovery fills one per topic.
// Invariants: a pack's `live` is the sum of the runs of live topics in it; a run is added only
// for a frame written whole; a released topic has no runs.
import assert from 'node:assert/strict';
import { packFileName, parsePackFileName, type PackName } from '../format/layout.js';
import { IdIndex } from '../core/columns/idIndex.js';
import { InvariantError } from '../core/invariant.js';
import { grownTo } from '../core/columns/grow.js';

export interface PackInfo extends PackName {
  /** Index in this map (extents name packs by it). */
  readonly idx: number;
  readonly name: string;
  /** Bytes of frames of live topics' packed segments in this pack. */
  live: number;
}

/** A physical piece of a logical range. */
export interface PackPiece {
  idx: number;
  offset: number;
  len: number;
}

/** Flat per-topic entry: [size, idx0, off0, len0, idx1, off1, len1, ...]. */
type Runs = number[];

/** Numbers per single-run row: size, idx, offset, length (a Runs of one run). */
const ROW = 4;

export class PackMap {
  private readonly packs: (PackInfo | undefined)[] = [];
  private readonly byName = new Map<string, PackInfo>();
  /**
   * Per topic: a row of `one` (>= 0) while its packed segment is a single run, the common case
   * (a small topic written in one request, or back to back), else ~index into `many`. A million
   * small topics as a million arrays cost ~50 bytes each and the GC's time (docs/ARCHITECTURE.md "Many topics").
   */
  private readonly slots = new IdIndex();
  private one = new Float64Array(1024 * ROW);
  private oneRows = 0;
  private readonly oneFree: number[] = [];
  private readonly many: (Runs | undefined)[] = [];
  private readonly manyFree: number[] = [];
  /** A single-run topic's runs, filled by runsOf (read at once, never kept). */
  private readonly scratch: Runs = [0, 0, 0, 0];

  /** The pack of that name, registered on first use. */
  register(p: PackName): PackInfo {
    const name = packFileName(p);
    let info = this.byName.get(name);
    if (!info) {
      // Field by field, not a spread: every PackInfo gets one shape whatever object `p` is (a
      // spread made a new shape per source, and each new pack deoptimized PackStore.writeSome).
      info = { no: p.no, writer: p.writer, workers: p.workers, idx: this.packs.length, name, live: 0 };
      this.packs.push(info);
      this.byName.set(name, info);
    }
    return info;
  }

  pack(idx: number): PackInfo {
    const p = this.packs[idx];
    // Not assert.ok(p, `...`): the message would be built on every call (once per frame added).
    if (!p) assert.fail(`pack ${idx} is not registered`);
    return p;
  }

  /** Every registered pack (not forgotten). */
  all(): PackInfo[] {
    return this.packs.filter((p): p is PackInfo => p !== undefined);
  }

  has(topicId: number): boolean {
    return this.slots.has(topicId);
  }

  /** The topic's runs as a flat Runs (a single run's in a scratch array: use it at once), or undefined. */
  private runsOf(topicId: number): Runs | undefined {
    const s = this.slots.get(topicId);
    if (s === undefined) return undefined;
    if (s < 0) return this.many[~s]!;
    const o = s * ROW;
    const r = this.scratch;
    r[0] = this.one[o]!;
    r[1] = this.one[o + 1]!;
    r[2] = this.one[o + 2]!;
    r[3] = this.one[o + 3]!;
    return r;
  }

  /**
   * The topic's runs as [pack no, offset, length, ...] into `out` from 0 (a snapshot keeps them:
   * pack numbers outlive indexes); returns how many numbers, 0 when it has none.
   */
  runsInto(topicId: number, out: number[]): number {
    const runs = this.runsOf(topicId);
    if (!runs) return 0;
    for (let i = 1; i < runs.length; i += 3) {
      out[i - 1] = this.packs[runs[i]!]!.no;
      out[i] = runs[i + 1]!;
      out[i + 1] = runs[i + 2]!;
    }
    return runs.length - 1;
  }

  /** Logical size of the topic's packed segment (0 when it has none). */
  size(topicId: number): number {
    const s = this.slots.get(topicId);
    if (s === undefined) return 0;
    return s >= 0 ? this.one[s * ROW]! : this.many[~s]![0]!;
  }

  /** A frame of `len` bytes, written whole at `offset` of pack `idx`, ends the topic's packed segment. */
  add(topicId: number, idx: number, offset: number, len: number): void {
    const p = this.pack(idx);
    p.live += len;
    const s = this.slots.get(topicId);
    if (s === undefined) {
      const row = this.oneFree.pop() ?? this.newRow();
      const o = row * ROW;
      this.one[o] = len;
      this.one[o + 1] = idx;
      this.one[o + 2] = offset;
      this.one[o + 3] = len;
      this.slots.set(topicId, row);
      return;
    }
    if (s >= 0) {
      const o = s * ROW;
      const one = this.one;
      if (one[o + 1] === idx && one[o + 2]! + one[o + 3]! === offset) {
        one[o + 3]! += len;
        one[o]! += len;
        return;
      }
      // A second run: the topic moves to an array of its own.
      const runs = [one[o]! + len, one[o + 1]!, one[o + 2]!, one[o + 3]!, idx, offset, len];
      this.oneFree.push(s);
      const k = this.manyFree.pop() ?? this.many.length;
      this.many[k] = runs;
      this.slots.set(topicId, ~k);
      return;
    }
    const runs = this.many[~s]!;
    const n = runs.length;
    if (runs[n - 3] === idx && runs[n - 2]! + runs[n - 1]! === offset) runs[n - 1]! += len;
    else runs.push(idx, offset, len);
    runs[0]! += len;
  }

  /**
   * Makes room for `more` single-run topics beyond those placed, at once (recovery knows how many
   * topics its section holds): one allocation instead of a doubling and a copy per power of two.
   */
  reserve(more: number): void {
    const words = (this.oneRows + more) * ROW;
    if (words <= this.one.length) return;
    const grown = new Float64Array(words);
    grown.set(this.one.subarray(0, this.oneRows * ROW));
    this.one = grown;
  }

  private newRow(): number {
    this.one = grownTo(this.one, (this.oneRows + 1) * ROW);
    return this.oneRows++;
  }

  /** The physical pieces of logical bytes [offset, offset + len) of a topic's packed segment. */
  pieces(topicId: number, offset: number, len: number): PackPiece[] {
    const runs = this.runsOf(topicId);
    if (!runs || offset + len > runs[0]!)
      throw new InvariantError(`packed bytes [${offset}, ${offset + len}) of topic ${topicId.toString(16)} are not in any pack`);
    const out: PackPiece[] = [];
    let at = 0;
    for (let i = 1; i < runs.length && len > 0; i += 3) {
      const runLen = runs[i + 2]!;
      if (offset < at + runLen) {
        const skip = offset - at;
        const take = Math.min(runLen - skip, len);
        out.push({ idx: runs[i]!, offset: runs[i + 1]! + skip, len: take });
        offset += take;
        len -= take;
      }
      at += runLen;
    }
    return out;
  }

  /** Forgets a topic's packed segment (deleted, or wholly dead); its bytes stop counting as live. */
  release(topicId: number): number {
    const runs = this.runsOf(topicId);
    if (!runs) return 0;
    const s = this.slots.get(topicId)!;
    this.slots.delete(topicId);
    if (s >= 0) this.oneFree.push(s);
    else {
      this.many[~s] = undefined;
      this.manyFree.push(~s);
    }
    for (let i = 1; i < runs.length; i += 3) {
      const p = this.pack(runs[i]!);
      p.live -= runs[i + 2]!;
      if (p.live < 0) assert.fail(`pack ${p.name}: live bytes went negative`);
    }
    return runs[0]!;
  }

  /** Packs no live topic has bytes in, except `writing` (the one being appended to). */
  dead(writing: number | undefined): PackInfo[] {
    return this.all().filter((p) => p.live === 0 && p.idx !== writing);
  }

  /** A pack was unlinked: forget it (it must hold nothing live). */
  forget(name: string): PackInfo | undefined {
    const p = this.byName.get(name);
    if (!p) return undefined;
    assert.equal(p.live, 0, `pack ${name} still holds live bytes`);
    this.byName.delete(name);
    this.packs[p.idx] = undefined;
    return p;
  }

  /** Topics with a packed segment (for tests and metrics). */
  get topicCount(): number {
    return this.slots.size;
  }
}

/**
 * Which dead packs a checkpoint may unlink, from every worker's report (`reports[i]`: the packs
 * worker i holds nothing live in). A pack written under the current worker count holds only
 * topics of its writer, so its writer's word is enough; a pack written under another count may
 * hold topics now on any worker, so every worker must report it (each one scanned it).
 */
export function packsToUnlink(reports: readonly (readonly string[])[], workers: number): string[] {
  const votes = new Map<string, number>();
  for (const r of reports) for (const name of r) votes.set(name, (votes.get(name) ?? 0) + 1);
  const out: string[] = [];
  for (const [name, n] of votes) {
    const p = parsePackFileName(name);
    if (!p) continue;
    if (p.workers === workers ? reports[p.writer]?.includes(name) : n === reports.length) out.push(name);
  }
  return out.sort();
}
