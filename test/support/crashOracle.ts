// The crash sweep's oracle: checks a world recovered after a crash against the History of the
// workload that ran before it (test/support/crashWorkload.ts). What must hold, per topic:
//   0. the topic exists if the create of an instance was acked and no delete of it was issued,
//      and is gone if its last instance's delete was acked; what exists is one instance the
//      history allows (the last one whose create may have landed, or an earlier one whose
//      delete may not have);
//   1. every acked append of an `fsync` topic is there, at the same $seq, with identical data
//      and tag; so is every append of a `disk` topic acked (written) before an operation was
//      issued whose ack waited for an fdatasync (History.syncedTick);
//   2. the records are a prefix (by seq) of what was submitted, minus deletes: an acked delete
//      (or queue ack) of an `fsync` topic stays applied, a delete in flight is applied wholly or
//      not at all; nothing unknown, no hole, nothing reordered; an `ephemeral` topic is empty;
//      (`disk` and `memory` topics ack before the fsync, so a crash of the machine may take
//      acked appends and deletes with them: 1 and "an acked delete stays applied" are checked
//      for `fsync`, and for `disk` up to the last fdatasync known to follow the ack)
//   3. a new append gets a seq above every seq ever acked or recovered (seqs are never reused,
//      in every class);
//   4. the config holds the idempotency window of the last acked change (or of one in flight);
//   5. queue: a job leased by an acked claim (durable leases, and the clock has not moved) is
//      still leased: another node cannot claim it; every other job still there is claimable,
//      except as many as the claims in flight may have leased;
// and the server is ready with writable storage, holding no topic the workload never named.
// Returns the violations found (empty: all good); never throws for a violation.
import type { TopicResult } from '../../src/protocol/messages/rpc.js';
import { replyBody, type CrashWorld } from './crashWorld.js';
import type { History, Instance, TopicHistory } from './crashWorkload.js';
import type { TopicSpec } from './crashPlan.js';

interface Recovered {
  seq: number;
  data: string;
  tag: string | undefined;
}

/** A diff page size and a claim size well within SERVICE_MAX_LIMIT and the claim maximum. */
const PAGE_RECORDS = 1000;
const CHECK_NODE = 'oracle';

async function readAll(world: CrashWorld, topic: string): Promise<Recovered[]> {
  const out: Recovered[] = [];
  for (let from = 0; ;) {
    const r = await world.request({
      op: 'diff',
      topic,
      fromSeq: from,
      limit: PAGE_RECORDS,
      nodes: null,
      includeTags: true,
      includeMeta: true,
      waitMs: 0,
      maxBatchBytes: 0,
    });
    const body = replyBody(r) as { records: { $seq: number; $tag?: string; data: unknown }[]; next_from_seq: number; caught_up: boolean };
    for (const rec of body.records) out.push({ seq: rec.$seq, data: JSON.stringify(rec.data), tag: rec.$tag });
    if (body.caught_up || body.next_from_seq <= from) return out;
    from = body.next_from_seq;
  }
}

/**
 * Checks 1 and 2 of one instance; returns the highest recovered seq. `syncedTick`: acks of
 * `disk` appends and deletes before it are durable (see History.syncedTick).
 */
function checkRecords(topic: string, spec: TopicSpec, h: Instance, got: Recovered[], syncedTick: number, bad: (m: string) => void): number {
  if (spec.durability === 'ephemeral' && got.length > 0) bad(`${topic}: an ephemeral topic came back with ${got.length} records`);
  // An fsync topic's acks are durable, a disk topic's once an fdatasync followed them; any other
  // acked append or delete merely likely survives.
  const durableAcks = spec.durability === 'fsync';
  const durableAck = (tick: number) => durableAcks || (spec.durability === 'disk' && tick < syncedTick);
  const durableUpTo = Math.max(0, ...h.appendAcks.filter((a) => durableAck(a.tick)).map((a) => a.lastSeq));
  const settled = h.deletes.filter((d) => d.acked && durableAck(d.tick));
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
    if (r.data !== want.data || r.tag !== want.tag)
      bad(`${topic}: seq ${r.seq} holds ${r.data.slice(0, 80)} tag ${r.tag}, submitted ${want.data.slice(0, 80)} tag ${want.tag}`);
    if (mustGone.has(r.seq)) bad(`${topic}: seq ${r.seq} is back although its delete was acked`);
  }
  const maxRecovered = got.at(-1)?.seq ?? 0;
  for (let seq = 1; seq <= Math.max(maxRecovered, durableUpTo); seq++) {
    if (present.has(seq) || mustGone.has(seq) || mayGone.has(seq)) continue;
    bad(
      seq <= maxRecovered
        ? `${topic}: hole at seq ${seq} (records up to ${maxRecovered} recovered)`
        : `${topic}: acked seq ${seq} lost (durable acks up to ${durableUpTo}, recovered up to ${maxRecovered})`,
    );
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
function allowedWindows(h: Instance): number[] {
  let lastAcked = -1;
  h.windows.forEach((w, i) => {
    if (w.acked) lastAcked = i;
  });
  return h.windows.slice(Math.max(0, lastAcked)).map((w) => w.windowMs);
}

/** Check 0: may the topic be absent? Only if no instance is known to be there. */
function mayBeAbsent(th: TopicHistory): boolean {
  const created = th.instances.filter((i) => i.createAcked || i.maxAckedSeq > 0);
  return created.length === 0 || created.at(-1)!.drop !== undefined;
}

/** Check 0: the instances that may be the one recovered, newest first. */
function candidates(th: TopicHistory): Instance[] {
  const out: Instance[] = [];
  for (let i = th.instances.length - 1; i >= 0; i--) {
    const inst = th.instances[i]!;
    if (!inst.drop?.acked) out.push(inst);
    if (inst.createAcked) break; // an earlier instance was deleted before this one was created
  }
  return out;
}

/** Check 5 on a queue: claims every claimable job for another node. */
async function checkQueue(world: CrashWorld, topic: string, h: Instance, present: Set<number>, bad: (m: string) => void): Promise<void> {
  const r = await world.request({ op: 'claim', topic, node: CHECK_NODE, max: PAGE_RECORDS, leaseMs: null });
  if (!r.ok) return bad(`${topic}: a claim after recovery failed: ${r.status} ${r.code} ${r.message}`);
  const claimed = new Set((replyBody(r) as { claimed: { $seq: number }[] }).claimed.map((j) => j.$seq));
  for (const seq of claimed) {
    if (!present.has(seq)) bad(`${topic}: a claim after recovery leased seq ${seq}, which is not in the log`);
    if (h.leases.has(seq)) bad(`${topic}: seq ${seq}, leased by an acked claim (durable leases), was leased again after recovery`);
  }
  const inFlight = h.claims.filter((c) => !c.acked).reduce((n, c) => n + c.max, 0);
  const unclaimable = [...present].filter((s) => !claimed.has(s) && !h.leases.has(s));
  if (unclaimable.length > inFlight)
    bad(
      `${topic}: jobs ${unclaimable.join(',')} are neither leased by an acked claim nor claimable (claims in flight could lease ${inFlight})`,
    );
}

async function checkTopic(world: CrashWorld, topic: string, th: TopicHistory, syncedTick: number, bad: (m: string) => void): Promise<void> {
  const state = await world.request({ op: 'state', topic, touch: false });
  if (!state.ok) {
    if (!mayBeAbsent(th)) bad(`${topic}: its create was acked but it is gone (${state.code})`);
    return;
  }
  const window = (replyBody(state) as { config: { idempotency_window_ms: number } }).config.idempotency_window_ms;
  const got = await readAll(world, topic);
  // The instance recovered is one of the candidates; judged as the newest it can be.
  const cands = candidates(th);
  if (cands.length === 0) return bad(`${topic}: exists, but its last delete was acked`);
  let chosen: { inst: Instance; maxRecovered: number; violations: string[] } | undefined;
  for (const inst of cands) {
    const violations: string[] = [];
    const maxRecovered = checkRecords(topic, th.spec, inst, got, syncedTick, (m) => void violations.push(m));
    const allowed = allowedWindows(inst);
    if (allowed.length > 0 && !allowed.includes(window))
      violations.push(`${topic}: config window ${window}, expected one of ${allowed.join(', ')}`);
    chosen ??= { inst, maxRecovered, violations };
    if (violations.length === 0) {
      chosen = { inst, maxRecovered, violations };
      break;
    }
  }
  const { inst, maxRecovered, violations } = chosen!;
  violations.forEach((v) => bad(cands.length > 1 ? `${v} (judged as the newest of ${cands.length} instances it may be)` : v));
  if (th.spec.queue) await checkQueue(world, topic, inst, new Set(got.map((r) => r.seq)), bad);
  const after: TopicResult = await world.request({
    op: 'append',
    topic,
    body: new TextEncoder().encode('{"records":[{"data":"after-crash"}]}'),
    returnSeqs: true,
    headerIdemKey: undefined,
  });
  if (!after.ok) return bad(`${topic}: an append after recovery failed: ${after.status} ${after.code} ${after.message}`);
  const seq = replyBody(after).first_seq as number;
  const floor = Math.max(maxRecovered, inst.maxAckedSeq);
  if (seq <= floor)
    bad(
      `${topic}: an append after recovery got seq ${seq}, reusing a seq (acked up to ${inst.maxAckedSeq}, recovered up to ${maxRecovered})`,
    );
}

export async function checkRecovered(world: CrashWorld, history: History): Promise<string[]> {
  const violations: string[] = [];
  const bad = (m: string) => void violations.push(m);
  if (world.sup.lifecycle !== 'ready') bad(`the server is ${world.sup.lifecycle}, not ready`);
  if (world.sup.storageState !== 0) bad(`storage state ${world.sup.storageState} after recovery (0 = OK)`);
  const listed = (await Promise.all(world.sup.workers.map((w) => w.list('', '', 10_000)))).flat().map((s) => s.topic);
  for (const name of listed) if (!history.topics.has(name)) bad(`unknown topic ${name} after recovery`);
  for (const [topic, th] of history.topics) await checkTopic(world, topic, th, history.syncedTick, bad);
  return violations;
}
