// Recovery step 6 (DESIGN 2.6, 2.7): topic directories whose instance is not live (deleted, or
// never committed) are removed — only after the WAL range that justified it was replayed and a
// durable BOOT frame was written, so the irreversible step comes last. The directories are
// listed before the workers end recovery, which tell which of their ids are live topics
// (WorkerRecovery.finish): the live ids are never gathered in one place (a million at times).
import path from 'node:path';
import type { Fs } from '../storage/fs.js';
import { topicsDir } from '../storage/layout.js';

/** An entry of topics/: a topic directory's name and its id, or anything else (id undefined). */
export interface TopicDirEntry {
  name: string;
  id: number | undefined;
}

export async function listTopicDirs(fsx: Fs, dataDir: string): Promise<TopicDirEntry[]> {
  let names: string[];
  try {
    names = await fsx.readdir(topicsDir(dataDir));
  } catch {
    return [];
  }
  return names.map((name) => ({ name, id: /^[0-9a-f]{12}$/.test(name) ? parseInt(name, 16) : undefined }));
}

/** Removes the listed entries that are not the directory of a topic in `live`; returns how many. */
export async function removeOrphanTopicDirs(fsx: Fs, dataDir: string, entries: readonly TopicDirEntry[], live: ReadonlySet<number>): Promise<number> {
  const dir = topicsDir(dataDir);
  let removed = 0;
  for (const e of entries) {
    if (e.id !== undefined && live.has(e.id)) continue;
    await fsx.rm(path.join(dir, e.name));
    removed++;
  }
  return removed;
}
