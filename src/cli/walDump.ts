// `spool wal-dump [data dir]`: lists the WAL's frames, one line each, while the server is stopped
// (docs/FORMAT.md).
import { readSettings } from '../config.js';
import { dumpWal } from '../wal/dump.js';

export function walDump(dir: string | undefined): void {
  for (const line of dumpWal(dir ?? readSettings().dataDir)) process.stdout.write(`${line}\n`);
}
