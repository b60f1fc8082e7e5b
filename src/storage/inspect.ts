// Offline description of a data directory (`spool inspect`): its topics by name with class,
// type, floors, reservation ceiling, segments, packed bytes and bytes on disk, from the newest
// snapshot plus the topic frames (create, config, delete) the WAL holds after it, and the pack
// files with how many of their bytes belong to live topics. Read-only.
import path from 'node:path';
import type { Fs } from './fs.js';
import { metaDir, packsDir, parseSegmentFileName, topicDir, walDir, walFileName } from '../format/layout.js';
import { listPackNamesSync, listPacks, validPrefix } from './packScan.js';
import { decodeSnapshot } from './snapshot.js';
import { checkWalHeader, listWalFiles } from '../wal/files.js';
import { FrameType, WAL_HEADER_BYTES } from '../format/constants.js';
import { decodeJsonBody, probeFrame } from '../format/frame.js';

export interface TopicInfo {
  name: string;
  id: string;
  type: string;
  durability: string;
  /** From the snapshot: the seq ceiling, the floors (absent when never set). */
  reserved: number | null;
  evict_floor: number | null;
  dead_below: number | null;
  deleted_ranges: number;
  /** Created after the newest snapshot (its state is all in the WAL). */
  in_wal_only: boolean;
  segments: { first_seq: number; bytes: number }[];
  /** Bytes of the topic's frames in pack files (its packed first segment; 0: none). */
  packed_bytes: number;
  bytes_on_disk: number;
}

export interface DataDirInfo {
  snapshot: string | null;
  /** Snapshot files newer than `snapshot` that do not decode (skipped; `spool verify` says why). */
  damaged_snapshots: string[];
  wal_files: { file: string; bytes: number }[];
  /** Pack files (docs/FORMAT.md), oldest first; `live_bytes`: frames of topics listed here. */
  packs: { file: string; bytes: number; frames: number; live_bytes: number }[];
  topics: TopicInfo[];
}

export function inspectDataDir(fsx: Fs, dataDir: string): DataDirInfo {
  const { name: snapName, damaged } = newestSnapshot(fsx, dataDir);
  const snap = snapName ? decodeSnapshot(fsx.readFileSync(path.join(metaDir(dataDir), snapName))) : undefined;
  const byId = new Map<number, TopicInfo>();
  for (const t of snap?.topics ?? []) {
    byId.set(t.id, {
      name: t.name,
      id: t.id.toString(16),
      type: t.config.type,
      durability: t.config.durability,
      reserved: t.reserved,
      evict_floor: t.evict_floor ?? null,
      dead_below: t.dead_below ?? null,
      deleted_ranges: t.deleted?.length ?? 0,
      in_wal_only: false,
      segments: [],
      packed_bytes: 0,
      bytes_on_disk: 0,
    });
  }
  const walFiles: { file: string; bytes: number }[] = [];
  for (const fileNo of listWalFiles(fsx, dataDir)) {
    const buf = fsx.readFileSync(path.join(walDir(dataDir), walFileName(fileNo)));
    walFiles.push({ file: walFileName(fileNo), bytes: buf.length });
    if (checkWalHeader(buf, fileNo)) continue;
    for (let off = WAL_HEADER_BYTES; off < buf.length;) {
      const p = probeFrame(buf, off, buf.length);
      if (!p.ok) break;
      applyTopicFrame(buf, p.frame, byId);
      off += p.frame.size;
    }
  }
  for (const [id, t] of byId) {
    const dir = topicDir(dataDir, id);
    if (!fsx.existsSync(dir)) continue;
    for (const n of fsx.readdirSync(dir).sort()) {
      const first = parseSegmentFileName(n);
      if (first === undefined) continue;
      const bytes = fsx.statSync(path.join(dir, n)).size;
      t.segments.push({ first_seq: first, bytes });
      t.bytes_on_disk += bytes;
    }
  }
  const packs = inspectPacks(fsx, dataDir, byId);
  const topics = [...byId.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { snapshot: snapName ?? null, damaged_snapshots: damaged, wal_files: walFiles, packs, topics };
}

/** Each pack's size, frames and bytes of listed topics; adds those bytes to the topics. */
function inspectPacks(fsx: Fs, dataDir: string, byId: Map<number, TopicInfo>): DataDirInfo['packs'] {
  const out: DataDirInfo['packs'] = [];
  for (const p of listPacks(listPackNamesSync(fsx, dataDir))) {
    const buf = fsx.readFileSync(path.join(packsDir(dataDir), p.name));
    const { end } = validPrefix(buf);
    const row = { file: p.name, bytes: buf.length, frames: 0, live_bytes: 0 };
    for (let off = 0; off < Math.min(end, buf.length);) {
      const f = probeFrame(buf, off, buf.length, false);
      if (!f.ok) break;
      row.frames++;
      const t = byId.get(f.frame.topicId);
      if (t) {
        t.packed_bytes += f.frame.size;
        t.bytes_on_disk += f.frame.size;
        row.live_bytes += f.frame.size;
      }
      off += f.frame.size;
    }
    out.push(row);
  }
  return out;
}

/** The newest snapshot that decodes, and the newer ones that do not (damaged: skipped, as recovery skips them). */
function newestSnapshot(fsx: Fs, dataDir: string): { name: string | undefined; damaged: string[] } {
  const dir = metaDir(dataDir);
  const damaged: string[] = [];
  if (!fsx.existsSync(dir)) return { name: undefined, damaged };
  const names = fsx
    .readdirSync(dir)
    .filter((n) => /^snapshot-\d{20}-\d{12}\.snap$/.test(n))
    .sort()
    .reverse();
  for (const n of names) {
    if (decodeSnapshot(fsx.readFileSync(path.join(dir, n))) !== undefined) return { name: n, damaged };
    damaged.push(n);
  }
  return { name: undefined, damaged };
}

function applyTopicFrame(
  buf: Buffer,
  f: { type: number; topicId: number; bodyOff: number; bodyLen: number; size: number; flags: number },
  byId: Map<number, TopicInfo>,
): void {
  if (f.type === FrameType.TOPIC_CREATE && !byId.has(f.topicId)) {
    const b = decodeJsonBody(buf, f) as { name: string; config: { type: string; durability: string } };
    byId.set(f.topicId, {
      name: b.name,
      id: f.topicId.toString(16),
      type: b.config.type,
      durability: b.config.durability,
      reserved: null,
      evict_floor: null,
      dead_below: null,
      deleted_ranges: 0,
      in_wal_only: true,
      segments: [],
      packed_bytes: 0,
      bytes_on_disk: 0,
    });
  } else if (f.type === FrameType.TOPIC_CONFIG) {
    const t = byId.get(f.topicId);
    const b = decodeJsonBody(buf, f) as { config: { type: string; durability: string } };
    if (t) [t.type, t.durability] = [b.config.type, b.config.durability];
  } else if (f.type === FrameType.TOPIC_DELETE) {
    byId.delete(f.topicId);
  }
}
