// `spool wal-dump [data dir]`: lists the WAL's frames, one line each, while the server is stopped
// (docs/FORMAT.md); a directory a live server holds is refused unless --force.
import { readSettings } from '../config.js';
import { dumpWal } from '../wal/dump.js';
import { offlineDataDir } from './offline.js';

export function walDump(dir: string | undefined, force?: boolean): void {
  const dataDir = offlineDataDir(dir ?? readSettings().dataDir, force);
  for (const line of dumpWal(dataDir)) process.stdout.write(`${line}\n`);
}
