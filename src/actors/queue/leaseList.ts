// "Who holds what" (docs/QUEUES.md "Leases"): a page of a queue's live leases, ascending by seq
// after a cursor, optionally only one holder's: seq, holder node, deliveries, deadline and
// whether it was leased by a claim or on a `/work` stream. Lease ids are not listed: they are
// the holders' fencing tokens. Read-only (expiry is judged first, lazily, as every queue request
// does; expiry is never logged). The page is picked in O(leases × log limit) without sorting
// every lease, so a step stays short with many leases. Runs in the queue topic's actor; pure.
import type { LeasesRequest } from '../../protocol/messages/rpc.js';
import { MinHeap } from '../../core/minHeap.js';
import type { ActorCtx } from '../ctx.js';
import { okJson } from '../topic/actorCore.js';
import type { TopicInstance } from '../topic/instance.js';
import type { QueueState } from './queueState.js';

/** The `limit` smallest seqs above `after` that `keep` accepts, ascending; `more`: others were left out. */
export function smallestAbove(
  seqs: Iterable<number>,
  after: number,
  limit: number,
  keep: (seq: number) => boolean,
): { page: number[]; more: boolean } {
  // A max-heap of the best `limit` so far: its top is the first to drop.
  const heap = new MinHeap<number>((x, y) => x > y);
  let more = false;
  for (const s of seqs) {
    if (s <= after || !keep(s)) continue;
    if (heap.size < limit) heap.push(s);
    else if (s < heap.peek()!) {
      heap.pop();
      heap.push(s);
      more = true;
    } else more = true;
  }
  const page: number[] = [];
  for (let s = heap.pop(); s !== undefined; s = heap.pop()) page.push(s);
  return { page: page.reverse(), more };
}

export function listLeases(ctx: ActorCtx, inst: TopicInstance, q: QueueState, reqId: number, req: LeasesRequest): void {
  q.table.sweep(ctx.now);
  const active = q.table.active;
  const { page, more } = smallestAbove(
    active.keys(),
    req.afterSeq,
    req.limit,
    (s) => req.node === null || active.get(s)!.node === req.node,
  );
  const rows = page.map((seq) => {
    const l = active.get(seq)!;
    const via = l.connId === 0 ? 'claim' : 'work';
    return `{"$seq":${seq},"node":${JSON.stringify(l.node)},"deliveries":${q.table.deliveries.get(seq) ?? 1},"deadline":${l.deadlineMs},"via":"${via}"}`;
  });
  const next = more && page.length > 0 ? `,"next_from_seq":${page[page.length - 1]}` : '';
  const body = `{"topic":${JSON.stringify(inst.name)},"leases":[${rows.join(',')}],"count":${rows.length},"in_flight":${q.inFlight},"ready":${q.ready(inst.count)},"delayed":${q.table.delayed.size}${next}`;
  ctx.reply(reqId, okJson(200, body));
}
