// Paths inside SERVICE_DATA_DIR (docs/FORMAT.md): wal/, meta/, topics/<id hex>/seg-<first>.log,
// packs/pack-<no>-<writer>-<workers>.log, quarantine/.
import path from 'node:path';

export function walDir(dataDir: string): string {
  return path.join(dataDir, 'wal');
}

export function walFileName(fileNo: number): string {
  return `${String(fileNo).padStart(20, '0')}.wal`;
}

export function parseWalFileName(name: string): number | undefined {
  const m = /^(\d{20})\.wal$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

export function metaDir(dataDir: string): string {
  return path.join(dataDir, 'meta');
}

export function topicsDir(dataDir: string): string {
  return path.join(dataDir, 'topics');
}

export function topicDir(dataDir: string, topicId: number): string {
  return path.join(topicsDir(dataDir), topicId.toString(16).padStart(12, '0'));
}

/**
 * What a deleted topic's directory is renamed to before it is removed (SegmentStore.dropTopic):
 * not a topic directory by its name, so a leftover goes at the next start (orphans.ts).
 */
export function deletedTopicDir(dataDir: string, topicId: number): string {
  return `${topicDir(dataDir, topicId)}.deleted`;
}

/** The topic id a directory name under topics/ stands for (topicDir's), or undefined. */
export function parseTopicDirName(name: string): number | undefined {
  return /^[0-9a-f]{12}$/.test(name) ? parseInt(name, 16) : undefined;
}

export function segmentFileName(firstSeq: number): string {
  return `seg-${String(firstSeq).padStart(20, '0')}.log`;
}

export function parseSegmentFileName(name: string): number | undefined {
  const m = /^seg-(\d{20})\.log$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** Where a compaction writes a segment's copy before renaming it over the segment (docs/FORMAT.md "Compacted segments"). */
export function compactTempName(firstSeq: number): string {
  return `${segmentFileName(firstSeq)}.compact`;
}

export function parseCompactTempName(name: string): number | undefined {
  const m = /^seg-(\d{20})\.log\.compact$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** Shared pack files of small topics' first segments (docs/FORMAT.md "Pack files"). */
export function packsDir(dataDir: string): string {
  return path.join(dataDir, 'packs');
}

/**
 * What a recovery that dropped WAL frames kept instead of removing it (docs/FORMAT.md;
 * docs/ARCHITECTURE.md "Checkpoints and recovery"): never read by the server, nor by the offline
 * tools or a backup, which look only at the folders above.
 */
export function quarantineDir(dataDir: string): string {
  return path.join(dataDir, 'quarantine');
}

/**
 * Present from the moment a WAL scan drops frames until that start has moved what only they
 * could claim into quarantine/ (docs/ARCHITECTURE.md "Checkpoints and recovery"): a start that
 * finds it does the same, though its own scan drops nothing.
 */
export function quarantinePendingFile(dataDir: string): string {
  return path.join(quarantineDir(dataDir), 'pending');
}

/** A pack's name: its number (one sequence for the whole data dir), writer and worker count. */
export interface PackName {
  no: number;
  /** Index of the worker that wrote it. */
  writer: number;
  /** SERVICE_WORKERS of the process that wrote it. */
  workers: number;
}

export function packFileName(p: PackName): string {
  return `pack-${String(p.no).padStart(20, '0')}-${p.writer}-${p.workers}.log`;
}

export function parsePackFileName(name: string): PackName | undefined {
  const m = /^pack-(\d{20})-(\d{1,3})-(\d{1,3})\.log$/.exec(name);
  if (!m) return undefined;
  const p = { no: Number(m[1]), writer: Number(m[2]), workers: Number(m[3]) };
  return p.workers > 0 && p.writer < p.workers ? p : undefined;
}

/** Where a frame goes in a topic's segments: its segment (by first seq), the offset in it. */
export interface SegmentPlacement {
  topicId: number;
  segFirstSeq: number;
  offset: number;
  /** The topic's first segment, kept in the worker's shared pack files (absent: its own file). */
  packed?: boolean;
}
