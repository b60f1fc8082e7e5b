// Rendering of leased jobs straight from stored bytes (no record is parsed or re-serialized):
// claim reply bodies (docs/API.md "Queues") and whole SSE `job` frames for `/work` streams (docs/API.md "Work frames"), the
// latter rendered once in the actor so main only writes bytes. Pure.
import type { TopicInstance } from '../topic/instance.js';
import { renderRecordsArray, RenderItem } from '../topic/render.js';
import type { Lease } from './leaseTable.js';
import { InvariantError } from '../../core/invariant.js';

export interface LeasedJob {
  seq: number;
  lease: Lease;
  deliveries: number;
}

const ALL = { includeTags: true, includeMeta: true, includeData: true };

/** `{"topic":…,"claimed":[…],"count":n,"ready":r` (main adds performance and the brace). */
export function renderClaimReply(inst: TopicInstance, jobs: readonly LeasedJob[], ready: number): Buffer {
  const items: RenderItem[] = jobs.map((j) =>
    RenderItem.of(
      j.seq,
      inst.index.ts(j.seq),
      inst.index.text(j.seq)!,
      `,"lease_id":"${j.lease.id}","deadline":${j.lease.deadlineMs},"deliveries":${j.deliveries}`,
    ),
  );
  return renderRecordsArray(`{"topic":${JSON.stringify(inst.name)},"claimed":`, items, `,"count":${items.length},"ready":${ready}`, ALL);
}

/**
 * `id: <seq>`, `event: job`, and the payload on one `data:` line, for each job, in one buffer:
 * {"topic","$seq","lease_id","deadline","$ts"[,"$node"][,"$tag"],"deliveries","data"[,"meta"]}.
 */
export function renderJobFrames(inst: TopicInstance, jobs: readonly LeasedJob[]): Buffer {
  const topic = JSON.stringify(inst.name);
  const heads: string[] = [];
  const tails: string[] = [];
  let size = 0;
  for (const j of jobs) {
    const t = inst.index.text(j.seq)!;
    const head = `id: ${j.seq}\nevent: job\ndata: {"topic":${topic},"$seq":${j.seq},"lease_id":"${j.lease.id}","deadline":${j.lease.deadlineMs},"$ts":${inst.index.ts(j.seq)}`;
    const tail = `,"deliveries":${j.deliveries},"data":`;
    heads.push(head);
    tails.push(tail);
    size += head.length + tail.length + t.dataLen + 3; // "}\n\n"
    if (t.nodeLen > 0) size += 9 + t.nodeLen; // ,"$node":
    if (t.tagLen > 0) size += 8 + t.tagLen; // ,"$tag":
    if (t.metaLen >= 0) size += 8 + t.metaLen; // ,"meta":
  }
  const out = Buffer.allocUnsafeSlow(size); // standalone: it is transferred to main
  let p = 0;
  jobs.forEach((j, i) => {
    const t = inst.index.text(j.seq)!;
    p += out.write(heads[i]!, p, 'latin1');
    if (t.nodeLen > 0) {
      p += out.write(',"$node":', p, 'latin1');
      p += t.buf.copy(out, p, t.nodeOff, t.nodeOff + t.nodeLen);
    }
    if (t.tagLen > 0) {
      p += out.write(',"$tag":', p, 'latin1');
      p += t.buf.copy(out, p, t.tagOff, t.tagOff + t.tagLen);
    }
    p += out.write(tails[i]!, p, 'latin1');
    p += t.buf.copy(out, p, t.dataOff, t.dataOff + t.dataLen);
    if (t.metaLen >= 0) {
      p += out.write(',"meta":', p, 'latin1');
      p += t.buf.copy(out, p, t.metaOff, t.metaOff + t.metaLen);
    }
    p += out.write('}\n\n', p, 'latin1');
  });
  if (p !== size) throw new InvariantError(`job frame render size mismatch ${p} != ${size}`);
  return out;
}
