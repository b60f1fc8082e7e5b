// The crash sweep's oracle: checks a world recovered after a crash against the History of the
// workload that ran before it (test/support/crashWorkload.ts). What must hold, per topic:
//   1. every acked append is there, at the same $seq, with identical data and tag;
//   2. the records are a prefix (by seq) of what was submitted, minus deletes: an acked delete
//      stays applied, a delete in flight is applied wholly or not at all; nothing unknown, no
//      hole, nothing reordered;
//      (a `disk` topic acks before the fsync, so a crash of the machine may take acked appends
//      and deletes with it: 1 and "an acked delete stays applied" are only checked for `fsync`)
//   3. a new append gets a seq above every seq ever acked or recovered (seqs are never reused);
//   4. a topic whose create was acked exists, with the config of its last acked change (or of a
//      change that was in flight);
// and the server is ready with writable storage, holding no topic the workload never named.
// Returns the violations found (empty: all good); never throws for a violation.
import type { TopicResult } from '../../src/core/messages/rpc.js';
import { replyBody, type CrashWorld } from './crashWorld.js';
import type { History, TopicHistory } from './crashWorkload.js';

interface Recovered {
  seq: number;
  data: string;
  tag: string | undefined;
}

/** A diff page size well within SERVICE_MAX_LIMIT. */
const PAGE_RECORDS = 1000;

async function readAll(world: CrashWorld, topic: string): Promise<Recovered[]> {
  const out: Recovered[] = [];
  for (let from = 0; ; ) {
    const r = await world.request({ op: 'diff', topic, fromSeq: from, limit: PAGE_RECORDS, nodes: null, includeTags: true, includeMeta: true, waitMs: 0, maxBatchBytes: 0 });
    const body = replyBody(r) as { records: { $seq: number; $tag?: string; data: unknown }[]; next_from_seq: number; caught_up: boolean };
    for (const rec of body.records) out.push({ seq: rec.$seq, data: JSON.stringify(rec.data), tag: rec.$tag });
    if (body.caught_up || body.next_from_seq <= from) return out;
    from = body.next_from_seq;
  }
}

function checkRecords(topic: string, h: TopicHistory, got: Recovered[], bad: (m: string) => void): number {
  // Only an fsync topic's acks are durable; a disk topic's acked deletes are merely likely.
  const durableAcks = h.durability === 'fsync';
  const settled = h.deletes.filter((d) => d.acked && durableAcks);
  const mustGone = new Set(settled.flatMap((d) => d.seqs));
  const mayGone = new Set(h.deletes.filter((d) => !settled.includes(d)).flatMap((d) => d.seqs));
  const present = new Set<number>();
  let prev = 0;
  for (const r of got) {
    if (r.seq <= prev) bad(`${topic}: seq ${r.seq} after ${prev} (out of order)`);
    prev = r.seq;
    present.add(r.seq);
    const want = h.records[r.seq - 1];
    if (!want) {
      bad(`${topic}: unknown record at seq ${r.seq} (only ${h.records.length} submitted): ${r.data.slice(0, 80)}`);
      continue;
    }
    if (r.data !== want.data || r.tag !== want.tag) bad(`${topic}: seq ${r.seq} holds ${r.data.slice(0, 80)} tag ${r.tag}, submitted ${want.data.slice(0, 80)} tag ${want.tag}`);
    if (mustGone.has(r.seq)) bad(`${topic}: seq ${r.seq} is back although its delete was acked`);
  }
  const maxRecovered = got.at(-1)?.seq ?? 0;
  for (let seq = 1; seq <= (durableAcks ? Math.max(maxRecovered, h.maxAckedSeq) : maxRecovered); seq++) {
    if (present.has(seq) || mustGone.has(seq) || mayGone.has(seq)) continue;
    bad(seq <= maxRecovered ? `${topic}: hole at seq ${seq} (records up to ${maxRecovered} recovered)` : `${topic}: acked seq ${seq} lost (acked up to ${h.maxAckedSeq}, recovered up to ${maxRecovered})`);
  }
  // A delete that may or may not have survived did so wholly: judged on the records no other
  // delete covers (another one may explain those either way), up to the recovered end (a disk
  // topic may lose acked records past it).
  for (const d of h.deletes.filter((x) => !settled.includes(x))) {
    const others = new Set(h.deletes.filter((x) => x !== d).flatMap((x) => x.seqs));
    const own = d.seqs.filter((s) => !others.has(s) && s <= maxRecovered);
    const kept = own.filter((s) => present.has(s)).length;
    if (kept > 0 && kept < own.length) bad(`${topic}: a delete was applied to ${own.length - kept} of its ${own.length} records`);
  }
  return maxRecovered;
}

/** The idempotency windows the recovered config may hold: the last acked one or any later one. */
function allowedWindows(h: TopicHistory): number[] {
  let lastAcked = -1;
  h.windows.forEach((w, i) => {
    if (w.acked) lastAcked = i;
  });
  return h.windows.slice(Math.max(0, lastAcked)).map((w) => w.windowMs);
}

async function checkTopic(world: CrashWorld, topic: string, h: TopicHistory, bad: (m: string) => void): Promise<void> {
  const state = await world.request({ op: 'state', topic, touch: false });
  if (!state.ok) {
    if (h.createAcked || h.maxAckedSeq > 0) bad(`${topic}: its create was acked but it is gone (${state.code})`);
    return;
  }
  const window = (replyBody(state) as { config: { idempotency_window_ms: number } }).config.idempotency_window_ms;
  const allowed = allowedWindows(h);
  if (allowed.length > 0 && !allowed.includes(window)) bad(`${topic}: config window ${window}, expected one of ${allowed.join(', ')}`);
  const maxRecovered = checkRecords(topic, h, await readAll(world, topic), bad);
  const after: TopicResult = await world.request({ op: 'append', topic, body: new TextEncoder().encode('{"records":[{"data":"after-crash"}]}'), returnSeqs: true, headerIdemKey: undefined });
  if (!after.ok) return bad(`${topic}: an append after recovery failed: ${after.status} ${after.code} ${after.message}`);
  const seq = replyBody(after).first_seq as number;
  const floor = Math.max(maxRecovered, h.maxAckedSeq);
  if (seq <= floor) bad(`${topic}: an append after recovery got seq ${seq}, reusing a seq (acked up to ${h.maxAckedSeq}, recovered up to ${maxRecovered})`);
}

export async function checkRecovered(world: CrashWorld, history: History): Promise<string[]> {
  const violations: string[] = [];
  const bad = (m: string) => void violations.push(m);
  if (world.sup.lifecycle !== 'ready') bad(`the server is ${world.sup.lifecycle}, not ready`);
  if (world.sup.storageState !== 0) bad(`storage state ${world.sup.storageState} after recovery (0 = OK)`);
  const listed = (await Promise.all(world.sup.workers.map((w) => w.list('', '', 10_000)))).flat().map((s) => s.topic);
  for (const name of listed) if (!history.topics.has(name)) bad(`unknown topic ${name} after recovery`);
  for (const [topic, h] of history.topics) await checkTopic(world, topic, h, bad);
  return violations;
}
