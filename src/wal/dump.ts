// `spool wal-dump <data dir>`: a human-readable listing of every WAL frame, then every pack
// file's frames, for debugging.
// Reads files directly (the server must not be running on the directory).
import path from 'node:path';
import { nodeFs, type Fs } from '../storage/fs.js';
import { packsDir, walDir, walFileName } from '../format/layout.js';
import { checkWalHeader, listWalFiles } from './files.js';
import { FrameType, WAL_HEADER_BYTES } from '../format/constants.js';
import { probeFrame, readAppendHead, readU64, type FrameView } from '../format/frame.js';
import { listPackNamesSync, listPacks } from '../storage/packScan.js';
import { decodeLeases } from '../format/leasesFrame.js';

const NAMES = new Map<number, string>(Object.entries(FrameType).map(([k, v]) => [v, k]));

export function* dumpWal(dataDir: string, fsx: Fs = nodeFs): Generator<string> {
  for (const fileNo of listWalFiles(fsx, dataDir)) {
    const file = path.join(walDir(dataDir), walFileName(fileNo));
    const buf = fsx.readFileSync(file);
    const bad = checkWalHeader(buf, fileNo);
    yield `${walFileName(fileNo)}: ${buf.length} bytes${bad ? ` (header: ${bad})` : ''}`;
    if (bad) continue;
    let off = WAL_HEADER_BYTES;
    while (off < buf.length) {
      const p = probeFrame(buf, off, buf.length);
      if (!p.ok) {
        if (p.reason !== 'end') yield `  @${off} stop: ${p.reason}`;
        break;
      }
      yield `  @${off} ${describeFrame(buf, p.frame)}`;
      off += p.frame.size;
    }
  }
  yield* dumpPacks(dataDir, fsx);
}

/** The frames of every pack file (docs/FORMAT.md "Pack files"), after the WAL's. */
function* dumpPacks(dataDir: string, fsx: Fs): Generator<string> {
  for (const pack of listPacks(listPackNamesSync(fsx, dataDir))) {
    const buf = fsx.readFileSync(path.join(packsDir(dataDir), pack.name));
    yield `packs/${pack.name}: ${buf.length} bytes${pack.newest ? ' (newest of its writer)' : ''}`;
    for (let off = 0; off < buf.length;) {
      const p = probeFrame(buf, off, buf.length);
      if (!p.ok) {
        yield `  @${off} stop: ${p.reason}`;
        break;
      }
      yield `  @${off} ${describeFrame(buf, p.frame)}`;
      off += p.frame.size;
    }
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
