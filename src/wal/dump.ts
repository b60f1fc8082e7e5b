// `spool wal-dump <data dir>`: a human-readable listing of every WAL frame, then every pack
// file's frames, for debugging.
// Reads files directly (the server must not be running on the directory). Where a file stops
// holding whole frames the listing says which of two things it is (the rule `spool verify`
// applies, docs/CLI.md): a torn tail, nothing whole after it (a crash's normal leftover), or
// damage, whole frames after it, which the listing then goes on to show.
import path from 'node:path';
import { nodeFs, type Fs } from '../storage/fs.js';
import { packsDir, walDir, walFileName } from '../format/layout.js';
import { checkWalHeader, listWalFiles } from './files.js';
import { FrameType, WAL_HEADER_BYTES } from '../format/constants.js';
import { probeFrame, readAppendHead, readU64, type FrameView } from '../format/frame.js';
import { listPackNamesSync, listPacks } from '../storage/packScan.js';
import { decodeLeases } from '../format/leasesFrame.js';
import { findValidFrameAfter, holdsNoData, laterFileHoldsDataSync } from './scanRepair.js';

/** Counts the damaged places the listing met (stops with whole frames after them). */
export interface DumpTally {
  damaged: number;
}

const NAMES = new Map<number, string>(Object.entries(FrameType).map(([k, v]) => [v, k]));

export function* dumpWal(dataDir: string, fsx: Fs = nodeFs, tally: DumpTally = { damaged: 0 }): Generator<string> {
  const files = listWalFiles(fsx, dataDir);
  for (const [i, fileNo] of files.entries()) {
    const buf = fsx.readFileSync(path.join(walDir(dataDir), walFileName(fileNo)));
    const bad = checkWalHeader(buf, fileNo);
    yield `${walFileName(fileNo)}: ${buf.length} bytes${bad ? ` (header: ${bad})` : ''}`;
    if (bad) {
      // A header that never became durable, with only zeros after it, held no frame (a creation
      // cut short); one in front of data is damage, as for spool verify and a start.
      if (!holdsNoData(buf)) {
        tally.damaged++;
        yield `  @0 DAMAGE (header: ${bad}): the file's frames cannot be read`;
      }
      continue;
    }
    // Frames go to a later file only once this one was complete (a pre-created one holds zeros).
    const later = files.slice(i + 1);
    yield* dumpFrames(buf, WAL_HEADER_BYTES, () => (laterFileHoldsDataSync(fsx, walDir(dataDir), later) ? 'whole' : 'lastWal'), tally);
  }
  yield* dumpPacks(dataDir, fsx, tally);
}

/**
 * What a stop before the end of a file means (the zeros after its last frame are not a stop):
 * `whole`, the file was complete, so any stop is damage; `lastWal`, damage when a whole frame
 * follows, else a torn tail; `newestPack`, a writer's newest pack, which may be torn anywhere
 * after what a checkpoint fsynced (writeback keeps no order; `spool verify` checks it against
 * the snapshot).
 */
type StopRule = 'whole' | 'lastWal' | 'newestPack';

/** The frames of `buf` from `off`, one line each; after damage the listing resumes at the next whole frame. */
function* dumpFrames(buf: Buffer, off: number, ruleAtStop: () => StopRule, tally: DumpTally): Generator<string> {
  while (off < buf.length) {
    const p = probeFrame(buf, off, buf.length);
    if (p.ok) {
      yield `  @${off} ${describeFrame(buf, p.frame)}`;
      off += p.frame.size;
      continue;
    }
    if (p.reason === 'end') return;
    const rule = ruleAtStop();
    if (rule === 'newestPack') {
      yield `  @${off} stop (${p.reason}): the newest pack of its writer may be torn anywhere past its checkpoint`;
      return;
    }
    const next = findValidFrameAfter(buf, off);
    if (next < 0 && rule === 'lastWal') {
      yield `  @${off} torn tail (${p.reason}): ${buf.length - off} bytes to the end, no whole frame after it`;
      return;
    }
    tally.damaged++;
    if (next < 0) {
      yield `  @${off} DAMAGE (${p.reason}): the file was complete, and nothing whole follows`;
      return;
    }
    yield `  @${off} DAMAGE (${p.reason}): whole frames follow from @${next}`;
    off = next;
  }
}

/** The frames of every pack file (docs/FORMAT.md "Pack files"), after the WAL's. */
function* dumpPacks(dataDir: string, fsx: Fs, tally: DumpTally): Generator<string> {
  for (const pack of listPacks(listPackNamesSync(fsx, dataDir))) {
    const buf = fsx.readFileSync(path.join(packsDir(dataDir), pack.name));
    yield `packs/${pack.name}: ${buf.length} bytes${pack.newest ? ' (newest of its writer)' : ''}`;
    // A sealed pack was complete before its writer began the next.
    yield* dumpFrames(buf, 0, () => (pack.newest ? 'newestPack' : 'whole'), tally);
  }
}

function describeFrame(buf: Buffer, f: FrameView): string {
  let what = '';
  if (f.type === FrameType.APPEND) {
    const h = readAppendHead(buf, f);
    what = `seqs ${h.firstSeq}..${h.firstSeq + h.count - 1} ts ${h.tsMs}${h.idemKey !== undefined ? ` key ${JSON.stringify(h.idemKey)}` : ''}`;
  } else if (f.type === FrameType.LEASES) {
    const kinds = ['', 'claimed', 'extended', 'released'];
    what = decodeLeases(buf, f)
      .map(
        (e) =>
          `${kinds[e.kind] ?? e.kind} ${e.seq}${e.node ? ` by ${JSON.stringify(e.node)}` : ''}${e.viaWork ? ' (work)' : ''}${e.atMs ? ` at ${e.atMs}` : ''}`,
      )
      .join(', ');
  } else if (f.type === FrameType.SEQ_RESERVE) {
    what = `ceiling ${readU64(buf, f.bodyOff)}`;
  } else {
    what = buf.toString('utf8', f.bodyOff, f.bodyOff + Math.min(f.bodyLen, 200));
  }
  return `${NAMES.get(f.type) ?? f.type} topic ${f.topicId.toString(16)} ${f.size}B ${what}`;
}
