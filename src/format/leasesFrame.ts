// LEASES frame codec (docs/FORMAT.md "LEASES body"): the lifecycle events of one queue's
// leases log, one frame per claim pass, nack, extend or `/work` release. Binary, little-endian:
//   body: u32 count, u32 reserved, then per event
//     0 u8 kind (1 claimed, 2 extended, 3 released)   1 u8 flags (bit0: leased on a /work stream)
//     2 u16 nodeLen   4 u32 deliveries   8 u64 seq   16 u64 atMs (deadline; released: ready-at, 0 = now)
//    24 u32 epoch    28 u32 rand        32 u64 lease counter   40 node (UTF-8, claimed only)
// The lease id is rebuilt from (epoch, counter, rand). Pure functions over buffers.
import { FRAME_HEADER_BYTES, FrameType, LEASE_EVENT_BYTES, LEASES_HEAD_BYTES, LeaseEventFlag } from './constants.js';
import { frameBuffer, readU64, sealFrame, writeU64, type FrameView } from './frame.js';
import { CorruptionError } from '../core/corruption.js';

export interface LeaseEvent {
  kind: number;
  seq: number;
  /** claimed/extended: the deadline; released: when the job is ready again (0: at once). */
  atMs: number;
  deliveries: number;
  epoch: number;
  no: number;
  rand: number;
  viaWork: boolean;
  node: string;
}

export function encodeLeases(topicId: number, events: readonly LeaseEvent[]): Buffer {
  // One loop per pass, no Buffer per event: a pass's events mostly share one node, whose UTF-8
  // length is measured once (per-event Buffer.from and a forEach closure were ~8 % of the topic
  // worker in the claim+ack profile).
  let body = LEASES_HEAD_BYTES;
  let lastNode = '';
  let lastLen = 0;
  for (let i = 0; i < events.length; i++) {
    const node = events[i]!.node;
    if (node !== lastNode) {
      lastNode = node;
      lastLen = Buffer.byteLength(node, 'utf8');
    }
    body += LEASE_EVENT_BYTES + lastLen;
  }
  const buf = frameBuffer(body);
  let p = FRAME_HEADER_BYTES;
  buf.writeUInt32LE(events.length, p);
  buf.writeUInt32LE(0, p + 4); // reserved
  p += LEASES_HEAD_BYTES;
  lastNode = '';
  lastLen = 0;
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.node !== lastNode) {
      lastNode = e.node;
      lastLen = Buffer.byteLength(e.node, 'utf8');
    }
    buf[p] = e.kind;
    buf[p + 1] = e.viaWork ? LeaseEventFlag.VIA_WORK : 0;
    buf.writeUInt16LE(lastLen, p + 2);
    buf.writeUInt32LE(e.deliveries, p + 4);
    writeU64(buf, p + 8, e.seq);
    writeU64(buf, p + 16, e.atMs);
    buf.writeUInt32LE(e.epoch >>> 0, p + 24);
    buf.writeUInt32LE(e.rand >>> 0, p + 28);
    writeU64(buf, p + 32, e.no);
    p += LEASE_EVENT_BYTES;
    if (lastLen > 0) p += buf.write(e.node, p, lastLen, 'utf8');
  }
  sealFrame(buf, 0, FrameType.LEASES, 0, topicId, body);
  return buf;
}

/** Decodes a LEASES frame (CRC already checked). Throws if an event runs past the body. */
export function decodeLeases(buf: Buffer, f: FrameView): LeaseEvent[] {
  const end = f.bodyOff + f.bodyLen;
  const count = buf.readUInt32LE(f.bodyOff);
  const out: LeaseEvent[] = [];
  let p = f.bodyOff + LEASES_HEAD_BYTES;
  for (let i = 0; i < count; i++) {
    if (p + LEASE_EVENT_BYTES > end) throw new CorruptionError('LEASES frame', 'an event past the frame body', p);
    const nodeLen = buf.readUInt16LE(p + 2);
    if (p + LEASE_EVENT_BYTES + nodeLen > end) throw new CorruptionError('LEASES frame', 'a node past the frame body', p);
    out.push({
      kind: buf.readUInt8(p),
      viaWork: (buf.readUInt8(p + 1) & LeaseEventFlag.VIA_WORK) !== 0,
      deliveries: buf.readUInt32LE(p + 4),
      seq: readU64(buf, p + 8),
      atMs: readU64(buf, p + 16),
      epoch: buf.readUInt32LE(p + 24),
      rand: buf.readUInt32LE(p + 28),
      no: readU64(buf, p + 32),
      node: buf.toString('utf8', p + LEASE_EVENT_BYTES, p + LEASE_EVENT_BYTES + nodeLen),
    });
    p += LEASE_EVENT_BYTES + nodeLen;
  }
  return out;
}
