// On-disk format constants, gathered in one place (docs/FORMAT.md describes them for people).
// Every WAL frame and every segment frame uses the same layout, so one decoder reads both.

export const WAL_MAGIC = 'SPOOLWAL';
export const WAL_FORMAT_VERSION = 1;
export const WAL_HEADER_BYTES = 32;
export const SEGMENT_MAGIC = 'SPOOLSEG';

/** 16-byte prefix (bodyLen, crc, type, flags, version, reserved) plus the 8-byte topic id. */
export const FRAME_PREFIX_BYTES = 16;
export const FRAME_HEADER_BYTES = 24;
/** A frame claiming a larger body is garbage (a torn or corrupt length), never an allocation. */
export const FRAME_BODY_MAX_BYTES = 80 * 1024 * 1024;
export const FRAME_ALIGN = 8;

export const FrameType = {
  BOOT: 1,
  TOPIC_CREATE: 2,
  TOPIC_CONFIG: 3,
  TOPIC_DELETE: 4,
  APPEND: 5,
  SEQ_RESERVE: 6,
  DELETE: 7,
  FLOORS: 8,
  LEASES: 9,
  /** An ephemeral router dest's progress (its copies have no APPEND frame to carry it). */
  ROUTER_PROGRESS: 10,
  /**
   * Only in compacted segment files, never in the WAL: the frames that follow it stand for a
   * byte range of the segment as first written (docs/FORMAT.md "Compacted segments").
   */
  EXTENT: 11,
} as const;
export type FrameTypeCode = (typeof FrameType)[keyof typeof FrameType];
export const KNOWN_FRAME_TYPES = new Set<number>(Object.values(FrameType));
export const FRAME_BODY_VERSION = 1;

export const FrameFlag = { NEEDS_DURABLE: 1 } as const;

/** APPEND body: fixed header then one 12-byte header per record followed by its bytes. */
export const APPEND_HEAD_BYTES = 24;
export const APPEND_RECORD_HEAD_BYTES = 12;
/**
 * APPEND head flags (u16 at body offset 22, 0 before routers). FORWARD: a router copy batch; a
 * u32 length and the forward header's JSON follow the idempotency key (docs/FORMAT.md).
 * REDRIVE: jobs moved back from a dead-letter topic; a u32 length and the redrive header's JSON
 * follow in the same place (a batch is never both).
 */
export const AppendFlag = { FORWARD: 1, REDRIVE: 2 } as const;
/** metaLen value meaning "this record has no meta". */
export const META_ABSENT = 0xffffffff;

export const TWO_32 = 0x1_0000_0000;

/** EXTENT body: u64 original offset, u32 original length, u32 bytes of the frames that follow. */
export const EXTENT_BODY_BYTES = 16;

/** LEASES body: u32 event count, u32 reserved, then one event (fixed head + node bytes) each. */
export const LEASES_HEAD_BYTES = 8;
export const LEASE_EVENT_BYTES = 40;
export const LeaseEventKind = { CLAIMED: 1, EXTENDED: 2, RELEASED: 3 } as const;
export const LeaseEventFlag = { VIA_WORK: 1 } as const;
