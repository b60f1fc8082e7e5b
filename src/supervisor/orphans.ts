// Recovery step 6 (docs/ARCHITECTURE.md "Recovery order"; "Retention"): topic directories whose instance is not live (deleted, or
// never committed) are removed — only after the WAL range that justified it was replayed and a
// durable BOOT frame was written, so the irreversible step comes last. The directories are
// listed before the workers end recovery, which tell which of their ids are live topics
// (WorkerRecovery.finish): the live ids are never gathered in one place (a million at times).
// Unless the WAL scan dropped whole frames (SERVICE_RECOVERY_TRUNCATE, or a torn tail with whole
// frames after its bad one): then the replay did not justify anything about the topics those
// frames created, and their segment files and packed frames are the only copy of their records.
// Nothing is removed then: the orphan directories are moved, and the packs holding frames no
// topic claimed are hard-linked (a checkpoint may unlink the original once nothing live is in
// it), into quarantine/<boot>/ (docs/ARCHITECTURE.md "Checkpoints and recovery").
import path from 'node:path';
import type { Fs } from '../storage/fs.js';
import { errnoOf, fsyncDir, mkdirDurable } from '../storage/fs.js';
import { packsDir, quarantineDir, quarantinePendingFile, topicsDir } from '../format/layout.js';
import type { TopicDirEntry } from '../storage/segmentLoad.js';

/** Removes the listed entries that are not the directory of a topic in `live`; returns how many. */
export async function removeOrphanTopicDirs(
  fsx: Fs,
  dataDir: string,
  entries: readonly TopicDirEntry[],
  live: ReadonlySet<number>,
): Promise<number> {
  const dir = topicsDir(dataDir);
  let removed = 0;
  for (const e of entries) {
    if (e.id !== undefined && live.has(e.id)) continue;
    await fsx.rm(path.join(dir, e.name));
    removed++;
  }
  return removed;
}

/** What keepOrphans moved or linked, and where. */
export interface KeptOrphans {
  /** The directory they went to: quarantine/<group>/ in the data directory. */
  dir: string;
  /** Entries of topics/ moved to `dir`/topics/. */
  topicDirs: number;
  /** Pack files linked into `dir`/packs/. */
  packs: number;
}

/**
 * After a WAL scan that dropped frames: moves the listed entries that are not the directory of a
 * topic in `live` to quarantine/`group`/topics/, and hard-links each of `packs` (names in packs/)
 * into quarantine/`group`/packs/, durably. `group` names this start (`boot-<epoch>`); a group
 * of that name already there (a start that died after moving) gets a suffix. Undefined when
 * there is nothing to keep.
 */
export async function keepOrphans(
  fsx: Fs,
  dataDir: string,
  entries: readonly TopicDirEntry[],
  live: ReadonlySet<number>,
  packs: readonly string[],
  group: string,
): Promise<KeptOrphans | undefined> {
  const orphans = entries.filter((e) => e.id === undefined || !live.has(e.id));
  if (orphans.length === 0 && packs.length === 0) return undefined;
  const root = quarantineDir(dataDir);
  let dir = path.join(root, group);
  for (let n = 2; fsx.existsSync(dir); n++) dir = path.join(root, `${group}.${n}`);
  const kept: KeptOrphans = { dir, topicDirs: 0, packs: 0 };
  if (orphans.length > 0) {
    const to = path.join(dir, 'topics');
    await mkdirDurable(fsx, to);
    for (const e of orphans) {
      await fsx.rename(path.join(topicsDir(dataDir), e.name), path.join(to, e.name));
      kept.topicDirs++;
    }
    await fsyncDir(fsx, to);
    await fsyncDir(fsx, topicsDir(dataDir));
  }
  if (packs.length > 0) {
    const to = path.join(dir, 'packs');
    await mkdirDurable(fsx, to);
    for (const name of packs) {
      try {
        await fsx.link(path.join(packsDir(dataDir), name), path.join(to, name));
        kept.packs++;
      } catch (err) {
        if (errnoOf(err) !== 'ENOENT') throw err; // gone: nothing to keep
      }
    }
    await fsyncDir(fsx, to);
  }
  return kept;
}

/**
 * The quarantine/pending marker the WAL scan leaves before it drops frames (scanRepair.ts):
 * whether it is there (a start that died before keeping its orphans), and its removal once
 * this start has kept them.
 */
export function pendingOrphans(fsx: Fs, dataDir: string): boolean {
  return fsx.existsSync(quarantinePendingFile(dataDir));
}

export async function clearPendingOrphans(fsx: Fs, dataDir: string): Promise<void> {
  if (!pendingOrphans(fsx, dataDir)) return;
  await fsx.rm(quarantinePendingFile(dataDir));
  await fsyncDir(fsx, quarantineDir(dataDir));
}
