// The start's check that this process may write everywhere the server will (docs/OPERATIONS.md
// "Exit codes"): the data directory's own directories and the WAL and meta files in them. A data
// directory first run by another user (root, say) keeps its subdirectories that user's: the top
// level passed, the lock was taken, and then every write failed (500) on a server that said ready.
// Topic directories are not walked (a million of them); topics/ itself is checked.
import fs from 'node:fs';
import path from 'node:path';
import { metaDir, packsDir, quarantineDir, topicsDir, walDir } from '../format/layout.js';

/** Throws the EACCES/EPERM/EROFS of the first entry this process may not write (its path in the error). */
export function assertWritableLayout(dataDir: string): void {
  const withFiles = [walDir(dataDir), metaDir(dataDir)];
  for (const dir of [...withFiles, packsDir(dataDir), topicsDir(dataDir), quarantineDir(dataDir)]) {
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) continue; // a file there: the layout check names it
    fs.accessSync(dir, fs.constants.W_OK | fs.constants.X_OK);
    if (!withFiles.includes(dir)) continue;
    for (const name of fs.readdirSync(dir)) {
      const p = path.join(dir, name);
      if (fs.statSync(p).isFile()) fs.accessSync(p, fs.constants.W_OK);
    }
  }
}
