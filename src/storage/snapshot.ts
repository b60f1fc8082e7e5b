// Metadata snapshots (docs/ARCHITECTURE.md "Checkpoints and recovery"): everything recovery must not need the old WAL for. Written
// on the main thread at a checkpoint (temp file, fsync, rename, fsync dir); read at startup.
// Format (docs/FORMAT.md "Snapshots"): 24-byte header (magic "SPOOLSNP", u32 version, u32 length,
// u32 crc32, u32 reserved), then
// - version 2: a JSON head line ({epoch, cut, previousCut, workers, sections: [{bytes, crc,
//   topics}]}, which the header's length and CRC cover) and each topic worker's section
//   (snapshotSectionFormat.ts, written by snapshotSectionWriter.ts), each with its own CRC: the
//   workers encode (and at recovery parse) their own topics, the main thread only checks and
//   moves bytes;
// - version 1 (before lazy recovery, docs/ARCHITECTURE.md "Lazy recovery"; still read): one JSON body with every topic part.
// A bad CRC, length or version makes recovery fall back to the previous snapshot.
import path from 'node:path';
import { crc32 } from 'node:zlib';
import type { WalPosition } from '../protocol/messages/wal.js';
import type { TopicPart } from '../format/topicPart.js';
import { metaDir } from '../format/layout.js';
import { fsyncDir, fsyncDirSync, mkdirDurable, type Fs, type FsFile } from './fs.js';
import { readSection } from './snapshotSectionReader.js';
import type { SectionPacks } from './snapshotSectionFormat.js';

const MAGIC = 'SPOOLSNP';
/** Written now. */
const VERSION = 2;
/** One JSON body; read, never written any more. */
const VERSION_1 = 1;
const HEADER = 24;
/** The CRC of a section is checked this many bytes at a time, the event loop served in between. */
const CRC_SLICE_BYTES = 8 << 20;

export interface SnapshotBody {
  version: 1 | 2;
  epoch: number;
  cut: WalPosition;
  /** Cut of the previous snapshot: WAL files before it may be unlinked. */
  previousCut: WalPosition | null;
  topics: TopicPart[];
  /** Version 2: what each section records of its worker's packs at the cut (tools: verify). */
  packs?: SectionPacks[];
}

/** A snapshot's file name: its cut, zero-padded, so that names sort in log order. */
export function snapshotFileName(cut: WalPosition): string {
  return `snapshot-${String(cut.fileNo).padStart(20, '0')}-${String(cut.offset).padStart(12, '0')}.snap`;
}

/** A v2 snapshot's head line. */
export interface SnapshotHead {
  epoch: number;
  cut: WalPosition;
  /** Cut of the previous snapshot: WAL files before it may be unlinked. */
  previousCut: WalPosition | null;
  /** Topic workers that wrote the sections (section i: worker i's topics). */
  workers: number;
  sections: SectionInfo[];
}

export interface SectionInfo {
  bytes: number;
  /** CRC-32 of the section's bytes (computed by the worker that encoded it). */
  crc: number;
  topics: number;
}

/** A v1 snapshot (tests and tools; the server writes v2). */
export function encodeSnapshot(body: SnapshotBody): Buffer {
  return seal(VERSION_1, Buffer.from(JSON.stringify({ ...body, version: 1 }), 'utf8'));
}

/** A v2 snapshot as the pieces to write in order: header, head line, then each worker's section. */
export function encodeSnapshotV2(
  head: Omit<SnapshotHead, 'sections'>,
  sections: readonly { bytes: Uint8Array | readonly Uint8Array[]; crc: number; topics: number }[],
): Uint8Array[] {
  // A worker's section comes whole or as its pieces (SectionWriter.pieces: no copy of kept lines).
  const pieces = sections.map((x) => (x.bytes instanceof Uint8Array ? [x.bytes] : x.bytes));
  const full: SnapshotHead = {
    ...head,
    sections: sections.map((x, i) => ({ bytes: pieces[i]!.reduce((n, b) => n + b.byteLength, 0), crc: x.crc, topics: x.topics })),
  };
  const line = Buffer.from(`${JSON.stringify(full)}\n`, 'utf8');
  return [header(VERSION, line), line, ...pieces.flat()];
}

function header(version: number, covered: Buffer): Buffer {
  const head = Buffer.alloc(HEADER);
  head.write(MAGIC, 0, 'latin1');
  head.writeUInt32LE(version, 8);
  head.writeUInt32LE(covered.length, 12);
  head.writeUInt32LE(crc32(covered), 16);
  return head;
}

function seal(version: number, json: Buffer): Buffer {
  return Buffer.concat([header(version, json), json]);
}

/** A snapshot's version and the bytes its header covers, or undefined when the header does not check. */
function opened(buf: Buffer): { version: number; covered: Buffer } | undefined {
  if (buf.length < HEADER || buf.toString('latin1', 0, 8) !== MAGIC) return undefined;
  const version = buf.readUInt32LE(8);
  if (version !== VERSION && version !== VERSION_1) return undefined;
  const len = buf.readUInt32LE(12);
  if (HEADER + len > buf.length || (version === VERSION_1 && HEADER + len !== buf.length)) return undefined;
  const covered = buf.subarray(HEADER, HEADER + len);
  if (crc32(covered) !== buf.readUInt32LE(16)) return undefined;
  return { version, covered };
}

/** A v2 snapshot's head and its sections (not CRC-checked yet), or undefined when they do not add up. */
function v2Layout(buf: Buffer, covered: Buffer): { head: SnapshotHead; sections: Buffer[] } | undefined {
  let head: SnapshotHead;
  try {
    head = JSON.parse(covered.toString('utf8')) as SnapshotHead;
  } catch {
    return undefined;
  }
  if (!Array.isArray(head.sections) || head.sections.length !== head.workers) return undefined;
  const sections: Buffer[] = [];
  let at = HEADER + covered.length;
  for (const x of head.sections) {
    if (!(x.bytes >= 0) || at + x.bytes > buf.length) return undefined;
    sections.push(buf.subarray(at, at + x.bytes));
    at += x.bytes;
  }
  return at === buf.length ? { head, sections } : undefined;
}

/** Every part of a snapshot of either version, checked (tools and tests; recovery reads sections in the workers). */
export function decodeSnapshot(buf: Buffer): SnapshotBody | undefined {
  const o = opened(buf);
  if (!o) return undefined;
  try {
    if (o.version === VERSION_1) return JSON.parse(o.covered.toString('utf8')) as SnapshotBody;
    const l = v2Layout(buf, o.covered);
    if (!l || l.sections.some((sec, i) => crc32(sec) !== l.head.sections[i]!.crc)) return undefined;
    const topics: TopicPart[] = [];
    const packs = l.sections.map((sec) => readSection(sec, (p) => topics.push(p.part())).packs);
    return { version: 2, epoch: l.head.epoch, cut: l.head.cut, previousCut: l.head.previousCut, topics, packs };
  } catch {
    return undefined;
  }
}

/** What recovery reads of the newest valid snapshot: v1's parts, or v2's head and checked sections. */
export type LoadedSnapshot = ({ version: 1; body: SnapshotBody } | { version: 2; head: SnapshotHead; sections: Buffer[] }) & {
  /**
   * A newer snapshot was damaged and skipped: the segment files this one lists may have been
   * unlinked since (by a checkpoint after it), so their absence is no damage (docs/FORMAT.md "Snapshots", `files`).
   */
  olderThanNewest?: boolean;
};

/**
 * The newest valid snapshot for recovery, falling back to older ones when the newest is damaged.
 * Async, and a v2 section's CRC is checked a slice at a time: at a million topics a snapshot is
 * hundreds of MB, and the main thread answers /v0/health meanwhile.
 */
const SNAPSHOT_NAME = /^snapshot-\d{20}-\d{12}\.snap$/;

/** The snapshot files in `meta/`, newest first. */
export function listSnapshotNames(fsx: Fs, dataDir: string): string[] {
  const dir = metaDir(dataDir);
  if (!fsx.existsSync(dir)) return [];
  return fsx
    .readdirSync(dir)
    .filter((n) => SNAPSHOT_NAME.test(n))
    .sort()
    .reverse();
}

/**
 * Removes every snapshot older than the one at `cut`, durably (the meta directory is fsynced):
 * called before the WAL files they would need are unlinked, so that no snapshot is ever left
 * whose WAL is gone. Returns how many went.
 */
export function removeSnapshotsBefore(fsx: Fs, dataDir: string, cut: WalPosition): number {
  const keep = snapshotFileName(cut);
  const older = listSnapshotNames(fsx, dataDir).filter((n) => n < keep);
  for (const n of older) fsx.unlinkSync(path.join(metaDir(dataDir), n));
  if (older.length > 0) fsyncDirSync(fsx, metaDir(dataDir));
  return older.length;
}

export async function readNewestSnapshot(fsx: Fs, dataDir: string, warn: (m: string) => void): Promise<LoadedSnapshot | undefined> {
  const dir = metaDir(dataDir);
  const names = listSnapshotNames(fsx, dataDir);
  for (const [i, n] of names.entries()) {
    const got = await readChecked(await fsx.readFile(path.join(dir, n)));
    if (got) return i > 0 ? { ...got, olderThanNewest: true } : got;
    warn(`spool: snapshot ${n} is damaged; trying an older one`);
  }
  return undefined;
}

async function readChecked(buf: Buffer): Promise<LoadedSnapshot | undefined> {
  const o = opened(buf);
  if (!o) return undefined;
  if (o.version === VERSION_1) {
    const body = decodeSnapshot(buf);
    return body ? { version: 1, body } : undefined;
  }
  const l = v2Layout(buf, o.covered);
  if (!l) return undefined;
  for (const [i, sec] of l.sections.entries()) {
    let crc = 0;
    for (let at = 0; at < sec.length; at += CRC_SLICE_BYTES) {
      crc = crc32(sec.subarray(at, Math.min(sec.length, at + CRC_SLICE_BYTES)), crc);
      await new Promise((r) => setImmediate(r));
    }
    if (crc !== l.head.sections[i]!.crc) return undefined;
  }
  return { version: 2, head: l.head, sections: l.sections };
}

/** Newest valid snapshot, falling back to older ones when the newest is damaged. */
export function loadNewestSnapshot(fsx: Fs, dataDir: string, warn: (m: string) => void): SnapshotBody | undefined {
  const dir = metaDir(dataDir);
  const names = listSnapshotNames(fsx, dataDir);
  for (const n of names) {
    const body = decodeSnapshot(fsx.readFileSync(path.join(dir, n)));
    if (body) return body;
    warn(`spool: snapshot ${n} is damaged; trying an older one`);
  }
  return undefined;
}

/** Writes a snapshot durably and removes every snapshot older than the previous one. */
export async function writeSnapshot(fsx: Fs, dataDir: string, body: SnapshotBody): Promise<void> {
  await writeSnapshotBytes(fsx, dataDir, body.cut, encodeSnapshot(body));
}

/** Writes `pieces` back to back from offset 0, finishing short writes (at most 1024 buffers per call: IOV_MAX). */
async function writeAll(fh: FsFile, pieces: Uint8Array[]): Promise<void> {
  let pos = 0;
  let i = 0;
  let skip = 0; // bytes of pieces[i] already written
  while (i < pieces.length) {
    const batch = pieces.slice(i, i + 1024).map((p, k) => (k === 0 && skip > 0 ? p.subarray(skip) : p));
    let n = await fh.writev(batch, pos);
    if (!(n > 0) && batch.some((b) => b.length > 0)) throw new Error(`snapshot writev wrote ${n} bytes`);
    pos += n;
    // Advance past what was written, possibly part-way into a piece.
    while (i < pieces.length && n >= pieces[i]!.length - skip) {
      n -= pieces[i]!.length - skip;
      skip = 0;
      i++;
    }
    skip += n;
  }
}

/**
 * Writes encoded snapshot bytes durably and removes every snapshot older than the previous one.
 * On failure before the rename the temp file is removed and the previous snapshot stays newest.
 */
export async function writeSnapshotBytes(fsx: Fs, dataDir: string, cut: WalPosition, bytes: Uint8Array | Uint8Array[]): Promise<void> {
  const dir = metaDir(dataDir);
  await mkdirDurable(fsx, dir);
  const final = path.join(dir, snapshotFileName(cut));
  const tmp = `${final}.tmp`;
  const fh = await fsx.open(tmp, 'w');
  try {
    try {
      if (Array.isArray(bytes)) await writeAll(fh, bytes);
      else await fh.writeFile(bytes);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsx.rename(tmp, final);
  } catch (err) {
    // The temp file is never loaded (not a snapshot name), but it holds space, and on a full
    // disk that is what ran out: remove it, and report the original error (a disk-full one
    // postpones the checkpoint; the previous snapshot stays the newest).
    await fsx.rm(tmp).catch(() => undefined);
    throw err;
  }
  await fsyncDir(fsx, dir);
  const names = (await fsx.readdir(dir))
    .filter((n) => SNAPSHOT_NAME.test(n))
    .sort()
    .reverse();
  for (const n of names.slice(2)) await fsx.rm(path.join(dir, n));
}
