// Reading pack files whole (recovery's scan, `spool verify`): every frame CRC-checked, in order.
// Only the newest pack of each writer can have a torn tail (its writer fsyncs a pack before it
// creates the next), and only past what the snapshot records as fsynced of it; recovery
// truncates it, fsyncs the cut (so that the pack is whole once it is no longer the newest) and
// gives a last frame missing only its padding its zeros back. Damage anywhere else is an error,
// never skipped. Runs in topic workers and offline tools.
import path from 'node:path';
import type { Fs } from './fs.js';
import { packsDir, parsePackFileName, type PackName } from '../format/layout.js';
import { probeFrame } from '../format/frame.js';
import { FrameType } from '../format/constants.js';
import { CorruptionError } from '../core/corruption.js';

export interface ListedPack extends PackName {
  name: string;
  /** The highest-numbered pack of its writer: the only one a crash may have torn. */
  newest: boolean;
}

/** The pack files in the data dir, oldest first, each marked whether it is its writer's newest. */
export function listPacks(names: readonly string[]): ListedPack[] {
  const packs = names.flatMap((name) => {
    const p = parsePackFileName(name);
    return p ? [{ ...p, name, newest: false }] : [];
  });
  packs.sort((a, b) => a.no - b.no);
  const newest = new Map<number, ListedPack>();
  for (const p of packs) newest.set(p.writer, p);
  for (const p of newest.values()) p.newest = true;
  return packs;
}

export function listPackNamesSync(fsx: Fs, dataDir: string): string[] {
  const dir = packsDir(dataDir);
  return fsx.existsSync(dir) ? fsx.readdirSync(dir).filter((n) => parsePackFileName(n) !== undefined) : [];
}

/** Where a pack's valid frames end, and why reading stopped there if that is not its end. */
export function validPrefix(buf: Buffer): { end: number; reason: string | undefined } {
  let off = 0;
  while (off < buf.length) {
    const p = probeFrame(buf, off, buf.length);
    if (!p.ok) return { end: off, reason: p.reason };
    if (p.frame.type !== FrameType.APPEND) return { end: off, reason: `a frame of type ${p.frame.type}, not APPEND` };
    off += p.frame.size;
  }
  return { end: off, reason: undefined };
}

/**
 * Reads a pack for recovery: its valid frames, padded. A torn tail of the writer's newest pack is
 * cut (when `repair`: one worker repairs a pack, the others only read it), but never below
 * `durable`: the bytes of it the snapshot records as fsynced (docs/FORMAT.md "Snapshots", the
 * section's `tail`). Anything else that is not a whole frame is a CorruptionError, and so is a
 * pack whose whole frames end below `durable`.
 */
export async function readPack(
  fsx: Fs,
  dataDir: string,
  pack: ListedPack,
  repair: boolean,
  into?: ReuseBuffer,
  from = 0,
  durable = 0,
): Promise<Buffer> {
  const file = path.join(packsDir(dataDir), pack.name);
  // A read from `from` on sees nothing of a file shorter than that: its size tells (lazy
  // recovery reads from the fsynced bytes themselves).
  if (from > 0 && durable > 0) {
    const size = (await fsx.stat(file)).size;
    if (size < durable)
      throw new CorruptionError(file, `${size} bytes, below the ${durable} the snapshot records as fsynced (nothing is cut)`, size);
  }
  // From `from` on (lazy recovery reads only what was written after a snapshot's cut): offsets
  // below are relative to it, the file's are from + offset.
  const buf = into || from > 0 ? await readInto(fsx, file, into ?? new ReuseBuffer(), from) : await fsx.readFile(file);
  const { end, reason } = validPrefix(buf);
  if (from + end < durable) {
    const what = end === buf.length ? 'its whole frames end' : `damaged frame (${reason ?? 'padding missing'})`;
    throw new CorruptionError(file, `${what} below the ${durable} bytes the snapshot records as fsynced (nothing is cut)`, from + end);
  }
  if (end === buf.length) return buf;
  const torn =
    reason === undefined || reason === 'end' || reason === 'short' || reason === 'crc' || reason === 'length' || reason === 'type';
  if (!pack.newest || !torn) throw new CorruptionError(file, `damaged frame (${reason ?? 'padding missing'}) in a sealed pack`, from + end);
  if (repair) {
    // Shorter: a torn tail, cut off. Longer: the last frame lost only its zero padding, which
    // extending the file gives back (the map counts frames with their padding).
    await fsx.truncate(file, from + end);
    const fh = await fsx.open(file, 'r+');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }
  return end < buf.length ? buf.subarray(0, end) : Buffer.concat([buf, Buffer.alloc(end - buf.length)]);
}

/**
 * One buffer reused for a sequence of reads (recovery reads every pack once, one at a time: a
 * fresh 16 MiB buffer per pack was garbage the GC took long to return, docs/ARCHITECTURE.md "Many topics"). What a read
 * returns is valid until the next read into the same ReuseBuffer.
 */
export class ReuseBuffer {
  private buf = Buffer.alloc(0);

  take(bytes: number): Buffer {
    if (this.buf.length < bytes) this.buf = Buffer.allocUnsafeSlow(bytes);
    return this.buf.subarray(0, bytes);
  }
}

async function readInto(fsx: Fs, file: string, into: ReuseBuffer, from = 0): Promise<Buffer> {
  const fh = await fsx.open(file, 'r');
  try {
    const buf = into.take(Math.max(0, fsx.statSync(file).size - from));
    let got = 0;
    while (got < buf.length) {
      const n = await fh.read(buf, got, buf.length - got, from + got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    await fh.close();
  }
}
