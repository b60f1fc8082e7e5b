// Cold reads: records whose text was evicted from memory are read back from the topic's
// segments. The actor asks for byte ranges (one per segment touched, covering every needed
// frame) and installs the texts when the bytes arrive. Pure; the host does the I/O.
import { forEachAppendRecord, headOffOf, probeFrame, readAppendHead } from '../../format/frame.js';
import { FrameType } from '../../format/constants.js';
import type { ActorCtx, ColdRange } from '../ctx.js';
import type { TopicInstance } from './instance.js';
import { SlotState } from './seqIndex.js';
import { CorruptionError } from '../../core/corruption.js';

const TWO_32 = 0x1_0000_0000;

/**
 * The seqs a waiter reads back next: the newly `cold` ones and every one it read back before,
 * sorted. A small cache may evict what one read brought while the next is under way; reading the
 * earlier seqs again brings every text the answer needs in one step, and as a seq joins the set
 * at most once, a waiter re-reads a bounded number of times.
 */
export function readBackSet(before: readonly number[] | undefined, cold: readonly number[]): number[] {
  return [...new Set([...(before ?? []), ...cold])].sort((x, y) => x - y);
}

export function coldRanges(inst: TopicInstance, seqs: readonly number[]): ColdRange[] {
  const bySeg = new Map<number, { start: number; end: number }>();
  for (const seq of seqs) {
    const { loc, frameLen } = inst.index.loc(seq);
    const ordinal = Math.floor(loc / TWO_32);
    const off = loc - ordinal * TWO_32;
    const r = bySeg.get(ordinal);
    if (!r) bySeg.set(ordinal, { start: off, end: off + frameLen });
    else {
      r.start = Math.min(r.start, off);
      r.end = Math.max(r.end, off + frameLen);
    }
  }
  return [...bySeg].map(([ordinal, r]) => {
    const range: ColdRange = { segFirstSeq: inst.segment.firstSeqs[ordinal]!, offset: r.start, len: r.end - r.start };
    if (ordinal === 0 && inst.segment.packed) range.packed = true;
    return range;
  });
}

/**
 * A cold read's answer: installs the texts it brought (`bufs`) and tells the host what came
 * into memory. Returns why it failed, or undefined: the read's own error (`bufs` is its text)
 * or damage met in a segment frame, which is reported, never skipped.
 */
export function installCold(ctx: ActorCtx, inst: TopicInstance, bufs: Buffer[] | string): string | undefined {
  if (typeof bufs === 'string') return bufs;
  try {
    for (const buf of bufs) {
      const loaded = installTexts(inst, buf);
      if (loaded) ctx.textsLoaded(inst.id, loaded.from, loaded.to, buf.length);
    }
  } catch (err) {
    return (err as Error).message;
  }
  return undefined;
}

/** Installs texts for every live, textless record of the frames in `buf`; returns the seq span. */
export function installTexts(inst: TopicInstance, buf: Buffer): { from: number; to: number } | undefined {
  let from = Infinity;
  let to = -Infinity;
  let off = 0;
  while (off < buf.length) {
    const p = probeFrame(buf, off, buf.length);
    if (!p.ok) throw new CorruptionError('cold read of a segment', `damaged frame (${p.reason})`, off);
    if (p.frame.type === FrameType.APPEND && p.frame.topicId === inst.id) {
      const head = readAppendHead(buf, p.frame);
      forEachAppendRecord(buf, p.frame, head, (i, r) => {
        const seq = head.firstSeq + i;
        if (inst.index.state(seq) !== SlotState.LIVE || inst.index.hasText(seq)) return;
        inst.index.setText(seq, buf, headOffOf(r));
        from = Math.min(from, seq);
        to = Math.max(to, seq);
      });
    }
    off += p.frame.size;
  }
  return from <= to ? { from, to } : undefined;
}
