// `spool restore <backup> <data-dir>`: unpacks a backup tar (a file, or - for stdin) into a new
// or empty data directory; a directory a live server holds, or one with anything in it, is
// refused. The directory is locked while it is filled, and the unpacked data passes `spool
// verify`'s checks or nothing is restored (untar.ts). Start a server on it and recovery replays
// the backup's WAL tail.
import { Command } from 'commander';
import fs from 'node:fs';
import { EXIT, note, usageError, type Outcome } from './common.js';

export function restoreCommand(outcome: Outcome): Command {
  return new Command('restore')
    .description('unpack a backup tar (from spool backup) into a new or empty data directory')
    .argument('<backup>', 'the backup tar file, or - for stdin')
    .argument('<dataDir>', 'a new or empty directory')
    .action(async (src: string, dir: string) => {
      if (src !== '-' && !fs.existsSync(src)) throw usageError(`no such backup file: ${src}`);
      if (src !== '-' && fs.statSync(src).isDirectory())
        throw usageError(
          `${src} is a directory: a backup made to a directory is a data directory already (start a server on it, or copy it)`,
        );
      const { assertEmptyTarget, untar } = await import('./untar.js');
      const { liveLockHolder } = await import('../storage/lock.js');
      const { nodeFs } = await import('../storage/fs.js');
      assertEmptyTarget(dir, (d) => liveLockHolder(nodeFs, d));
      const r = await untar(src === '-' ? process.stdin : fs.createReadStream(src), dir);
      note(`restored ${r.files} files (${r.bytes} bytes) as of WAL position ${r.point.fileNo}:${r.point.offset} into ${dir}`);
      outcome.code = EXIT.ok;
    });
}
