// Renders records that just became visible into the pieces a watch push carries (docs/ARCHITECTURE.md "Watch streams"): one
// buffer for the whole batch, each record split into head (`{"$seq":…,"$ts":…` plus its
// `,"$node":…`), tag, data and meta pieces, so main can assemble any projection by
// concatenation and no record is ever serialized per reader. Pure; runs inside an actor step.
import type { TopicInstance } from './instance.js';
import { SlotState } from './seqIndex.js';
import type { RecordText } from './recordText.js';
import { InvariantError } from '../../core/invariant.js';

export interface PushPieces {
  /** True when the batch cannot be pushed as is (part of it is already gone): tailing sessions pull. */
  stale: boolean;
  buf: Uint8Array;
  /** 4 boundaries per record (head, tag, data, meta starts) plus the end of the last one. */
  offs: Uint32Array;
  nodes: string[];
  nodeIdx: Int32Array;
}

const EMPTY: PushPieces = { stale: true, buf: new Uint8Array(0), offs: new Uint32Array(1), nodes: [], nodeIdx: new Int32Array(0) };

function piecesSize(head: string, t: RecordText): number {
  let n = head.length;
  if (t.nodeLen > 0) n += 9 + t.nodeLen; // ,"$node":
  if (t.tagLen > 0) n += 8 + t.tagLen; // ,"$tag":
  n += 8 + t.dataLen; // ,"data":
  if (t.metaLen >= 0) n += 8 + t.metaLen; // ,"meta":
  return n;
}

/** Pieces of the live records in (from, to]; `stale` when eviction already reached into them. */
export function renderPush(inst: TopicInstance, from: number, to: number): PushPieces {
  if (inst.evictFloor > from + 1) return EMPTY;
  if (inst.provenance?.hasLostIn(from + 1, to)) return EMPTY; // a source_trim marker: streams pull
  const seqs: number[] = [];
  const texts: RecordText[] = [];
  const heads: string[] = [];
  let size = 0;
  for (let seq = from + 1; seq <= to; seq++) {
    if (inst.index.state(seq) !== SlotState.LIVE) continue;
    const text = inst.index.text(seq);
    if (text === undefined) return EMPTY; // not expected for records this fresh; pulling is always safe
    const head = `{"$seq":${seq},"$ts":${inst.index.ts(seq)}`;
    seqs.push(seq);
    texts.push(text);
    heads.push(head);
    size += piecesSize(head, text);
  }
  const out = Buffer.allocUnsafeSlow(size); // standalone (never a pool slice): it is transferred
  const offs = new Uint32Array(seqs.length * 4 + 1);
  const nodeIdx = new Int32Array(seqs.length);
  const nodes: string[] = [];
  const nodeSlot = new Map<number, number>();
  let p = 0;
  for (let i = 0; i < seqs.length; i++) {
    const t = texts[i]!;
    offs[i * 4] = p;
    p += out.write(heads[i]!, p, 'latin1');
    if (t.nodeLen > 0) {
      p += out.write(',"$node":', p, 'latin1');
      p += t.buf.copy(out, p, t.nodeOff, t.nodeOff + t.nodeLen);
      const id = inst.index.nodeId(seqs[i]!);
      let slot = nodeSlot.get(id);
      if (slot === undefined) {
        slot = nodes.length;
        nodes.push(inst.nodes.name(id));
        nodeSlot.set(id, slot);
      }
      nodeIdx[i] = slot;
    } else {
      nodeIdx[i] = -1;
    }
    offs[i * 4 + 1] = p;
    if (t.tagLen > 0) {
      p += out.write(',"$tag":', p, 'latin1');
      p += t.buf.copy(out, p, t.tagOff, t.tagOff + t.tagLen);
    }
    offs[i * 4 + 2] = p;
    p += out.write(',"data":', p, 'latin1');
    p += t.buf.copy(out, p, t.dataOff, t.dataOff + t.dataLen);
    offs[i * 4 + 3] = p;
    if (t.metaLen >= 0) {
      p += out.write(',"meta":', p, 'latin1');
      p += t.buf.copy(out, p, t.metaOff, t.metaOff + t.metaLen);
    }
  }
  offs[seqs.length * 4] = p;
  if (p !== size) throw new InvariantError(`push render size mismatch ${p} != ${size}`);
  return { stale: false, buf: out, offs, nodes, nodeIdx };
}
