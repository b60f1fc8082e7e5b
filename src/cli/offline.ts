// Shared by the commands that read a data directory directly (verify, inspect, wal-dump): the
// directory must exist, and one a live server holds (its LOCK names a running process) is
// refused unless --force, since the server may be rewriting what the tool reads. Loaded lazily
// (it reads the lock through the storage code).
import { nodeFs } from '../storage/fs.js';
import { liveLockHolder } from '../storage/lock.js';
import { CliError, EXIT, usageError } from './common.js';

export function offlineDataDir(dir: string, force: boolean | undefined): string {
  if (!nodeFs.existsSync(dir)) throw usageError(`no such data directory: ${dir}`);
  try {
    nodeFs.readdirSync(dir);
  } catch {
    throw usageError(`not a readable directory: ${dir}`);
  }
  const pid = liveLockHolder(nodeFs, dir);
  if (pid !== undefined && !force) {
    throw new CliError(
      `data directory ${dir} is in use by process ${pid} (a running server); stop it first, or pass --force to read it anyway`,
      EXIT.usage,
    );
  }
  return dir;
}
