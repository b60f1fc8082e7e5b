// The redrive header of an APPEND frame (docs/FORMAT.md "APPEND body", flag REDRIVE): the
// dead-letter instance, name and seqs a batch of redriven jobs came from. Written with the
// copies (one checksummed unit) and read back at recovery from the replayed frames, so the
// queue knows which originals it may not have seen deleted. Also the pending set it feeds
// (QueueState.redrivePending). Pure; used by the append step and recovery of a queue's actor.
import type { RedriveInfo } from '../../protocol/messages/rpc.js';
import type { QueueState } from './queueState.js';
import type { RedrivePendingPart } from '../../format/topicPart.js';

interface Header {
  /** Dead-letter topic instance id. */
  i: number;
  /** Its name. */
  n: string;
  /** The seqs of the batch's records there, in record order. */
  s: number[];
}

export function encodeRedriveHeader(r: RedriveInfo): Buffer {
  const h: Header = { i: r.fromId, n: r.from, s: r.fromSeqs };
  return Buffer.from(JSON.stringify(h), 'utf8');
}

/** The batch's originals are pending: copied here, their delete there not yet confirmed. */
export function notePending(q: QueueState, fromId: number, from: string, seqs: readonly number[]): void {
  let p = q.redrivePending.get(fromId);
  if (!p) q.redrivePending.set(fromId, (p = { topic: from, seqs: new Set() }));
  for (const s of seqs) p.seqs.add(s);
}

/** Recovery: a replayed redrive batch's header (idempotent: a set). */
export function replayRedriveHeader(q: QueueState, header: Buffer): void {
  const h = JSON.parse(header.toString('utf8')) as Header;
  notePending(q, h.i, h.n, h.s);
}

/** What a snapshot keeps: [dead-letter instance id, name, seqs] per dead-letter instance. */

export function redrivePendingPart(q: QueueState): RedrivePendingPart | undefined {
  if (q.redrivePending.size === 0) return undefined;
  return [...q.redrivePending].map(([id, p]) => [id, p.topic, [...p.seqs].sort((x, y) => x - y)]);
}

export function loadRedrivePending(q: QueueState, part: RedrivePendingPart): void {
  for (const [id, name, seqs] of part) notePending(q, id, name, seqs);
}
