// Loading a topic's segment files at startup (DESIGN 2.7 step 3), in its topic worker. Every
// frame is CRC-checked. A torn tail of the newest segment is truncated: the WAL still holds
// everything since the checkpoint, so replay rewrites it. Damage inside an older (sealed)
// segment is an error, never skipped.
import fsp from 'node:fs/promises';
import path from 'node:path';
import { parseSegmentFileName, topicDir } from './layout.js';
import { probeFrame, FrameView } from '../wal/frame.js';
import { FrameType } from '../wal/format.js';

export class SegmentCorruptionError extends Error {}

export interface LoadedSegment {
  firstSeq: number;
  /** Valid size after any torn-tail truncation. */
  size: number;
  buf: Buffer;
}

export async function loadSegments(dataDir: string, topicId: number): Promise<LoadedSegment[]> {
  const dir = topicDir(dataDir, topicId);
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return [];
  }
  const firsts = names
    .map(parseSegmentFileName)
    .filter((n): n is number => n !== undefined)
    .sort((a, b) => a - b);
  const out: LoadedSegment[] = [];
  for (let i = 0; i < firsts.length; i++) {
    const file = path.join(dir, names.find((n) => parseSegmentFileName(n) === firsts[i])!);
    const buf = await fsp.readFile(file);
    let off = 0;
    while (off < buf.length) {
      const p = probeFrame(buf, off, buf.length);
      if (!p.ok) break;
      if (p.frame.type !== FrameType.APPEND || p.frame.topicId !== topicId) throw new SegmentCorruptionError(`${file}: unexpected frame at ${off}`);
      off += p.frame.size;
    }
    if (off < buf.length) {
      if (i < firsts.length - 1) throw new SegmentCorruptionError(`${file}: damaged frame at offset ${off} in a sealed segment`);
      await fsp.truncate(file, off);
    }
    out.push({ firstSeq: firsts[i]!, size: off, buf: buf.subarray(0, off) });
  }
  return out;
}

/** Walks the frames of a loaded (already CRC-checked) segment. */
export function forEachFrame(buf: Buffer, cb: (f: FrameView, off: number) => void): void {
  let off = 0;
  while (off < buf.length) {
    const p = probeFrame(buf, off, buf.length, false);
    if (!p.ok) throw new Error(`segment frame vanished at ${off}`);
    cb(p.frame, off);
    off += p.frame.size;
  }
}
