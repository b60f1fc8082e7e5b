// The record limits of a router's copy batch on the dest (docs/ARCHITECTURE.md "Routers"): a
// copy section (copySection.ts) skips the JSON parse, so its records get here the checks the
// parser gives an append body's records, with the same allowance for the `_spool_router` stamps
// (at most one per hop) and the same errors, in record order. The texts came from a source that
// took them, so only what a stamp grows can fail: meta bytes, meta keys and record bytes. Runs in
// the dest topic's actor (worker thread); pure.
import { countTopLevelKeys } from '../../core/jsonScan.js';
import { InvariantError } from '../../core/invariant.js';
import { APPEND_RECORD_HEAD_BYTES } from '../../format/constants.js';
import { CorruptionError } from '../../core/corruption.js';
import { payloadBytesOf, readRecordAt, recordExtent } from '../../format/frame.js';
import { fail } from '../../protocol/errors.js';
import { LIMITS, type LimitAllowance, type ParseFailure } from '../topic/appendRecord.js';

/** A copy's meta may exceed the limits by the `_spool_router` key of each hop (at most 8). */
export const ROUTER_STAMPS: LimitAllowance = { metaKeys: 8, metaBytes: 8 * 600 };

const KEYS_MAX = LIMITS.maxMetaKeys + ROUTER_STAMPS.metaKeys;
/** The shortest object with more than KEYS_MAX keys (`{"":0,...}`): a shorter meta cannot. */
const KEYS_OVER_MIN_BYTES = 5 * (KEYS_MAX + 1) + 1;

function tooLarge(index: number, limit: string, message: string): ParseFailure {
  return fail('record_too_large', message, { index, limit });
}

/** What the dest learns from one pass over a copy section's record heads. */
export interface CopySectionScan {
  /** The first record over a limit, as the append parser words it, or undefined. */
  refusal: ParseFailure | undefined;
  /** The records' data + meta bytes (the spec's `bytes` of its records), for the reject caps. */
  bytes: number;
}

/**
 * One pass over the section's record heads (docs/FORMAT.md's record layout): the limits a stamp
 * can grow, in record order, and the payload bytes. A loop of its own, not walkRecordSection's
 * callback: this runs for every copy a dest takes.
 */
export function scanCopySection(section: Buffer, count: number): CopySectionScan {
  let refusal: ParseFailure | undefined;
  let bytes = 0;
  let p = 0;
  const end = section.length;
  const r = recordExtent();
  for (let i = 0; i < count; i++) {
    if (p + APPEND_RECORD_HEAD_BYTES > end) throw new CorruptionError('APPEND frame', 'a record header past the frame body', p);
    p = readRecordAt(section, p, r);
    if (p > end) throw new CorruptionError('APPEND frame', 'a record past the frame body', p);
    const payload = payloadBytesOf(r);
    bytes += payload;
    if (refusal === undefined) refusal = limitRefusal(section, i, r.metaOff, r.metaLen, payload);
  }
  // Sections are built by forwarders only: a malformed one is a bug, not a client's error.
  if (p !== end) throw new InvariantError(`copy section: ${end - p} bytes after ${count} records`);
  return { refusal, bytes };
}

function limitRefusal(section: Buffer, i: number, metaOff: number, metaLen: number, payload: number): ParseFailure | undefined {
  if (metaLen >= 0) {
    if (metaLen > LIMITS.maxMetaBytes + ROUTER_STAMPS.metaBytes)
      return tooLarge(i, 'meta_bytes', `records[${i}].meta is larger than ${LIMITS.maxMetaBytes} bytes`);
    if (metaLen >= KEYS_OVER_MIN_BYTES && countTopLevelKeys(section, metaOff, metaOff + metaLen) > KEYS_MAX)
      return tooLarge(i, 'meta_keys', `records[${i}].meta has more than ${LIMITS.maxMetaKeys} keys`);
  }
  if (payload > LIMITS.maxRecordBytes + ROUTER_STAMPS.metaBytes)
    return tooLarge(i, 'record_bytes', `records[${i}] is larger than ${LIMITS.maxRecordBytes} bytes (data + meta)`);
  return undefined;
}
