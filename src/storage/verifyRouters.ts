// The router part of `spool verify` (src/storage/verify.ts, docs/OPERATIONS.md): checks
// meta/routers.json against the data it describes. While verify scans the newest snapshot and
// every WAL, segment and pack frame, `RouterEvidence` collects which topics are alive (by
// instance id) and which router ids hold progress in which topic (the snapshot's
// `routers_applied`, the forward headers of copy batches, `ROUTER_PROGRESS` frames); then
// `checkRouters` reports a file that is damaged (JSON, CRC, field types), inconsistent
// (duplicate names or ids, an id not below nextId, a bad name, two sources into one dest) or
// missing or older than the data (a router id in some topic's progress that the file never
// handed out: the registry stores nextId before any copy carries a new id), and, as notes,
// routers naming a topic that does not exist or is another instance than the one the router was
// stored with (the server drops them at start). Read-only; CLI process.
import type { Fs } from './fs.js';
import type { SnapshotBody } from './snapshot.js';
import { FrameType } from '../format/constants.js';
import { decodeJsonBody, readAppendHead, type FrameView } from '../format/frame.js';
import { isRouterName, isTopicName } from '../core/names.js';
import { decodeRouterFile, recreatedEnds, routerFilePath, type StoredRouter } from './routerStore.js';

const FILE = 'meta/routers.json';

export class RouterEvidence {
  /** Live topics by instance id: the snapshot's, then the WAL's creates and deletes in order. */
  readonly topics = new Map<number, string>();
  /** Router id → the instance ids of the topics holding its progress. */
  readonly progress = new Map<number, Set<number>>();

  snapshot(body: SnapshotBody | undefined): void {
    for (const t of body?.topics ?? []) {
      this.topics.set(t.id, t.name);
      for (const id of Object.keys(t.routers_applied ?? {})) this.note(Number(id), t.id);
    }
  }

  /** A frame of the WAL (`wal`: topic frames count), of a segment or of a pack. */
  frame(buf: Buffer, f: FrameView, wal: boolean): void {
    if (f.type === FrameType.APPEND) {
      const fwd = readAppendHead(buf, f).fwd;
      if (fwd) this.note(forwardRouterId(fwd), f.topicId);
    } else if (f.type === FrameType.ROUTER_PROGRESS) {
      this.note((decodeJsonBody(buf, f) as { r: number }).r, f.topicId);
    } else if (wal && f.type === FrameType.TOPIC_CREATE) {
      this.topics.set(f.topicId, (decodeJsonBody(buf, f) as { name: string }).name);
    } else if (wal && f.type === FrameType.TOPIC_DELETE) {
      this.topics.delete(f.topicId);
    }
  }

  private note(routerId: number, topicId: number): void {
    let s = this.progress.get(routerId);
    if (!s) this.progress.set(routerId, (s = new Set()));
    s.add(topicId);
  }
}

function forwardRouterId(fwd: Buffer): number {
  try {
    return (JSON.parse(fwd.toString('utf8')) as { r: number }).r;
  } catch {
    return NaN; // a frame whose CRC held but whose header does not parse: reported below
  }
}

/** Problems (damage) and notes about the routers file, given what the data holds. */
export function checkRouters(fsx: Fs, dataDir: string, ev: RouterEvidence, r: { problems: string[]; notes: string[] }): void {
  const p = routerFilePath(dataDir);
  let nextId = 1;
  let routers: StoredRouter[] = [];
  if (fsx.existsSync(p)) {
    const file = decodeRouterFile(fsx.readFileSync(p).toString('utf8'));
    if (typeof file === 'string') return void r.problems.push(`${FILE}: ${file}`);
    ({ nextId, routers } = file);
  }
  checkDefinitions(routers, nextId, (m) => r.problems.push(`${FILE}: ${m}`));
  const live = new Set(ev.topics.values());
  for (const x of routers) {
    const missing = [x.source, x.dest].filter((t) => !live.has(t));
    if (missing.length > 0)
      r.notes.push(`${FILE}: router ${x.name} names ${missing.join(' and ')}, which does not exist; the server drops the router at start`);
    const recreated = recreatedEnds(
      x,
      (t) => live.has(t),
      (t, id) => ev.topics.get(id) === t,
    );
    if (recreated.length > 0)
      r.notes.push(
        `${FILE}: router ${x.name} names ${recreated.join(' and ')}, deleted and created again since it was stored; ` +
          'the server drops the router at start',
      );
  }
  checkProgress(routers, nextId, ev, fsx.existsSync(p), (m) => r.problems.push(m));
}

function checkDefinitions(routers: StoredRouter[], nextId: number, bad: (m: string) => void): void {
  const names = new Set<string>();
  const ids = new Set<number>();
  const sourceOf = new Map<string, StoredRouter>();
  for (const x of routers) {
    if (!isRouterName(x.name)) bad(`router name ${JSON.stringify(x.name)} is not valid`);
    if (names.has(x.name)) bad(`router ${x.name} appears twice`);
    if (ids.has(x.id)) bad(`router id ${x.id} appears twice`);
    names.add(x.name);
    ids.add(x.id);
    if (x.id >= nextId) bad(`router ${x.name} has id ${x.id}, not below nextId ${nextId}`);
    if (!isTopicName(x.source) || !isTopicName(x.dest) || x.source === x.dest)
      bad(`router ${x.name}: source ${x.source} and dest ${x.dest} are not two valid topic names`);
    if (x.guarantee !== 'at_least_once' && x.guarantee !== 'exactly_once') bad(`router ${x.name}: guarantee ${x.guarantee} is not known`);
    const other = sourceOf.get(x.dest);
    if (other && other.source !== x.source)
      bad(`routers ${other.name} and ${x.name} both feed ${x.dest}, from ${other.source} and ${x.source}`);
    sourceOf.set(x.dest, x);
  }
}

/** Every id in the data's progress was handed out by this file; a router's progress is in its dest. */
function checkProgress(routers: StoredRouter[], nextId: number, ev: RouterEvidence, present: boolean, bad: (m: string) => void): void {
  const byId = new Map(routers.map((x) => [x.id, x]));
  for (const [id, holders] of [...ev.progress].sort((a, b) => a[0] - b[0])) {
    const names = [...holders].flatMap((t) => (ev.topics.has(t) ? [ev.topics.get(t)!] : []));
    if (!Number.isSafeInteger(id) || id < 1)
      bad(`router progress with an invalid router id in topic(s) ${[...holders].map((t) => t.toString(16)).join(', ')}`);
    else if (id >= nextId) {
      const where = names.length > 0 ? `topic ${names.join(', ')}` : 'a deleted topic';
      bad(
        `${where} holds copies of router id ${id}, which ${present ? `${FILE} (nextId ${nextId}) never handed out: the file is older than the data` : `no ${FILE} describes: the router definitions are missing`}`,
      );
    } else {
      const x = byId.get(id);
      const stray = x ? names.filter((n) => n !== x.dest) : [];
      if (stray.length > 0) bad(`topic ${stray.join(', ')} holds copies of router ${x!.name} (id ${id}), whose dest is ${x!.dest}`);
    }
  }
}
