// Recovery step 6 (docs/ARCHITECTURE.md "Recovery order"; "Retention"): topic directories whose instance is not live (deleted, or
// never committed) are removed — only after the WAL range that justified it was replayed and a
// durable BOOT frame was written, so the irreversible step comes last. The directories are
// listed before the workers end recovery, which tell which of their ids are live topics
// (WorkerRecovery.finish): the live ids are never gathered in one place (a million at times).
import path from 'node:path';
import type { Fs } from '../storage/fs.js';
import { topicsDir } from '../format/layout.js';
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
