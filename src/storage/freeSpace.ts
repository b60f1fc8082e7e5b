// Free space on the volume of a directory, for decisions and messages about a full disk (the WAL's
// file size at start, the shortfall in log lines and in /v0/ready). A measurement of the real
// volume, outside the Fs seam like the backup's reads: under a simulated disk it says nothing
// (undefined), and nothing that must replay exactly depends on it.
import fs from 'node:fs';

/** Bytes an unprivileged writer can still take on the volume holding `dir`; undefined if unknown. */
export function freeBytes(dir: string): number | undefined {
  try {
    const s = fs.statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return undefined;
  }
}
