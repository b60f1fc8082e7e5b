// The append body of a router's copy batch (docs/ARCHITECTURE.md "Routers"): each record's stored bytes (data, meta,
// tag, node) concatenated, never re-serialized. `preserve_node`/`preserve_tag` false leave
// those out; `exactly_once` copies get the reserved meta key `_spool_router` =
// "<router>:<source topic id>:<source seq>" at the end of their meta (docs/API.md "Routers"). Pure.
import type { RouterDef } from '../../protocol/messages/router.js';
import type { RecordText } from '../topic/recordText.js';

export const ROUTER_META_KEY = '_spool_router';

// The fixed pieces, allocated once (a batch of 1000 copies would otherwise make ~5000 tiny buffers).
const OPEN = Buffer.from('{"create":false,"records":[', 'latin1');
const FIRST = Buffer.from('{"data":', 'latin1');
const NEXT = Buffer.from(',{"data":', 'latin1');
const META = Buffer.from(',"meta":', 'latin1');
const META_EMPTY = Buffer.from(',"meta":{', 'latin1');
const TAG = Buffer.from(',"tag":', 'latin1');
const NODE = Buffer.from(',"node":', 'latin1');
const CLOSE_RECORD = Buffer.from('}', 'latin1');
const CLOSE = Buffer.from(']}', 'latin1');

export class CopyBody {
  private readonly parts: Buffer[] = [OPEN];
  count = 0;
  bytes = 0;

  constructor(
    private readonly def: RouterDef,
    private readonly sourceId: number,
  ) {}

  add(srcSeq: number, t: RecordText): void {
    const p = this.parts;
    p.push(this.count === 0 ? FIRST : NEXT, t.buf.subarray(t.dataOff, t.dataOff + t.dataLen));
    if (this.def.guarantee === 'exactly_once') {
      const stamp = `${JSON.stringify(ROUTER_META_KEY)}:${JSON.stringify(`${this.def.name}:${this.sourceId}:${srcSeq}`)}}`;
      if (t.metaLen > 2) p.push(META, t.buf.subarray(t.metaOff, t.metaOff + t.metaLen - 1), Buffer.from(`,${stamp}`, 'utf8'));
      else p.push(META_EMPTY, Buffer.from(stamp, 'utf8'));
    } else if (t.metaLen >= 0) {
      p.push(META, t.buf.subarray(t.metaOff, t.metaOff + t.metaLen));
    }
    if (this.def.preserveTag && t.tagLen > 0) p.push(TAG, t.buf.subarray(t.tagOff, t.tagOff + t.tagLen));
    if (this.def.preserveNode && t.nodeLen > 0) p.push(NODE, t.buf.subarray(t.nodeOff, t.nodeOff + t.nodeLen));
    p.push(CLOSE_RECORD);
    this.count++;
    this.bytes += t.dataLen + Math.max(0, t.metaLen);
  }

  finish(): Buffer {
    this.parts.push(CLOSE);
    return Buffer.concat(this.parts);
  }
}
