// Recovery step 6 (DESIGN 2.6, 2.7): topic directories whose instance is not live (deleted, or
// never committed) are removed — only after the WAL range that justified it was replayed and a
// durable BOOT frame was written, so the irreversible step comes last.
import path from 'node:path';
import type { Fs } from '../storage/fs.js';
import { topicsDir } from '../storage/layout.js';

export async function removeOrphanTopicDirs(fsx: Fs, dataDir: string, live: Set<number>): Promise<number> {
  const dir = topicsDir(dataDir);
  let names: string[];
  try {
    names = await fsx.readdir(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const n of names) {
    const id = /^[0-9a-f]{12}$/.test(n) ? parseInt(n, 16) : undefined;
    if (id !== undefined && live.has(id)) continue;
    await fsx.rm(path.join(dir, n));
    removed++;
  }
  return removed;
}
