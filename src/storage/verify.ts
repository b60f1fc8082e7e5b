// Offline check of a data directory (`spool verify`, docs/OPERATIONS.md): every WAL frame's CRC,
// every segment frame's CRC and its agreement with the file it is in (topic id, seq order,
// first seq), every pack frame's CRC (APPEND frames only, each topic's seqs in order across the
// packs; a torn tail only in the newest pack of a writer), every snapshot's CRC and invariants, and the seq reservations (no APPEND frame
// of a reserved topic in the WAL past its ceiling), and the routers file against the data
// (verifyRouters.ts). Read-only: it never truncates or repairs.
// A torn tail (the end of the newest WAL file or segment, a crash's normal leftover) is a
// note, not damage: recovery drops it. But bytes the newest snapshot records as durable (the runs
// it places in a pack, the fsynced size of a topic's newest own segment file) were fsynced before it was
// written: a bad or missing byte there is damage, as recovery refuses it. Anything else found is
// a problem, and the CLI exits 1. Given where the WAL ends whole (`walEnd`: a backup's point, for
// `spool restore`), a WAL that does not end exactly there, frames whole up to it, is damage too:
// a backup's WAL is read up to its point, so a torn last frame there is a damaged file, not a
// crash's leftover.
import path from 'node:path';
import type { Fs } from './fs.js';
import {
  metaDir,
  packsDir,
  parseSegmentFileName,
  parseTopicDirName,
  segmentFileName,
  topicsDir,
  walDir,
  walFileName,
} from '../format/layout.js';
import { listPackNamesSync, listPacks, validPrefix } from './packScan.js';
import { decodeSnapshot, type SnapshotBody } from './snapshot.js';
import { filesThatMustExist, runsClipper, type SectionPart } from './snapshotSectionFormat.js';
import type { TopicPart } from '../format/topicPart.js';
import type { WalPosition } from '../protocol/messages/wal.js';
import { checkWalHeader, listWalFiles } from '../wal/files.js';
import { FrameType, WAL_HEADER_BYTES } from '../format/constants.js';
import { decodeJsonBody, probeFrame, readAppendHead, readU64, type FrameView } from '../format/frame.js';
import { findValidFrameAfter, laterFileHoldsDataSync } from '../wal/scanRepair.js';
import { RouterEvidence, checkRouters } from './verifyRouters.js';

export interface VerifyReport {
  problems: string[];
  notes: string[];
  walFiles: number;
  walFrames: number;
  segments: number;
  segmentFrames: number;
  packs: number;
  packFrames: number;
  snapshots: number;
  topics: number;
}

/** Per-topic facts gathered from the WAL, for the reservation check. */
interface WalTopic {
  /** Highest SEQ_RESERVE ceiling (or the snapshot's `reserved`). */
  ceiling: number;
  /** Highest seq appended while the topic was not `fsync` (fsync topics reserve nothing). */
  maxReservedSeq: number;
  fsync: boolean;
}

const SNAPSHOT_RE = /^snapshot-\d{20}-\d{12}\.snap$/;

export interface VerifyOptions {
  /** Where the WAL is known to end, every frame before it whole (a backup's BACKUP_POINT). */
  walEnd?: WalPosition;
}

export function verifyDataDir(fsx: Fs, dataDir: string, opts: VerifyOptions = {}): VerifyReport {
  const r: VerifyReport = {
    problems: [],
    notes: [],
    walFiles: 0,
    walFrames: 0,
    segments: 0,
    segmentFrames: 0,
    packs: 0,
    packFrames: 0,
    snapshots: 0,
    topics: 0,
  };
  const ev = new RouterEvidence();
  const { newest, fellBack } = checkSnapshots(fsx, dataDir, r);
  ev.snapshot(newest);
  const deleted = new Set<number>();
  checkWal(fsx, dataDir, r, newest, ev, deleted, opts.walEnd);
  checkSegments(fsx, dataDir, r, ev, newest, fellBack ? undefined : deleted);
  checkPacks(fsx, dataDir, r, ev, newest);
  checkRouters(fsx, dataDir, ev, r);
  return r;
}

function checkPacks(fsx: Fs, dataDir: string, r: VerifyReport, ev: RouterEvidence, newest: SnapshotBody | undefined): void {
  /** Per topic, the last seq seen in the packs so far (scan order is recovery's). */
  const last = new Map<number, number>();
  /** Per pack number, where its whole frames end. */
  const validEnd = new Map<number, number>();
  /** Per pack being written at the newest snapshot's cut, the bytes of it fsynced by then. */
  const fsynced = new Map<string, number>();
  for (const p of newest?.packs ?? []) if (p.tail?.[2] !== undefined) fsynced.set(p.tail[0], p.tail[2]);
  let repeats = 0;
  for (const p of listPacks(listPackNamesSync(fsx, dataDir))) {
    r.packs++;
    const where = `pack ${p.name}`;
    const buf = fsx.readFileSync(path.join(packsDir(dataDir), p.name));
    const { end, reason } = validPrefix(buf);
    for (let off = 0; off < Math.min(end, buf.length);) {
      const f = probeFrame(buf, off, buf.length, false);
      if (!f.ok) break;
      const h = readAppendHead(buf, f.frame);
      if (h.firstSeq <= (last.get(f.frame.topicId) ?? 0)) repeats++;
      last.set(f.frame.topicId, Math.max(last.get(f.frame.topicId) ?? 0, h.firstSeq + h.count - 1));
      ev.frame(buf, f.frame, false);
      r.packFrames++;
      off += f.frame.size;
    }
    validEnd.set(p.no, end);
    const synced = fsynced.get(p.name) ?? 0;
    const why = reason ?? 'the last frame lacks its padding';
    if (end < synced) {
      // Fsynced before the newest snapshot was written: recovery refuses it, as here.
      const what = end === buf.length ? `whole frames end at ${end}` : `damaged at offset ${end} (${why})`;
      r.problems.push(`${where}: ${what}, below the ${synced} bytes the newest snapshot records as fsynced`);
      continue;
    }
    if (end === buf.length) continue;
    // The newest pack may be torn anywhere after what a checkpoint fsynced (writeback need not
    // keep order); what the newest snapshot places in it is checked below.
    if (p.newest && (reason === undefined || !reason.startsWith('a frame')))
      r.notes.push(`${where}: torn tail at offset ${end} (${why}); recovery truncates it`);
    else r.problems.push(`${where}: damaged at offset ${end} (${why})${p.newest ? '' : ' in a sealed pack'}`);
  }
  // What the newest snapshot places in the packs, as far as recovery trusts it (runsClipper: in
  // whole packs, and up to the fsynced bytes of the pack being written), was fsynced before it
  // was written, so it must be there, whole; a torn tail holds only frames written after the
  // snapshot's cut (the WAL has them), which runs may name too (taken after the flush).
  const clip = newest?.packs ? runsClipper(newest.packs) : (_: number[], len: number) => len; // version 1: no runs
  for (const t of newest?.topics ?? []) {
    const runs = [...((t as { runs?: readonly number[] }).runs ?? [])];
    const trusted = clip(runs, runs.length);
    for (let i = 0; i + 2 < trusted; i += 3) {
      const [no, off, len] = [runs[i]!, runs[i + 1]!, runs[i + 2]!];
      const end = validEnd.get(no);
      const lost =
        end === undefined
          ? `has frames in pack ${no}, which is not there`
          : off + len > end
            ? `has frames at bytes ${off}..${off + len} of pack ${no}, whose whole frames end at ${end}`
            : undefined;
      if (lost === undefined) continue;
      r.problems.push(`snapshot: topic ${t.name} ${lost}`); // its first such run says enough
      break;
    }
  }
  if (repeats > 0) r.notes.push(`packs: ${repeats} frame(s) repeat seqs of an earlier frame of their topic; recovery keeps the first copy`);
}

/** The newest snapshot that reads; `fellBack` when a newer one is damaged (recovery would use this one too). */
function checkSnapshots(fsx: Fs, dataDir: string, r: VerifyReport): { newest: SnapshotBody | undefined; fellBack: boolean } {
  const dir = metaDir(dataDir);
  if (!fsx.existsSync(dir)) return { newest: undefined, fellBack: false };
  const names = fsx
    .readdirSync(dir)
    .filter((n) => SNAPSHOT_RE.test(n))
    .sort()
    .reverse();
  let newest: SnapshotBody | undefined;
  let fellBack = false;
  for (const n of names) {
    r.snapshots++;
    const body = decodeSnapshot(fsx.readFileSync(path.join(dir, n)));
    if (!body) {
      r.problems.push(`snapshot ${n}: damaged (bad magic, version, length or CRC)`);
      fellBack ||= newest === undefined;
      continue;
    }
    newest ??= body;
    checkSnapshotBody(n, body, r);
  }
  r.topics = newest?.topics.length ?? 0;
  return { newest, fellBack };
}

function checkSnapshotBody(n: string, body: SnapshotBody, r: VerifyReport): void {
  const bad = (m: string) => r.problems.push(`snapshot ${n}: ${m}`);
  const m = /^snapshot-(\d{20})-(\d{12})\.snap$/.exec(n)!;
  if (Number(m[1]) !== body.cut.fileNo || Number(m[2]) !== body.cut.offset)
    bad(`its name disagrees with its cut ${body.cut.fileNo}:${body.cut.offset}`);
  if (
    body.previousCut &&
    (body.previousCut.fileNo > body.cut.fileNo ||
      (body.previousCut.fileNo === body.cut.fileNo && body.previousCut.offset > body.cut.offset))
  ) {
    bad('previousCut is after cut');
  }
  const ids = new Set<number>();
  const names = new Set<string>();
  for (const t of body.topics) {
    if (ids.has(t.id)) bad(`topic id ${t.id} appears twice`);
    if (names.has(t.name)) bad(`topic ${t.name} appears twice`);
    ids.add(t.id);
    names.add(t.name);
    checkTopicPart(t, (msg) => bad(`topic ${t.name}: ${msg}`));
  }
}

function checkTopicPart(t: TopicPart, bad: (m: string) => void): void {
  if (!Number.isSafeInteger(t.reserved) || t.reserved < 0) bad(`reserved ${t.reserved} is not a seq`);
  if (t.dead_below !== undefined && t.dead_below > t.reserved + 1)
    bad(`dead_below ${t.dead_below} is above reserved + 1 (${t.reserved + 1})`);
  if (t.evict_floor !== undefined && t.evict_floor > t.reserved + 1) bad(`evict_floor ${t.evict_floor} is above reserved + 1`);
  let prev = (t.dead_below ?? 1) - 1;
  for (const [a, b] of t.deleted ?? []) {
    if (!(a <= b)) bad(`deleted range [${a}, ${b}] is reversed`);
    if (a <= prev) bad(`deleted range [${a}, ${b}] overlaps or is out of order`);
    if (b > t.reserved) bad(`deleted range [${a}, ${b}] is above reserved ${t.reserved}`);
    prev = b;
  }
  if (t.queue) {
    for (const [seq] of t.queue.leases) if (seq > t.reserved) bad(`a lease on seq ${seq} above reserved ${t.reserved}`);
  }
}

function checkWal(
  fsx: Fs,
  dataDir: string,
  r: VerifyReport,
  snap: SnapshotBody | undefined,
  ev: RouterEvidence,
  /** Filled with the ids of the topic instances a TOPIC_DELETE frame in the WAL deletes. */
  deleted: Set<number>,
  walEnd?: WalPosition,
): void {
  const files = listWalFiles(fsx, dataDir);
  if (walEnd) checkWalEnd(files, r, snap, walEnd);
  const topics = new Map<number, WalTopic>();
  for (const t of snap?.topics ?? []) topics.set(t.id, { ceiling: t.reserved, maxReservedSeq: 0, fsync: t.config.durability === 'fsync' });
  for (let i = 0; i < files.length; i++) {
    const fileNo = files[i]!;
    const name = walFileName(fileNo);
    const buf = fsx.readFileSync(path.join(walDir(dataDir), name));
    r.walFiles++;
    if (walEnd?.fileNo === fileNo && buf.length !== walEnd.offset)
      r.problems.push(`wal ${name}: ${buf.length} bytes long, though the WAL ends at ${walEnd.fileNo}:${walEnd.offset}`);
    const headerErr = checkWalHeader(buf, fileNo);
    if (headerErr) {
      if (buf.subarray(WAL_HEADER_BYTES).every((b) => b === 0))
        r.notes.push(`wal ${name}: ${headerErr}, holds no frame (a creation cut short)`);
      else r.problems.push(`wal ${name}: ${headerErr}`);
      continue;
    }
    let off = WAL_HEADER_BYTES;
    // The file a known end is in holds whole frames up to that end (its length is checked above).
    const whole = walEnd?.fileNo === fileNo ? walEnd.offset : 0;
    while (off < buf.length) {
      const p = probeFrame(buf, off, buf.length);
      if (!p.ok) {
        if (off < whole) {
          r.problems.push(
            `wal ${name}: damaged frame at offset ${off} (${p.reason}), before the end ${walEnd!.fileNo}:${whole} where its frames end whole`,
          );
          break;
        }
        // The log's end: only zeros from here on (a pre-allocated file). A stray byte in them is
        // what recovery takes for a torn tail (it scans to the file's end), so it is one here too.
        if (p.reason === 'end' && buf.subarray(off).every((b) => b === 0)) break;
        // A pre-created next file (the WAL's reserve) holds only zeros: no sign this one was complete.
        const later = findValidFrameAfter(buf, off) >= 0 || laterFileHoldsDataSync(fsx, walDir(dataDir), files.slice(i + 1));
        if (later) r.problems.push(`wal ${name}: damaged frame at offset ${off} (${p.reason}) with frames after it`);
        else r.notes.push(`wal ${name}: torn tail at offset ${off} (${p.reason}); recovery drops ${buf.length - off} bytes`);
        break;
      }
      r.walFrames++;
      if (p.frame.type === FrameType.TOPIC_DELETE) deleted.add(p.frame.topicId);
      noteReservation(buf, p.frame, topics);
      ev.frame(buf, p.frame, true);
      off += p.frame.size;
    }
  }
  // A frame may precede the SEQ_RESERVE submitted in the same turn, so the check is on totals:
  // after a crash the head restarts at the ceiling, which must cover every seq in the WAL.
  for (const [id, t] of topics) {
    if (t.maxReservedSeq > t.ceiling)
      r.problems.push(`wal: topic ${id.toString(16)} has seq ${t.maxReservedSeq} in the WAL above its reserved ceiling ${t.ceiling}`);
  }
}

/** The WAL ends at `end`: its file is there and that long, no file follows it, the snapshot's cut is not after it. */
function checkWalEnd(files: number[], r: VerifyReport, snap: SnapshotBody | undefined, end: WalPosition): void {
  const at = `${end.fileNo}:${end.offset}`;
  if (!files.includes(end.fileNo)) r.problems.push(`wal ${walFileName(end.fileNo)}: missing, though the WAL ends in it (at ${at})`);
  for (const n of files.filter((f) => f > end.fileNo)) r.problems.push(`wal ${walFileName(n)}: past the WAL's end ${at}`);
  if (snap && (snap.cut.fileNo > end.fileNo || (snap.cut.fileNo === end.fileNo && snap.cut.offset > end.offset)))
    r.problems.push(`snapshot: its cut ${snap.cut.fileNo}:${snap.cut.offset} is after the WAL's end ${at}`);
}

/** SEQ_RESERVE raises a topic's ceiling; APPENDs of a non-fsync topic must end up under it. */
function noteReservation(buf: Buffer, f: FrameView, topics: Map<number, WalTopic>): void {
  const t = topics.get(f.topicId) ?? { ceiling: 0, maxReservedSeq: 0, fsync: false };
  topics.set(f.topicId, t);
  if (f.type === FrameType.SEQ_RESERVE) t.ceiling = Math.max(t.ceiling, readU64(buf, f.bodyOff));
  else if (f.type === FrameType.TOPIC_CREATE || f.type === FrameType.TOPIC_CONFIG) {
    const body = decodeJsonBody(buf, f) as { config?: { durability?: string } };
    t.fsync = body.config?.durability === 'fsync';
  } else if (f.type === FrameType.APPEND && !t.fsync) {
    const h = readAppendHead(buf, f);
    t.maxReservedSeq = Math.max(t.maxReservedSeq, h.firstSeq + h.count - 1);
  }
}

/**
 * `deleted`: the topic instances the WAL deletes, when the files the newest snapshot lists must
 * be there (undefined: a newer snapshot is damaged, and recovery, falling back, does not ask).
 */
function checkSegments(
  fsx: Fs,
  dataDir: string,
  r: VerifyReport,
  ev: RouterEvidence,
  newest: SnapshotBody | undefined,
  deleted: ReadonlySet<number> | undefined,
): void {
  const root = topicsDir(dataDir);
  // What the newest snapshot records of a topic's newest own file ([first seq, bytes]: all of a
  // quiet topic's file, what a busy topic's checkpoint fsynced of it): those bytes were fsynced
  // before it was written, so nothing below them is a torn tail. And the files it lists as
  // holding live records (`files`; a quiet topic's one file), which must be there, each with at
  // least those bytes (docs/FORMAT.md "Snapshots").
  const durable = new Map<number, readonly [number, number]>();
  const must = new Map<number, readonly number[]>();
  for (const t of newest?.topics ?? []) {
    const { own } = t as SectionPart;
    if (own) durable.set(t.id, own);
    const files = filesThatMustExist(t as SectionPart);
    if (files) must.set(t.id, files);
  }
  const dirNames = fsx.existsSync(root) ? fsx.readdirSync(root).sort() : [];
  if (deleted) {
    const dirs = new Set(dirNames.map(parseTopicDirName));
    for (const id of must.keys())
      if (!dirs.has(id) && !deleted.has(id))
        r.problems.push(
          `topic ${id.toString(16).padStart(12, '0')}: its directory is missing, with the segment files the newest snapshot lists`,
        );
  }
  for (const dirName of dirNames) {
    const topicId = parseTopicDirName(dirName);
    if (topicId === undefined) continue;
    const segs = fsx
      .readdirSync(path.join(root, dirName))
      .map((n) => ({ n, first: parseSegmentFileName(n) }))
      .filter((s): s is { n: string; first: number } => s.first !== undefined)
      .sort((a, b) => a.first - b.first);
    let lastSeq = 0;
    const own = durable.get(topicId);
    const listed = must.get(topicId) ?? [];
    if (deleted)
      for (let i = 0; i < listed.length; i += 2)
        if (!segs.some((s) => s.first === listed[i]))
          r.problems.push(
            `segment ${dirName}/${segmentFileName(listed[i]!)}: missing; the newest snapshot lists it as a segment file of a live topic`,
          );
    segs.forEach((s, k) => {
      r.segments++;
      const where = `segment ${dirName}/${s.n}`;
      const buf = fsx.readFileSync(path.join(root, dirName, s.n));
      let covered = own?.[0] === s.first ? own[1] : 0;
      for (let i = 0; i < listed.length; i += 2) if (listed[i] === s.first) covered = Math.max(covered, listed[i + 1]!);
      let off = 0;
      let first = true;
      let compacted = false;
      while (off < buf.length) {
        const p = probeFrame(buf, off, buf.length);
        if (!p.ok) {
          if (off < covered && !compacted)
            r.problems.push(
              `${where}: damaged frame at offset ${off} (${p.reason}), below the ${covered} bytes the newest snapshot records as durable`,
            );
          else if (p.reason === 'end' && buf.subarray(off).every((b) => b === 0)) break;
          else if (k === segs.length - 1 && !compacted && findValidFrameAfter(buf, off) < 0)
            r.notes.push(`${where}: torn tail at offset ${off} (${p.reason}); recovery truncates it`);
          else r.problems.push(`${where}: damaged frame at offset ${off} (${p.reason})${compacted ? ' in a compacted segment' : ''}`);
          break;
        }
        const f = p.frame;
        if (f.type === FrameType.EXTENT && f.topicId === topicId) {
          // A compacted segment (docs/FORMAT.md "Compacted segments"): the frames after it follow.
          if (off === 0) compacted = true;
          off += f.size;
          continue;
        }
        if (f.type !== FrameType.APPEND) r.problems.push(`${where} @${off}: a frame of type ${f.type}, not APPEND`);
        else if (f.topicId !== topicId)
          r.problems.push(`${where} @${off}: a frame of topic ${f.topicId.toString(16)} in the directory of ${dirName}`);
        else {
          const h = readAppendHead(buf, f);
          if (first && h.firstSeq < s.first)
            r.problems.push(`${where}: first frame starts at seq ${h.firstSeq}, below the file's first seq ${s.first}`);
          if (h.firstSeq <= lastSeq) r.problems.push(`${where} @${off}: seqs ${h.firstSeq}.. do not follow ${lastSeq}`);
          lastSeq = h.firstSeq + h.count - 1;
          ev.frame(buf, f, false);
        }
        first = false;
        r.segmentFrames++;
        off += f.size;
      }
      // Whole frames, but fewer bytes than the snapshot records as durable: a file cut short.
      if (off === buf.length && off < covered && !compacted)
        r.problems.push(
          `${where}: whole frames end at ${off}, below the ${covered} bytes the newest snapshot records as durable (cut short)`,
        );
    });
  }
}
