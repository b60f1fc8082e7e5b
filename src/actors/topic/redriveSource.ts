// The dead-letter topic's side of a redrive, its reads (docs/QUEUES.md "Redrive"): asked by the
// queue's actor over a peer request for the next batch of records to move back (`redriveRead`,
// read-only): records after a cursor, narrowed to explicit seqs and/or a tag match, taking only
// those whose trailing `$dead_letter_*` stamps name the queue, rendered as append-body records
// with those stamps cut off. Cold texts are read back first (reads.ts parks the read). The
// deletes that follow are redriveDelete.ts. Any topic may be a dead-letter topic, so this is
// topic code. Pure.
import { fail } from '../../protocol/errors.js';
import type { RedriveBatch, RedriveReadRequest } from '../../protocol/messages/rpc.js';
import type { TagMatch } from '../../protocol/messages/router.js';
import type { TopicInstance } from './instance.js';
import type { RecordText } from './recordText.js';
import { SlotState } from './seqIndex.js';

/** One batch: at most this many payload bytes (at least one record), as router batches. */
export const REDRIVE_BATCH_BYTES_MAX = 1024 * 1024;
/** Slots one read looks at when it scans (a bound on the step; the queue asks again from `next`). */
const SCAN_SLOTS_MAX = 65_536;

/**
 * The stamps a dead-letter move adds at the end of a job's meta (deadLetter.ts), anchored at the
 * end of the stored (compact) meta: a stamp group inside a nested object or a string does not end
 * the meta text, so it never matches. The last group wins, as for last-key-wins readers.
 */
const STAMPS =
  /(^\{|,)"\$dead_letter_from":("(?:[^"\\]|\\.)*"),"\$dead_letter_deliveries":\d+,"\$dead_letter_src_seq":\d+(?:,"\$dead_letter_reason":"(?:[^"\\]|\\.)*")?\}$/;

/**
 * When `meta` (compact JSON text) ends with stamps naming `queue`: the meta without them (absent
 * when the stamps were all it held); otherwise undefined (not this queue's dead letter).
 */
export function stripStamps(meta: string, queue: string): { meta: string | undefined } | undefined {
  const m = STAMPS.exec(meta);
  if (!m || JSON.parse(m[2]!) !== queue) return undefined;
  return { meta: m[1] === '{' ? undefined : `${meta.slice(0, m.index)}}` };
}

function tagMatches(t: RecordText, match: TagMatch | null): boolean {
  if (match === null) return true;
  if (t.tagLen === 0) return false; // records without a tag never match (as record delete)
  const tag = JSON.parse(t.buf.toString('utf8', t.tagOff, t.tagOff + t.tagLen)) as string;
  return match.op === 'Eq' ? tag === match.value : tag.startsWith(match.value);
}

/** The record as an append-body entry for the queue: data, tag and node as stored, meta unstamped. */
function recordFor(t: RecordText, meta: string | undefined): Buffer {
  const parts: Buffer[] = [Buffer.from('{"data":'), t.buf.subarray(t.dataOff, t.dataOff + t.dataLen)];
  if (meta !== undefined) parts.push(Buffer.from(`,"meta":${meta}`, 'utf8'));
  if (t.tagLen > 0) parts.push(Buffer.from(',"tag":'), t.buf.subarray(t.tagOff, t.tagOff + t.tagLen));
  if (t.nodeLen > 0) parts.push(Buffer.from(',"node":'), t.buf.subarray(t.nodeOff, t.nodeOff + t.nodeLen));
  parts.push(Buffer.from('}'));
  return Buffer.concat(parts);
}

interface Candidates {
  seqs: number[];
  skipped: number[];
  next: number;
  done: boolean;
}

/** The live records this read looks at, within its bounds (count, bytes, slots). */
function candidates(inst: TopicInstance, req: RedriveReadRequest, untilSeq: number): Candidates {
  const out: Candidates = { seqs: [], skipped: [], next: req.afterSeq, done: false };
  let bytes = 0;
  const full = () => out.seqs.length >= req.maxRecords || bytes >= REDRIVE_BATCH_BYTES_MAX;
  const live = (s: number) => s <= inst.head && inst.index.state(s) === SlotState.LIVE;
  if (req.seqs !== null) {
    const named = req.seqs.filter((s) => s > req.afterSeq);
    for (const s of named) {
      if (full()) return out;
      out.next = s;
      if (!live(s)) out.skipped.push(s);
      else {
        out.seqs.push(s);
        bytes += inst.index.bytes(s);
      }
    }
    out.done = true;
    return out;
  }
  const last = Math.min(untilSeq, req.afterSeq + SCAN_SLOTS_MAX);
  for (let s = Math.max(req.afterSeq, inst.earliest() - 1) + 1; s <= last; s++) {
    if (full()) return out;
    out.next = s;
    if (!live(s)) continue;
    out.seqs.push(s);
    bytes += inst.index.bytes(s);
  }
  out.next = Math.max(last, req.afterSeq);
  out.done = last >= untilSeq;
  return out;
}

/**
 * A redrive read: the records to move (their texts must be in memory: returns the cold seqs to
 * read back first, or the batch). Explicit seqs that are absent or not the queue's are `skipped`.
 */
export function redriveBatch(inst: TopicInstance, req: RedriveReadRequest): { cold: number[] } | { batch: RedriveBatch } {
  const untilSeq = req.untilSeq > 0 ? req.untilSeq : inst.head;
  const c = candidates(inst, req, untilSeq);
  const cold = c.seqs.filter((s) => !inst.index.hasText(s));
  if (cold.length > 0) return { cold };
  const seqs: number[] = [];
  const records: Buffer[] = [];
  for (const s of c.seqs) {
    const t = inst.index.text(s)!;
    const stripped = t.metaLen > 2 ? stripStamps(t.buf.toString('utf8', t.metaOff, t.metaOff + t.metaLen), req.queue) : undefined;
    if (!stripped || !tagMatches(t, req.match)) {
      if (req.seqs !== null) c.skipped.push(s);
      continue;
    }
    seqs.push(s);
    records.push(recordFor(t, stripped.meta));
  }
  c.skipped.sort((x, y) => x - y);
  const batch: RedriveBatch = {
    instanceId: inst.id,
    durability: inst.config.durability,
    untilSeq,
    next: c.next,
    done: c.done,
    seqs,
    records,
    skipped: c.skipped,
  };
  return { batch };
}

/** A read for a topic that does not exist: 404, as the queue's redrive reports it. */
export function noDeadLetterTopic(name: string) {
  return fail('topic_not_found', `dead-letter topic ${name} does not exist`, { topic: name });
}
