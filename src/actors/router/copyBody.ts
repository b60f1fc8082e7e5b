// The append body of a router's copy batch (DESIGN 5): each record's stored bytes (data, meta,
// tag, node) concatenated, never re-serialized. `preserve_node`/`preserve_tag` false leave
// those out; `exactly_once` copies get the reserved meta key `_spool_router` =
// "<router>:<source topic id>:<source seq>" at the end of their meta (RESOLVED 4.6). Pure.
import type { RouterDef } from '../../core/messages/router.js';
import type { RecordText } from '../topic/recordText.js';

export const ROUTER_META_KEY = '_spool_router';

export class CopyBody {
  private readonly parts: Buffer[] = [Buffer.from('{"create":false,"records":[', 'latin1')];
  count = 0;
  bytes = 0;

  constructor(
    private readonly def: RouterDef,
    private readonly sourceId: number,
  ) {}

  add(srcSeq: number, t: RecordText): void {
    const p = this.parts;
    p.push(Buffer.from(this.count === 0 ? '{"data":' : ',{"data":', 'latin1'), t.buf.subarray(t.dataOff, t.dataOff + t.dataLen));
    if (this.def.guarantee === 'exactly_once') {
      const stamp = `${JSON.stringify(ROUTER_META_KEY)}:${JSON.stringify(`${this.def.name}:${this.sourceId}:${srcSeq}`)}}`;
      if (t.metaLen > 2) p.push(Buffer.from(',"meta":'), t.buf.subarray(t.metaOff, t.metaOff + t.metaLen - 1), Buffer.from(`,${stamp}`, 'utf8'));
      else p.push(Buffer.from(`,"meta":{${stamp}`, 'utf8'));
    } else if (t.metaLen >= 0) {
      p.push(Buffer.from(',"meta":'), t.buf.subarray(t.metaOff, t.metaOff + t.metaLen));
    }
    if (this.def.preserveTag && t.tagLen > 0) p.push(Buffer.from(',"tag":'), t.buf.subarray(t.tagOff, t.tagOff + t.tagLen));
    if (this.def.preserveNode && t.nodeLen > 0) p.push(Buffer.from(',"node":'), t.buf.subarray(t.nodeOff, t.nodeOff + t.nodeLen));
    p.push(Buffer.from('}', 'latin1'));
    this.count++;
    this.bytes += t.dataLen + Math.max(0, t.metaLen);
  }

  finish(): Buffer {
    this.parts.push(Buffer.from(']}', 'latin1'));
    return Buffer.concat(this.parts);
  }
}
