// Online backup (main thread, docs/OPERATIONS.md "Backup"): a copy of the data directory that
// is consistent as of one WAL position P, taken while the server keeps writing.
//   1. a checkpoint of its own (snapshot S, cut C); no other checkpoint runs until step 4, so
//      nothing S needs is trimmed or unlinked;
//   2. every segment file and pack file is hard-linked into a staging directory and its size
//      noted: a frame reaches a segment or a pack only after the WAL wrote it, so these prefixes
//      hold frames before P (packs are append-only, so a prefix is a valid pack); a topic deleted
//      meanwhile (its directory renamed away whole after its TOPIC_DELETE was durable) is left
//      out whole, never with part of its files;
//   3. with router definition changes held (RouterRegistry.hold): P = the WAL writer's position,
//      read after the sizes;
//   4. S and the WAL files from C's file to P's file are linked, the last one to be read up to P,
//      and, still inside the hold, meta/routers.json.
// Restored, recovery loads S and the segment and pack prefixes and replays the WAL [C, P): exactly
// the state as of P (a torn last frame of a segment or pack prefix is cut and rewritten from the
// WAL; only the newest pack of a writer can be still growing, and that one may be torn).
// The routers file is written outside the WAL, so it is taken while no router change runs: a
// router PUT or DELETE, or a delete of a topic some router names, finishes before the hold
// (its topic frames are durable before P, its file written) or starts after it (its frames
// after P, its file not in the backup), so the file is the definitions as of P. Router progress
// needs nothing more: a dest's applied table (the forward headers of its copies, the snapshot's
// `routers_applied`) is state as of P like any other, and a restored forwarder probes its dest
// and resumes right after what the dest holds, so it neither copies twice nor skips.
// Hard links keep the bytes even when the server later unlinks or trims the originals (the
// routers file is replaced by a rename, never rewritten in place); the staging directory is
// removed once the tar is streamed. Not through the Fs seam: this is an out-of-band reader of a
// live directory, like `cp`, never part of the data path.
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import type { WalPosition } from '../protocol/messages/wal.js';
import { routerFilePath } from '../storage/routerStore.js';
import {
  metaDir,
  packsDir,
  parsePackFileName,
  parseSegmentFileName,
  parseTopicDirName,
  parseWalFileName,
  topicsDir,
  walDir,
} from '../format/layout.js';

export const STAGING_PREFIX = 'backup-staging-';

export interface StagedFile {
  /** Path inside the backup (and the restored data directory). */
  name: string;
  /** The staged hard link. */
  source: string;
  /** Bytes to copy from the start of `source`. */
  size: number;
}

export interface StagedBackup {
  dir: string;
  point: WalPosition;
  files: StagedFile[];
  remove(): void;
}

export interface BackupSource {
  /** Runs `fn` right after a fresh checkpoint, with its cut, while no other checkpoint can run. */
  withFreshCheckpoint<T>(fn: (cut: WalPosition) => Promise<T>): Promise<T>;
  /** Runs `fn` while no router definition changes (nor a delete of a topic a router names). */
  withRoutersHeld<T>(fn: () => Promise<T>): Promise<T>;
  /** The WAL writer's position: every frame before it is written. */
  walPosition(): Promise<WalPosition>;
}

function snapshotName(cut: WalPosition): string {
  return `snapshot-${String(cut.fileNo).padStart(20, '0')}-${String(cut.offset).padStart(12, '0')}.snap`;
}

/** Leftovers of a backup cut short by a crash. */
export function removeStaleStaging(dataDir: string): void {
  for (const n of fs.readdirSync(dataDir))
    if (n.startsWith(STAGING_PREFIX)) fs.rmSync(path.join(dataDir, n), { recursive: true, force: true });
}

export async function stageBackup(dataDir: string, src: BackupSource): Promise<StagedBackup> {
  const dir = path.join(dataDir, `${STAGING_PREFIX}${crypto.randomBytes(6).toString('hex')}`);
  fs.mkdirSync(dir);
  const files: StagedFile[] = [];
  const remove = () => fs.rmSync(dir, { recursive: true, force: true });
  let n = 0;
  const link = (from: string, name: string, size?: number): boolean => {
    const to = path.join(dir, String(n++));
    try {
      fs.linkSync(from, to);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false; // unlinked meanwhile
      throw err;
    }
    files.push({ name, source: to, size: size ?? fs.statSync(to).size });
    return true;
  };
  try {
    const point = await src.withFreshCheckpoint(async (cut) => {
      const snap = snapshotName(cut);
      if (!link(path.join(metaDir(dataDir), snap), `meta/${snap}`)) throw new Error(`the checkpoint's snapshot ${snap} vanished`);
      const troot = topicsDir(dataDir);
      for (const t of fs.existsSync(troot) ? fs.readdirSync(troot).sort() : []) {
        if (parseTopicDirName(t) === undefined) continue; // a deleted topic's directory on its way out
        let names: string[];
        try {
          names = fs.readdirSync(path.join(troot, t));
        } catch {
          continue; // the topic was deleted meanwhile: its TOPIC_DELETE is in the WAL copy
        }
        const from = files.length;
        for (const s of names.filter((x) => parseSegmentFileName(x) !== undefined).sort()) {
          if (link(path.join(troot, t, s), `topics/${t}/${s}`)) continue;
          // Deleted meanwhile (its directory renamed away whole, after its TOPIC_DELETE was
          // durable: in the WAL copy). None of its files go in: recovery takes a topic directory
          // with some of its listed files missing for damage (docs/FORMAT.md "Snapshots", `files`).
          files.length = from;
          break;
        }
      }
      const proot = packsDir(dataDir);
      for (const name of fs.existsSync(proot) ? fs.readdirSync(proot).sort() : []) {
        if (parsePackFileName(name) !== undefined) link(path.join(proot, name), `packs/${name}`);
      }
      return src.withRoutersHeld(async () => {
        const p = await src.walPosition();
        for (const w of fs.readdirSync(walDir(dataDir)).sort()) {
          const no = parseWalFileName(w);
          if (no === undefined || no < cut.fileNo || no > p.fileNo) continue;
          link(path.join(walDir(dataDir), w), `wal/${w}`, no === p.fileNo ? p.offset : undefined);
        }
        link(routerFilePath(dataDir), `meta/${path.basename(routerFilePath(dataDir))}`); // absent: no router was ever made
        return p;
      });
    });
    return { dir, point, files, remove };
  } catch (err) {
    remove();
    throw err;
  }
}
