// Shared by the commands that read a data directory directly (verify, inspect, wal-dump): the
// directory must exist and look like one (a server or a restore made at least one of its
// folders, docs/FORMAT.md), and one a live server holds (its LOCK names a running process) is
// refused unless --force, since the server may be rewriting what the tool reads. Loaded lazily
// (it reads the lock through the storage code).
import { nodeFs } from '../storage/fs.js';
import { liveLockHolder } from '../storage/lock.js';
import { CliError, EXIT, usageError } from './common.js';

/** What a data directory holds once a server has started on it, or a backup was restored into it. */
const DATA_DIR_ENTRIES = ['wal', 'meta', 'packs', 'topics'];

export function offlineDataDir(dir: string, force: boolean | undefined): string {
  if (!nodeFs.existsSync(dir)) throw usageError(`no such data directory: ${dir}`);
  let entries: string[];
  try {
    entries = nodeFs.readdirSync(dir);
  } catch {
    throw usageError(`not a readable directory: ${dir}`);
  }
  // A wrong path (the data dir's parent, one of its folders) would otherwise verify as an empty, sound store.
  if (!DATA_DIR_ENTRIES.some((e) => entries.includes(e)))
    throw usageError(`not a spool data directory: ${dir} holds none of ${DATA_DIR_ENTRIES.join(', ')}`);
  const pid = liveLockHolder(nodeFs, dir);
  if (pid !== undefined && !force) {
    throw new CliError(
      `data directory ${dir} is in use by process ${pid} (a running server); stop it first, or pass --force to read it anyway`,
      EXIT.usage,
    );
  }
  return dir;
}
