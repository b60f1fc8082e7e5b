// The append's reply body (docs/API.md "Append"), without its closing brace (main adds the
// performance block): written straight into bytes, no string per number and no concatenation.
// Runs in the topic worker, inside the reply's gate (an actor step); pure.
import { digitCount, writeUint } from '../../core/decimal.js';

const ascii = (s: string): Buffer => Buffer.from(s, 'latin1');
const FIRST_SEQ = ascii(',"first_seq":');
const LAST_SEQ = ascii(',"last_seq":');
const SEQS = ascii(',"seqs":[');
const HEAD_SEQ = ascii(',"head_seq":');
const COUNT = ascii(',"count":');
const CREATED = ascii(',"created":');
const DEDUPED = ascii(',"deduped":');
const TRUE = ascii('true');
const FALSE = ascii('false');

/** `{"topic":<name>` of the last topic rendered (a worker mostly answers one topic at a time). */
let headName: string | undefined;
let head: Buffer = Buffer.alloc(0);

function topicHead(name: string): Buffer {
  if (name !== headName) {
    head = Buffer.from(`{"topic":${JSON.stringify(name)}`, 'utf8');
    headName = name;
  }
  return head;
}

/**
 * `{"topic":…,"first_seq":…,"last_seq":…[,"seqs":[…]],"head_seq":…,"count":…,"created":…,"deduped":…`
 * as UTF-8 bytes (positional arguments: no object per reply).
 */
export function appendReplyBytes(
  name: string,
  firstSeq: number,
  count: number,
  headSeq: number,
  returnSeqs: boolean,
  created: boolean,
  deduped: boolean,
): Buffer {
  const lastSeq = firstSeq + count - 1;
  if (!(count > 0 && firstSeq >= 0 && headSeq >= 0))
    return Buffer.from(replyText(name, firstSeq, count, headSeq, returnSeqs, created, deduped), 'utf8');
  const th = topicHead(name);
  let n = th.length + FIRST_SEQ.length + digitCount(firstSeq) + LAST_SEQ.length + digitCount(lastSeq);
  if (returnSeqs) {
    n += SEQS.length + count; // the commas and the closing bracket
    for (let i = 0; i < count; i++) n += digitCount(firstSeq + i);
  }
  n += HEAD_SEQ.length + digitCount(headSeq) + COUNT.length + digitCount(count);
  n += CREATED.length + (created ? 4 : 5) + DEDUPED.length + (deduped ? 4 : 5);
  const out = Buffer.allocUnsafe(n);
  let p = put(out, 0, th);
  p = writeUint(out, put(out, p, FIRST_SEQ), firstSeq);
  p = writeUint(out, put(out, p, LAST_SEQ), lastSeq);
  if (returnSeqs) {
    p = put(out, p, SEQS);
    for (let i = 0; i < count; i++) {
      if (i > 0) out[p++] = 0x2c; // ,
      p = writeUint(out, p, firstSeq + i);
    }
    out[p++] = 0x5d; // ]
  }
  p = writeUint(out, put(out, p, HEAD_SEQ), headSeq);
  p = writeUint(out, put(out, p, COUNT), count);
  p = put(out, put(out, p, CREATED), created ? TRUE : FALSE);
  put(out, put(out, p, DEDUPED), deduped ? TRUE : FALSE);
  return out;
}

/** The same reply as text: values the byte writer does not take (none an append produces today). */
export function replyText(
  name: string,
  firstSeq: number,
  count: number,
  headSeq: number,
  returnSeqs: boolean,
  created: boolean,
  deduped: boolean,
): string {
  const seqs = returnSeqs ? `,"seqs":[${Array.from({ length: Math.max(0, count) }, (_, i) => firstSeq + i).join(',')}]` : '';
  return `{"topic":${JSON.stringify(name)},"first_seq":${firstSeq},"last_seq":${firstSeq + count - 1}${seqs},"head_seq":${headSeq},"count":${count},"created":${created},"deduped":${deduped}`;
}

function put(out: Buffer, p: number, bytes: Buffer): number {
  out.set(bytes, p);
  return p + bytes.length;
}
