// How large the WAL's files are for this run (main thread, at start, before the WAL thread
// spawns). The WAL keeps its current file and a pre-allocated reserve, plus whatever the
// previous checkpoint still needs; on a small or nearly full volume two files of the configured
// size may not fit at all, and a server whose first file cannot be made refuses every write.
// So when the free space is short, this run's files are made smaller (down to 1 MiB) and the
// WAL-size checkpoint trigger follows them (docs/ARCHITECTURE.md "Storage faults").
// Pure: the caller reads the free space and logs the warning.
import { WAL_HEADER_BYTES } from '../format/constants.js';

export const WAL_FILE_BYTES_MIN = 1024 * 1024;

/**
 * The WAL's files take at most this share of the free space: a checkpoint each file keeps
 * about four on disk (the one the previous snapshot still needs, the one after it, the current
 * one and the reserve), half the free space, and leaves the rest for segments and snapshots.
 */
const FREE_SPACE_PER_FILE = 8;

export interface WalSizing {
  walFileBytes: number;
  checkpointWalBytes: number;
  /** The configured size did not fit: this run uses the smaller one. */
  shrunk: boolean;
}

export function sizeWal(walFileBytes: number, checkpointWalBytes: number, freeBytes: number | undefined): WalSizing {
  if (freeBytes === undefined || freeBytes >= FREE_SPACE_PER_FILE * walFileBytes)
    return { walFileBytes, checkpointWalBytes, shrunk: false };
  const fitting = Math.floor(freeBytes / FREE_SPACE_PER_FILE / WAL_FILE_BYTES_MIN) * WAL_FILE_BYTES_MIN;
  const fileBytes = Math.max(WAL_FILE_BYTES_MIN, fitting);
  return { walFileBytes: fileBytes, checkpointWalBytes: Math.min(checkpointWalBytes, fileBytes), shrunk: true };
}

/**
 * Bytes a frame of `frameBytes` runs past the pre-allocated end of a WAL file of `walFileBytes`:
 * at the latest it starts a file of its own, so only a frame larger than a file's room has any.
 */
export function walOverrunBytes(frameBytes: number, walFileBytes: number): number {
  return Math.max(0, frameBytes - (walFileBytes - WAL_HEADER_BYTES));
}

/** "12.0 MiB", for log lines. */
export function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}
