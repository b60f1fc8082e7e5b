// PackMap: where each small topic's packed segment lives in the pack files, and how many live
// bytes each pack holds (docs/FORMAT.md "Pack files"). Pure bookkeeping, no I/O; one per topic
// worker, owned by its PackStore (writes) and filled by the pack scan at recovery.
// A topic's packed segment is one logical byte range [0, size): its frames in the order written,
// as the actor placed them. Physically it is a short list of runs (pack, offset, length): frames
// written back to back into the same pack merge into one run, so a small topic costs one Map
// entry and a flat number array of 1 + 3 × runs entries, never an object per frame.
// Invariants: a pack's `live` is the sum of the runs of live topics in it; a run is added only
// for a frame written whole; a released topic has no runs.
import assert from 'node:assert/strict';
import { packFileName, parsePackFileName, type PackName } from './layout.js';

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

export class PackMap {
  private readonly packs: (PackInfo | undefined)[] = [];
  private readonly byName = new Map<string, PackInfo>();
  private readonly topics = new Map<number, Runs>();

  /** The pack of that name, registered on first use. */
  register(p: PackName): PackInfo {
    const name = packFileName(p);
    let info = this.byName.get(name);
    if (!info) {
      info = { ...p, idx: this.packs.length, name, live: 0 };
      this.packs.push(info);
      this.byName.set(name, info);
    }
    return info;
  }

  pack(idx: number): PackInfo {
    const p = this.packs[idx];
    assert.ok(p, `pack ${idx} is not registered`);
    return p;
  }

  /** Every registered pack (not forgotten). */
  all(): PackInfo[] {
    return this.packs.filter((p): p is PackInfo => p !== undefined);
  }

  has(topicId: number): boolean {
    return this.topics.has(topicId);
  }

  /**
   * The topic's runs as [pack no, offset, length, ...] into `out` from 0 (a snapshot keeps them:
   * pack numbers outlive indexes); returns how many numbers, 0 when it has none.
   */
  runsInto(topicId: number, out: number[]): number {
    const runs = this.topics.get(topicId);
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
    return this.topics.get(topicId)?.[0] ?? 0;
  }

  /** A frame of `len` bytes, written whole at `offset` of pack `idx`, ends the topic's packed segment. */
  add(topicId: number, idx: number, offset: number, len: number): void {
    const p = this.pack(idx);
    let runs = this.topics.get(topicId);
    if (!runs) this.topics.set(topicId, (runs = [0]));
    const n = runs.length;
    if (n > 1 && runs[n - 3] === idx && runs[n - 2]! + runs[n - 1]! === offset) runs[n - 1]! += len;
    else runs.push(idx, offset, len);
    runs[0]! += len;
    p.live += len;
  }

  /** The physical pieces of logical bytes [offset, offset + len) of a topic's packed segment. */
  pieces(topicId: number, offset: number, len: number): PackPiece[] {
    const runs = this.topics.get(topicId);
    if (!runs || offset + len > runs[0]!) throw new Error(`packed bytes [${offset}, ${offset + len}) of topic ${topicId.toString(16)} are not in any pack`);
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
    const runs = this.topics.get(topicId);
    if (!runs) return 0;
    this.topics.delete(topicId);
    for (let i = 1; i < runs.length; i += 3) {
      const p = this.pack(runs[i]!);
      p.live -= runs[i + 2]!;
      assert.ok(p.live >= 0, `pack ${p.name}: live bytes went negative`);
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
    return this.topics.size;
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
