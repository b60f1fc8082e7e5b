// The compact lanes of the request channel (docs/ARCHITECTURE.md "Thread crossings"): the hot
// requests (a plain append, a state GET, a diff by seq, an unparsed claim or ack body) and the plain results (a status, the
// reply bytes, the performance fields, the class) cross as one flat array of numbers and one of
// strings per batch instead of one structured-cloned object each. Cloning an object costs V8's
// serializer a property name per field and the deserializer a map transition per field; at 64
// clients on single-record appends the two were ~10 % of the topic worker and ~4 % of main.
// Everything else (and any request or result with a field these lanes do not carry) crosses as
// an object, in order, behind a COLD code. Pure functions, run on main and on the worker threads.
import type {
  AppendRequest,
  ChannelRequest,
  DiffRequest,
  OkResult,
  PerfFields,
  QueueBodyRequest,
  StateRequest,
  WireRequest,
} from './messages/rpc.js';

/** Lane codes; COLD means "the next object of the batch's object list". */
export const COLD = 0;
const APPEND = 1;
const STATE = 2;
const DIFF = 3;
const CLAIM_BODY = 4;
const ACK_BODY = 5;
const OK = 1;

/** Where a decoder is in a batch's lanes. */
export interface LaneCursor {
  nums: number[];
  strs: string[];
  n: number;
  s: number;
}

/**
 * Appends with any of these set are not plain: they cross as objects. The object makes a new
 * field of AppendRequest a compile error here; `appendHasExtras` must then test it too (the
 * hotLanes unit test checks each name listed here against it). The tests are property reads,
 * not a loop over the names: keyed loads of varying names are megamorphic (~20 ns each) and
 * ran for every request and result.
 */
type AppendExtras = Exclude<keyof AppendRequest, 'op' | 'topic' | 'body' | 'returnSeqs' | 'headerIdemKey'>;
const APPEND_EXTRAS = { stamped: 1, forward: 1, redrive: 1, auth: 1 } as const satisfies Record<AppendExtras, 1>;
export const APPEND_EXTRA_NAMES = Object.keys(APPEND_EXTRAS) as AppendExtras[];

function appendHasExtras(r: AppendRequest): boolean {
  return r.stamped !== undefined || r.forward !== undefined || r.redrive !== undefined || r.auth !== undefined;
}

/**
 * Every field of a state and a diff request, so that a new one is a compile error here until
 * the lanes carry it (or the request crosses as an object when it is set).
 */
const STATE_FIELDS = { op: 1, topic: 1, touch: 1 } as const satisfies Record<keyof StateRequest, 1>;
const DIFF_FIELDS = {
  op: 1,
  topic: 1,
  fromSeq: 1,
  limit: 1,
  nodes: 1,
  includeTags: 1,
  includeMeta: 1,
  waitMs: 1,
  maxBatchBytes: 1,
  fromTsMs: 1,
  waitId: 1,
} as const satisfies Record<keyof DiffRequest, 1>;
void STATE_FIELDS;
void DIFF_FIELDS;

/**
 * Encodes `req` onto the lanes when it is a hot request whose body (for an append or a queue
 * body) travels in the batch's shared buffer; false when it must cross as an object.
 */
export function encodeRequest(req: ChannelRequest, sharedBody: boolean, nums: number[], strs: string[]): boolean {
  switch (req.op) {
    case 'claimBody':
    case 'ackBody':
      if (!sharedBody) return false;
      // A claim's waitId crosses as 0 when absent.
      if (req.op === 'claimBody') nums.push(CLAIM_BODY, req.waitId ?? 0);
      else nums.push(ACK_BODY);
      strs.push(req.topic);
      return true;
    case 'append': {
      if (!sharedBody) return false;
      if (appendHasExtras(req)) return false;
      const idem = req.headerIdemKey;
      nums.push(APPEND, (req.returnSeqs ? 1 : 0) | (idem !== undefined ? 2 : 0));
      strs.push(req.topic);
      if (idem !== undefined) strs.push(idem);
      return true;
    }
    case 'state':
      nums.push(STATE, req.touch ? 1 : 0);
      strs.push(req.topic);
      return true;
    case 'diff':
      if (req.nodes !== null || req.fromTsMs !== undefined) return false;
      // waitId (a long-poll's id on main, from 1) crosses as 0 when absent.
      nums.push(
        DIFF,
        req.fromSeq,
        req.limit,
        (req.includeTags ? 1 : 0) | (req.includeMeta ? 2 : 0),
        req.waitMs,
        req.maxBatchBytes,
        req.waitId ?? 0,
      );
      strs.push(req.topic);
      return true;
    default:
      return false;
  }
}

/**
 * The next request of the lanes, or undefined at a COLD code (the caller takes its next object).
 * An append or a queue body comes back with a null body: the caller sets its view of the shared
 * buffer.
 */
export function decodeRequest(c: LaneCursor): WireRequest | undefined {
  const code = c.nums[c.n++]!;
  switch (code) {
    case COLD:
      return undefined;
    case APPEND: {
      const flags = c.nums[c.n++]!;
      const topic = c.strs[c.s++]!;
      const headerIdemKey = flags & 2 ? c.strs[c.s++]! : undefined;
      return { op: 'append', topic, body: null, returnSeqs: (flags & 1) !== 0, headerIdemKey };
    }
    case STATE: {
      const r: StateRequest = { op: 'state', topic: c.strs[c.s++]!, touch: c.nums[c.n++] === 1 };
      return r;
    }
    case DIFF: {
      const nums = c.nums;
      const at = c.n;
      c.n += 6;
      const flags = nums[at + 2]!;
      const waitId = nums[at + 5]!;
      const r: DiffRequest = {
        op: 'diff',
        topic: c.strs[c.s++]!,
        fromSeq: nums[at]!,
        limit: nums[at + 1]!,
        nodes: null,
        includeTags: (flags & 1) !== 0,
        includeMeta: (flags & 2) !== 0,
        waitMs: nums[at + 3]!,
        maxBatchBytes: nums[at + 4]!,
      };
      if (waitId !== 0) r.waitId = waitId;
      return r;
    }
    case CLAIM_BODY: {
      const waitId = c.nums[c.n++]!;
      const r: Omit<QueueBodyRequest, 'body'> & { body: null } = { op: 'claimBody', topic: c.strs[c.s++]!, body: null };
      if (waitId !== 0) r.waitId = waitId;
      return r;
    }
    case ACK_BODY:
      return { op: 'ackBody', topic: c.strs[c.s++]!, body: null };
    default:
      throw new Error(`request lane code ${code} is unknown`);
  }
}

/** Results with any of these set cross as objects (`stamps` rides beside the lanes). */
type ResultExtras = Exclude<keyof OkResult, 'ok' | 'status' | 'json' | 'perf' | 'durability' | 'stamps'>;
const RESULT_EXTRAS = {
  watch: 1,
  seek: 1,
  unknownFields: 1,
  forward: 1,
  routers: 1,
  redrive: 1,
} as const satisfies Record<ResultExtras, 1>;
export const RESULT_EXTRA_NAMES = Object.keys(RESULT_EXTRAS) as ResultExtras[];

/** Tests every name of RESULT_EXTRAS (as `appendHasExtras` does its list). */
function resultHasExtras(r: OkResult): boolean {
  return (
    r.watch !== undefined ||
    r.seek !== undefined ||
    r.unknownFields !== undefined ||
    r.forward !== undefined ||
    r.routers !== undefined ||
    r.redrive !== undefined
  );
}

/**
 * The performance fields, in their mask bits' order (wal_append_ms is bit 0): a new field of
 * PerfFields is a compile error here until encodeResult and decodeResult carry it (the unit test
 * round-trips each name listed here).
 */
const PERF_FIELDS = { wal_append_ms: 1, fsync_ms: 1, records_scanned: 1, throttle_wait_ms: 1 } as const satisfies Record<
  keyof PerfFields,
  1
>;
export const PERF_FIELD_NAMES = Object.keys(PERF_FIELDS) as (keyof PerfFields)[];

const CLASSES = [undefined, 'ephemeral', 'memory', 'disk', 'fsync'] as const;

/**
 * Encodes an ok result whose bytes travel in the batch's shared buffer onto the lanes; false
 * when it must cross as an object. The caller moves its bytes.
 */
export function encodeResult(r: OkResult, nums: number[]): boolean {
  if (resultHasExtras(r)) return false;
  const { wal_append_ms: wal, fsync_ms: fsync, records_scanned: scanned, throttle_wait_ms: throttle } = r.perf;
  const mask =
    (wal !== undefined ? 1 : 0) | (fsync !== undefined ? 2 : 0) | (scanned !== undefined ? 4 : 0) | (throttle !== undefined ? 8 : 0);
  const cls = r.durability === undefined ? 0 : CLASSES.indexOf(r.durability);
  nums.push(OK, r.status, cls, mask);
  if (wal !== undefined) nums.push(wal);
  if (fsync !== undefined) nums.push(fsync);
  if (scanned !== undefined) nums.push(scanned);
  if (throttle !== undefined) nums.push(throttle);
  return true;
}

/**
 * The next result of the lanes with `json` set to `bytes`, or undefined at a COLD code (the
 * caller takes its next object).
 */
export function decodeResult(c: LaneCursor, bytes: Uint8Array): OkResult | undefined {
  const code = c.nums[c.n++]!;
  if (code === COLD) return undefined;
  if (code !== OK) throw new Error(`result lane code ${code} is unknown`);
  const nums = c.nums;
  const status = nums[c.n++] as 200 | 201;
  const cls = CLASSES[nums[c.n++]!];
  const mask = nums[c.n++]!;
  const perf: PerfFields = {};
  if (mask & 1) perf.wal_append_ms = nums[c.n++]!;
  if (mask & 2) perf.fsync_ms = nums[c.n++]!;
  if (mask & 4) perf.records_scanned = nums[c.n++]!;
  if (mask & 8) perf.throttle_wait_ms = nums[c.n++]!;
  const r: OkResult = { ok: true, status, json: bytes, perf };
  if (cls !== undefined) r.durability = cls;
  return r;
}
