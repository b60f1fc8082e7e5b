// The record limits of a router's copy batch on the dest (docs/ARCHITECTURE.md "Routers"): a
// copy section (copySection.ts) skips the JSON parse, so its records get here the checks the
// parser gives an append body's records, with the same allowance for the `_spool_router` stamps
// (at most one per hop) and the same errors, in record order. The texts came from a source that
// took them, so only what a stamp grows can fail: meta bytes, meta keys and record bytes. Runs in
// the dest topic's actor (worker thread); pure.
import { countTopLevelKeys } from '../../core/jsonScan.js';
import { InvariantError } from '../../core/invariant.js';
import { payloadBytesOf, walkRecordSection } from '../../format/frame.js';
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

/** The first record of the section over a limit, as the append parser words it, or undefined. */
export function copyLimitRefusal(section: Buffer, count: number): ParseFailure | undefined {
  let refusal: ParseFailure | undefined;
  const end = walkRecordSection(section, 0, section.length, count, (i, r) => {
    if (refusal) return;
    if (r.metaLen >= 0) {
      if (r.metaLen > LIMITS.maxMetaBytes + ROUTER_STAMPS.metaBytes)
        refusal = tooLarge(i, 'meta_bytes', `records[${i}].meta is larger than ${LIMITS.maxMetaBytes} bytes`);
      else if (r.metaLen >= KEYS_OVER_MIN_BYTES && countTopLevelKeys(section, r.metaOff, r.metaOff + r.metaLen) > KEYS_MAX)
        refusal = tooLarge(i, 'meta_keys', `records[${i}].meta has more than ${LIMITS.maxMetaKeys} keys`);
    }
    if (!refusal && r.dataLen + Math.max(0, r.metaLen) > LIMITS.maxRecordBytes + ROUTER_STAMPS.metaBytes)
      refusal = tooLarge(i, 'record_bytes', `records[${i}] is larger than ${LIMITS.maxRecordBytes} bytes (data + meta)`);
  });
  // Sections are built by forwarders only: a malformed one is a bug, not a client's error.
  if (end !== section.length) throw new InvariantError(`copy section: ${section.length - end} bytes after ${count} records`);
  return refusal;
}

/** The section's data + meta bytes (the spec's `bytes` of its records), for the reject caps. */
export function copyPayloadBytes(section: Buffer, count: number): number {
  let bytes = 0;
  walkRecordSection(section, 0, section.length, count, (_i, r) => {
    bytes += payloadBytesOf(r);
  });
  return bytes;
}
