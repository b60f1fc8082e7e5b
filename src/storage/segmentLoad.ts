// Loading a topic's segment files at startup (docs/ARCHITECTURE.md "Recovery order" step 3), in its topic worker. Every
// frame is CRC-checked. A torn tail of the newest segment is truncated: the WAL still holds
// everything since the checkpoint, so replay rewrites it; a last frame missing only its padding
// gets it back. Damage inside an older (sealed) segment is an error, never skipped, and so is
// damage inside the bytes of the newest one that the snapshot records as durable (its `own`
// size: fsynced before the snapshot was written, and the WAL before its cut may be gone), or in
// a compacted file (written whole and fsynced before its rename): a torn tail lies only past
// them, and nothing below them is ever cut.
import path from 'node:path';
import type { Fs } from './fs.js';
import { parseCompactTempName, parseSegmentFileName, parseTopicDirName, topicDir, topicsDir } from '../format/layout.js';
import { probeFrame, FrameView } from '../format/frame.js';
import { FrameType } from '../format/constants.js';
import { walkSegment, type Relocation } from './compactFrames.js';
import { CorruptionError } from '../core/corruption.js';
import { invariant } from '../core/invariant.js';

export interface LoadedSegment {
  firstSeq: number;
  /** Valid size after any torn-tail truncation (a compacted file: the original bytes its last extent reaches). */
  size: number;
  buf: Buffer;
  /** A compacted file (docs/FORMAT.md "Compacted segments"): where its extents' original bytes are now. */
  relocation?: Relocation;
}

/** An entry of topics/: a topic directory's name and its id, or anything else (id undefined). */
export interface TopicDirEntry {
  name: string;
  id: number | undefined;
}

/** The entries of topics/ (none when it is missing). */
export async function listTopicDirs(fsx: Fs, dataDir: string): Promise<TopicDirEntry[]> {
  let names: string[];
  try {
    names = await fsx.readdir(topicsDir(dataDir));
  } catch {
    return [];
  }
  return names.map((name) => ({ name, id: parseTopicDirName(name) }));
}

/** A topic's segment files, oldest first; each is read (and checked) on its own. */
export async function listSegments(
  fsx: Fs,
  dataDir: string,
  topicId: number,
  leftovers?: string[],
): Promise<{ firstSeq: number; file: string }[]> {
  const dir = topicDir(dataDir, topicId);
  let names: string[];
  try {
    names = await fsx.readdir(dir);
  } catch {
    return [];
  }
  // A compaction's copy that was never renamed over its segment (a crash before the swap).
  if (leftovers) for (const n of names) if (parseCompactTempName(n) !== undefined) leftovers.push(path.join(dir, n));
  return names
    .map((n) => ({ firstSeq: parseSegmentFileName(n), file: path.join(dir, n) }))
    .filter((s): s is { firstSeq: number; file: string } => s.firstSeq !== undefined)
    .sort((a, b) => a.firstSeq - b.firstSeq);
}

/**
 * Reads one segment, CRC-checking every frame; the newest may have a torn tail (truncated), but
 * only past `durableBytes`: what the snapshot records of the file (docs/FORMAT.md "Snapshots",
 * `own`), bytes that were durable before its cut. Damage below them is a CorruptionError.
 */
export async function readSegment(
  fsx: Fs,
  topicId: number,
  seg: { firstSeq: number; file: string },
  isNewest: boolean,
  durableBytes = 0,
): Promise<LoadedSegment> {
  const buf = await fsx.readFile(seg.file);
  let off = 0;
  while (off < buf.length) {
    const p = probeFrame(buf, off, buf.length);
    if (!p.ok) break;
    if ((p.frame.type !== FrameType.APPEND && p.frame.type !== FrameType.EXTENT) || p.frame.topicId !== topicId)
      throw new CorruptionError(seg.file, 'unexpected frame', off);
    off += p.frame.size;
  }
  // Compacted (its first frame an EXTENT): written whole and fsynced before it was renamed over
  // the segment, and never written to again.
  const compacted = off > 0 && buf.readUInt8(8) === FrameType.EXTENT;
  if (off === buf.length) {
    if (compacted) {
      const relocation = walkSegment(buf, () => undefined)!;
      return { firstSeq: seg.firstSeq, size: relocation.origEnd, buf, relocation };
    }
    if (off >= durableBytes) return { firstSeq: seg.firstSeq, size: off, buf };
    // Whole frames, but fewer bytes than were durable at the cut (a file cut short): lost, not torn.
    throw new CorruptionError(seg.file, `its whole frames end below the ${durableBytes} bytes the snapshot records as durable`, off);
  }
  if (!isNewest) throw new CorruptionError(seg.file, 'damaged frame in a sealed segment', off);
  if (compacted) throw new CorruptionError(seg.file, 'damaged frame in a compacted segment (written whole: not a torn tail)', off);
  if (off < durableBytes)
    throw new CorruptionError(
      seg.file,
      `damaged frame below the ${durableBytes} bytes the snapshot records as durable (not a torn tail: nothing is cut)`,
      off,
    );
  // Shorter: a torn tail, cut off. Longer: the last frame is whole but the crash cut off its
  // zero padding (not covered by the CRC); the index counts frames with their padding, so it
  // is restored (extending a file adds zeros), or a cold read of that frame would come up short.
  await fsx.truncate(seg.file, off);
  return {
    firstSeq: seg.firstSeq,
    size: off,
    buf: off < buf.length ? buf.subarray(0, off) : Buffer.concat([buf, Buffer.alloc(off - buf.length)]),
  };
}

/** Walks the frames of a loaded, already CRC-checked segment or pack (readSegment, readPack). */
export function forEachFrame(buf: Buffer, cb: (f: FrameView, off: number) => void): void {
  let off = 0;
  while (off < buf.length) {
    const p = probeFrame(buf, off, buf.length, false);
    invariant(p.ok, `frame vanished at ${off} of a checked segment or pack`);
    cb(p.frame, off);
    off += p.frame.size;
  }
}
