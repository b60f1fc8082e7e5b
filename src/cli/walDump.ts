// `spool wal-dump [data dir]`: lists the WAL's frames, one line each, while the server is stopped
// (docs/FORMAT.md); a directory a live server holds is refused unless --force.
import { readSettings } from '../config.js';
import { dumpWal, type DumpTally } from '../wal/dump.js';
import { offlineDataDir } from './offline.js';

/** Lists the frames; exit 1 when the listing met damage (a `DAMAGE` line), as `spool verify` would. */
export function walDump(dir: string | undefined, force?: boolean): number {
  const dataDir = offlineDataDir(dir ?? readSettings().dataDir, force);
  const tally: DumpTally = { damaged: 0 };
  for (const line of dumpWal(dataDir, undefined, tally)) process.stdout.write(`${line}\n`);
  if (tally.damaged > 0) {
    process.stderr.write(`wal-dump: ${tally.damaged} damaged place(s), see the DAMAGE lines; spool verify checks the whole directory\n`);
    return 1;
  }
  return 0;
}
