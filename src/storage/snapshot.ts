// Metadata snapshots (DESIGN 2.5): everything recovery must not need the old WAL for. Written
// on the main thread at a checkpoint (temp file, fsync, rename, fsync dir); read at startup.
// Format: 24-byte header (magic "SPOOLSNP", u32 version, u32 body length, u32 crc32 of body,
// u32 reserved) then a JSON body. A bad CRC or version makes recovery fall back to the
// previous snapshot.
import path from 'node:path';
import { crc32 } from 'node:zlib';
import type { WalPosition } from '../core/messages/wal.js';
import type { TopicConfig } from '../actors/topic/config.js';
import type { LossRun } from '../actors/topic/lossLedger.js';
import type { QueuePart } from '../actors/queue/leasesLog.js';
import type { AppliedPart } from '../actors/router/appliedTable.js';
import type { Watermarks } from '../actors/topic/watermarks.js';
import { metaDir } from './layout.js';
import { fsyncDir, mkdirDurable, type Fs } from './fs.js';

const MAGIC = 'SPOOLSNP';
const VERSION = 1;
const HEADER = 24;

/** One topic instance as the snapshot keeps it. */
export interface TopicPart {
  id: number;
  name: string;
  config: TopicConfig;
  created_ms: number;
  /** Seq ceiling no future seq may stay under (max of submitted reservations and head). */
  reserved: number;
  /** Retention state (absent in snapshots of topics that never lost a record). */
  evict_floor?: number;
  ledger?: LossRun[];
  /** Every record below this seq is gone (evicted below evict_floor, else deleted). */
  dead_below?: number;
  /** User-deleted ranges at or above dead_below, inclusive. */
  deleted?: [number, number][];
  /** Queue topics: claim leases, nack delays, delivery counts and the dead-letter counter. */
  queue?: QueuePart;
  /** Router dests: per router id, [last source seq held, forwarded total] (DESIGN 5). */
  routers_applied?: AppliedPart;
}

/** A sleeping topic (issue 15, src/actors/topic/dormant.ts): its part plus its watermarks. */
export interface DormantTopic extends TopicPart, Watermarks {}

export interface SnapshotBody {
  version: 1;
  epoch: number;
  cut: WalPosition;
  /** Cut of the previous snapshot: WAL files before it may be unlinked. */
  previousCut: WalPosition | null;
  topics: TopicPart[];
}

function fileName(cut: WalPosition): string {
  return `snapshot-${String(cut.fileNo).padStart(20, '0')}-${String(cut.offset).padStart(12, '0')}.snap`;
}

export function encodeSnapshot(body: SnapshotBody): Buffer {
  return sealSnapshot(Buffer.from(JSON.stringify(body), 'utf8'));
}

/**
 * The snapshot body from its pieces, without parsing or re-encoding the topic parts: workers
 * send their parts as JSON text (comma-separated objects), so the main thread only
 * concatenates bytes and never stringifies the whole topic directory.
 */
export function encodeSnapshotFromParts(head: Omit<SnapshotBody, 'topics'>, partsJson: Uint8Array[]): Buffer {
  const pieces: Uint8Array[] = [Buffer.from(JSON.stringify(head).slice(0, -1) + ',"topics":[', 'utf8')];
  let first = true;
  for (const p of partsJson) {
    if (p.length === 0) continue;
    if (!first) pieces.push(Buffer.from(','));
    pieces.push(p);
    first = false;
  }
  pieces.push(Buffer.from(']}'));
  return sealSnapshot(Buffer.concat(pieces));
}

function sealSnapshot(json: Buffer): Buffer {
  const head = Buffer.alloc(HEADER);
  head.write(MAGIC, 0, 'latin1');
  head.writeUInt32LE(VERSION, 8);
  head.writeUInt32LE(json.length, 12);
  head.writeUInt32LE(crc32(json), 16);
  return Buffer.concat([head, json]);
}

export function decodeSnapshot(buf: Buffer): SnapshotBody | undefined {
  if (buf.length < HEADER || buf.toString('latin1', 0, 8) !== MAGIC || buf.readUInt32LE(8) !== VERSION) return undefined;
  const len = buf.readUInt32LE(12);
  if (HEADER + len !== buf.length) return undefined;
  const json = buf.subarray(HEADER);
  if (crc32(json) !== buf.readUInt32LE(16)) return undefined;
  try {
    return JSON.parse(json.toString('utf8')) as SnapshotBody;
  } catch {
    return undefined;
  }
}

/** Newest valid snapshot, falling back to older ones when the newest is damaged. */
export function loadNewestSnapshot(fsx: Fs, dataDir: string, warn: (m: string) => void): SnapshotBody | undefined {
  const dir = metaDir(dataDir);
  if (!fsx.existsSync(dir)) return undefined;
  const names = fsx.readdirSync(dir).filter((n) => /^snapshot-\d{20}-\d{12}\.snap$/.test(n)).sort().reverse();
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

/**
 * Writes encoded snapshot bytes durably and removes every snapshot older than the previous one.
 * On failure before the rename the temp file is removed and the previous snapshot stays newest.
 */
export async function writeSnapshotBytes(fsx: Fs, dataDir: string, cut: WalPosition, bytes: Buffer): Promise<void> {
  const dir = metaDir(dataDir);
  await mkdirDurable(fsx, dir);
  const final = path.join(dir, fileName(cut));
  const tmp = `${final}.tmp`;
  const fh = await fsx.open(tmp, 'w');
  try {
    try {
      await fh.writeFile(bytes);
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
  const names = (await fsx.readdir(dir)).filter((n) => /^snapshot-\d{20}-\d{12}\.snap$/.test(n)).sort().reverse();
  for (const n of names.slice(2)) await fsx.rm(path.join(dir, n));
}
