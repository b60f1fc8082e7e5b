// Unit tests of the queue's building blocks (docs/ARCHITECTURE.md "Queues"; docs/QUEUES.md "Job states",
// "Dead-lettering", "Requests" on claim_jitter_ms; docs/QUEUES.md "Job states"; docs/API.md "Queues"):
// - shares() (src/actors/queue/claimPass.ts): everyone gets their want when there are enough;
//   otherwise a largest-remainder split of n in proportion to the wants, never above a want,
//   summing to n (fast-check property with an exact integer oracle), ties to the earlier claimer;
// - round-robin dealing (claimPass.ts `deal`, not exported: driven through a claim_jitter_ms
//   cohort on the real actor in a SimHost): one job at a time over the claimers with share left,
//   each reply ascending by $seq (fixed cases and a property against an independent oracle);
// - leaseIdOf (leaseId.ts): `^lease_[0-9a-f]{24}$` for extreme parts, epoch wrapped to 24 bits,
//   counter to 40 bits, rand as u32;
// - LeaseTable (leaseTable.ts): expiry when now > deadline (not at it), a nack delay elapses at
//   readyAt, stale heap entries after extend / unlease / re-delay are skipped, popReclaim ascending
//   and skipping what is not claimable, nextDueMs, forget clears every structure, per-connection counts;
// - deadLetterBody (deadLetter.ts): the body it builds from a stored record parses with
//   DEAD_LETTER_STAMPS (appendRecord.ts) for meta absent, `{}`, and a full meta (64 keys, 16 KiB,
//   which only the allowance admits), the stamps first and the original meta verbatim.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { shares } from '../../src/actors/queue/claimPass.js';
import { leaseIdOf } from '../../src/actors/queue/leaseId.js';
import { LeaseTable, type Lease } from '../../src/actors/queue/leaseTable.js';
import { deadLetterBody } from '../../src/actors/queue/deadLetter.js';
import { parseAppendBody, type ParsedAppend } from '../../src/actors/topic/appendParse.js';
import { DEAD_LETTER_STAMPS, LIMITS } from '../../src/actors/topic/appendRecord.js';
import { resolveConfig } from '../../src/protocol/topicConfig.js';
import type { TopicResult } from '../../src/protocol/messages/rpc.js';
import { SimHost } from '../support/simHost.js';

// ---- shares ------------------------------------------------------------------------------------

const sum = (xs: readonly number[]) => xs.reduce((s, v) => s + v, 0);

test('shares: enough jobs → everyone gets their want (more jobs than wanted too)', () => {
  assert.deepEqual(shares([3, 0, 5], 8), [3, 0, 5]);
  assert.deepEqual(shares([3, 0, 5], 100), [3, 0, 5]);
  assert.deepEqual(shares([], 0), []);
  assert.deepEqual(shares([0, 0], 0), [0, 0]);
  assert.deepEqual(shares([1000], 1000), [1000]);
});

test('shares: fixed splits (proportional, largest remainder)', () => {
  assert.deepEqual(shares([10, 20], 15), [5, 10], 'QUEUES.md: max 20 gets about twice max 10');
  assert.deepEqual(shares([10, 20], 16), [5, 11], '5.33 / 10.67: the larger remainder gets the extra job');
  assert.deepEqual(shares([1, 5, 2], 5), [1, 3, 1], '0.625 / 3.125 / 1.25');
  assert.deepEqual(shares([4, 4], 7), [4, 3], 'a tie goes to the earlier claimer');
  assert.deepEqual(shares([1, 1, 1], 1), [1, 0, 0]);
  assert.deepEqual(shares([1, 1, 1], 2), [1, 1, 0]);
  assert.deepEqual(shares([5, 0, 5], 3), [2, 0, 1], 'a claimer wanting 0 gets 0');
  assert.deepEqual(shares([7, 3], 0), [0, 0]);
});

const wantsArb = fc.array(fc.nat(1000), { minLength: 1, maxLength: 12 });

test('property: total = n, never above a want, each share is floor or ceil of its exact quota, extras by remainder', () => {
  fc.assert(
    fc.property(
      wantsArb.chain((w) => fc.tuple(fc.constant(w), fc.nat(sum(w) + 5))),
      ([wants, n]) => {
        const out = shares(wants, n);
        const total = sum(wants);
        assert.equal(out.length, wants.length);
        if (n >= total) return assert.deepEqual(out, wants);
        assert.equal(sum(out), n, 'the shares add up to n');
        out.forEach((s, i) => {
          assert.ok(Number.isInteger(s) && s >= 0 && s <= wants[i]!, `share ${i} = ${s} within [0, ${wants[i]}]`);
          const floor = Math.floor((n * wants[i]!) / total); // exact: n * want < 2^53
          assert.ok(s === floor || s === floor + 1, `share ${i} = ${s} is floor ${floor} or floor + 1`);
        });
        // largest remainder: an extra job never goes to a smaller remainder than one left without
        const rem = wants.map((w) => (n * w) % total); // exact integer remainders (in units of 1/total)
        const extra = out.map((s, i) => s > Math.floor((n * wants[i]!) / total));
        for (let i = 0; i < wants.length; i++)
          for (let j = 0; j < wants.length; j++)
            if (extra[i] && !extra[j])
              assert.ok(
                rem[i]! >= rem[j]!,
                `claimer ${i} got an extra job with remainder ${rem[i]}/${total} over claimer ${j} with ${rem[j]}/${total}`,
              );
      },
    ),
    { numRuns: 2000 },
  );
});

/** Hamilton apportionment with exact integer remainders, ties to the earlier claimer. */
function sharesOracle(wants: readonly number[], n: number): number[] {
  const total = sum(wants);
  if (n >= total) return wants.slice();
  const out = wants.map((w) => Math.floor((n * w) / total));
  const rem = wants.map((w) => (n * w) % total);
  let left = n - sum(out);
  for (const i of wants.map((_, i) => i).sort((a, b) => rem[b]! - rem[a]! || a - b)) {
    if (left === 0) break;
    out[i]!++;
    left--;
  }
  return out;
}

// The docstring of shares() promises "ties to the earlier claimer". Remainders are compared as
// floating-point differences `exact - floor(exact)`, which are not exact: two claimers with the
// same true remainder can compare unequal, and the later one wins the tie.
test('shares: equal remainders go to the earlier claimer (exact ties, not floating-point ones)', () => {
  // [15, 7, 15, 2] of 12 (total 39): remainders 24/39, 6/39, 24/39, 24/39; two extra jobs go to
  // claimers 0 and 2. 180/39 - 4 evaluates to 0.6153846153846150 but 24/39 to 0.6153846153846154.
  assert.deepEqual(shares([15, 7, 15, 2], 12), [5, 2, 5, 0]);
  // [7, 19, 14, 1, 25] of 22 (total 66): after claimer 2 (44/66), the tie at 22/66 goes to claimer 0.
  assert.deepEqual(shares([7, 19, 14, 1, 25], 22), [3, 6, 5, 0, 8]);
  fc.assert(
    fc.property(
      fc.array(fc.nat(30), { minLength: 1, maxLength: 6 }).chain((w) => fc.tuple(fc.constant(w), fc.nat(sum(w)))),
      ([wants, n]) => assert.deepEqual(shares(wants, n), sharesOracle(wants, n), `shares(${JSON.stringify(wants)}, ${n})`),
    ),
    { numRuns: 3000 },
  );
});

// ---- round-robin dealing, through a jitter cohort on the real actor ------------------------

function okBody(r: TopicResult | undefined, what: string): any {
  assert.ok(r, `${what}: no reply`);
  assert.ok(r.ok, `${what}: ${JSON.stringify(r)}`);
  return JSON.parse(Buffer.from(r.json).toString('utf8') + '}');
}

function newSim(seed = 'queue-parts'): SimHost {
  return new SimHost({ seed, maxLimit: 1000, segmentBytes: 64 * 1024 * 1024, maxTopics: 0 });
}

function put(sim: SimHost, topic: string, config: Record<string, unknown>): void {
  const resolved = resolveConfig(topic, config);
  assert.ok(resolved.ok, JSON.stringify(resolved));
  const id = sim.request({ op: 'put', topic, config: resolved.config });
  sim.flushAll();
  okBody(sim.replies.get(id), `PUT ${topic}`);
}

function append(sim: SimHost, topic: string, records: unknown[] | string): number[] {
  const body = typeof records === 'string' ? records : JSON.stringify({ records });
  const id = sim.request({ op: 'append', topic, body: Buffer.from(body), returnSeqs: true, headerIdemKey: undefined });
  sim.flushAll();
  return okBody(sim.replies.get(id), `append to ${topic}`).seqs;
}

const JITTER = 50;

/** n jobs; one cohort of claims with the given maxes; returns the seqs each got. */
function cohort(wants: readonly number[], n: number): number[][] {
  const sim = newSim(`deal-${wants.join('-')}-${n}`);
  put(sim, 'q', { type: 'queue', durability: 'memory', claim_jitter_ms: JITTER, lease_ms: 60_000 });
  if (n > 0)
    append(
      sim,
      'q',
      Array.from({ length: n }, (_, i) => ({ data: i })),
    );
  const ids = wants.map((max, i) => sim.request({ op: 'claim', topic: 'q', node: `w${i}`, max, leaseMs: null }));
  for (const id of ids) assert.equal(sim.replies.get(id), undefined, 'claims wait for the window');
  sim.advance(JITTER);
  return ids.map((id, i) => {
    const b = okBody(sim.replies.get(id), `claim ${i}`);
    assert.equal(b.count, b.claimed.length);
    return b.claimed.map((j: any) => j.$seq);
  });
}

/** Round-robin over the claimers with share left, one job at a time, from the first claimer. */
function dealOracle(jobs: readonly number[], share: readonly number[]): number[][] {
  const given = share.map(() => [] as number[]);
  const left = share.slice();
  let i = 0;
  for (const seq of jobs) {
    let guard = 0;
    while (left[i % left.length] === 0) {
      i++;
      assert.ok(++guard <= left.length, 'a job with nobody left to take it');
    }
    given[i % left.length]!.push(seq);
    left[i % left.length]!--;
    i++;
  }
  return given;
}

test('dealing: jobs go one at a time round-robin over the claimers with share left', () => {
  assert.deepEqual(cohort([4, 4], 7), [
    [1, 3, 5, 7],
    [2, 4, 6],
  ]);
  // shares [1, 3, 1]: w0 takes 1, w1 2, w2 3, then only w1 has share left
  assert.deepEqual(cohort([1, 5, 2], 5), [[1], [2, 4, 5], [3]]);
  // enough for all: everyone's max, still interleaved
  assert.deepEqual(cohort([2, 3], 10), [
    [1, 3],
    [2, 4, 5],
  ]);
  // a claimer that wants 1 among ones that want more
  assert.deepEqual(cohort([3, 1, 3], 6), [[1, 4, 6], [2], [3, 5]]);
  // nothing to deal
  assert.deepEqual(cohort([2, 2], 0), [[], []]);
});

test('property: a cohort gets shares(wants, n) each, dealt round-robin, every job once', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 5 }), fc.nat(40), (wants, n) => {
      const got = cohort(wants, n);
      const dealt = Math.min(n, sum(wants));
      const jobs = Array.from({ length: dealt }, (_, i) => i + 1);
      // the counts follow shares() (whose tie rule is tested above); the interleaving follows them
      assert.deepEqual(
        got.map((g) => g.length),
        shares(wants, dealt),
      );
      assert.deepEqual(got, dealOracle(jobs, shares(wants, dealt)));
      assert.deepEqual(
        got.flat().sort((a, b) => a - b),
        jobs,
        'every job dealt exactly once',
      );
    }),
    { numRuns: 150 },
  );
});

// ---- leaseIdOf -----------------------------------------------------------------------------------

const LEASE_RE = /^lease_[0-9a-f]{24}$/;

test('leaseIdOf: 24 lowercase hex digits for extreme parts; epoch wraps to 24 bits, counter to 40', () => {
  const cases: [{ epoch: number; no: number; rand: number }, string][] = [
    [{ epoch: 0, no: 0, rand: 0 }, 'lease_' + '0'.repeat(24)],
    [{ epoch: 0xff_ffff, no: 2 ** 40 - 1, rand: 0xffff_ffff }, 'lease_' + 'f'.repeat(24)],
    [{ epoch: 2 ** 24, no: 1, rand: 1 }, 'lease_000000' + '0000000001' + '00000001'],
    [{ epoch: 2 ** 24 + 0xabc, no: 2 ** 40, rand: 0 }, 'lease_000abc' + '0000000000' + '00000000'],
    [{ epoch: 0xffff_ffff, no: 2 ** 40 + 5, rand: 0xffff_ffff }, 'lease_ffffff' + '0000000005' + 'ffffffff'],
    [{ epoch: 1, no: 2 ** 40 - 2, rand: 0x8000_0000 }, 'lease_000001' + 'fffffffffe' + '80000000'],
    [
      { epoch: 7, no: Number.MAX_SAFE_INTEGER, rand: 0xdead_beef },
      'lease_000007' + (Number.MAX_SAFE_INTEGER % 2 ** 40).toString(16).padStart(10, '0') + 'deadbeef',
    ],
  ];
  for (const [parts, want] of cases) {
    const id = leaseIdOf(parts.epoch, parts.no, parts.rand);
    assert.match(id, LEASE_RE, JSON.stringify(parts));
    assert.equal(id, want, JSON.stringify(parts));
  }
  fc.assert(
    fc.property(fc.nat({ max: 0xffff_ffff }), fc.maxSafeNat(), fc.nat({ max: 0xffff_ffff }), (epoch, no, rand) => {
      const id = leaseIdOf(epoch, no, rand);
      assert.match(id, LEASE_RE);
      assert.equal(parseInt(id.slice(6, 12), 16), epoch % 2 ** 24);
      assert.equal(parseInt(id.slice(12, 22), 16), no % 2 ** 40);
      assert.equal(parseInt(id.slice(22), 16), rand);
    }),
    { numRuns: 1000 },
  );
});

// ---- LeaseTable ----------------------------------------------------------------------------------

let leaseNo = 0;
function mkLease(deadlineMs: number, connId = 0, node = 'w'): Lease {
  const parts = { epoch: 1, no: ++leaseNo, rand: 42 };
  return { ...parts, id: leaseIdOf(parts.epoch, parts.no, parts.rand), node, deadlineMs, connId };
}

const drain = (t: LeaseTable, ok: (s: number) => boolean = () => true): number[] => {
  const out: number[] = [];
  for (let s = t.popReclaim(ok); s !== undefined; s = t.popReclaim(ok)) out.push(s);
  return out;
};

test('LeaseTable: a lease expires when now > deadline, not at the deadline', () => {
  const t = new LeaseTable();
  const l = mkLease(1000);
  t.lease(5, l);
  assert.equal(t.isClaimable(5), false);
  assert.deepEqual(t.sweep(999), []);
  assert.deepEqual(t.sweep(1000), [], 'at the deadline the lease still holds');
  assert.equal(t.active.get(5), l);
  const expired = t.sweep(1001);
  assert.deepEqual(expired, [{ seq: 5, lease: l }]);
  assert.equal(t.active.has(5), false);
  assert.equal(t.isClaimable(5), true);
  assert.deepEqual(drain(t), [5], 'the expired job is on the reclaim freelist');
  assert.deepEqual(t.sweep(5000), [], 'expired once');
});

test('LeaseTable: a nack delay elapses at readyAt (not before)', () => {
  const t = new LeaseTable();
  t.delay(3, 2000);
  assert.equal(t.isClaimable(3), false);
  t.sweep(1999);
  assert.equal(t.delayed.get(3), 2000);
  assert.deepEqual(drain(t), []);
  t.sweep(2000);
  assert.equal(t.delayed.has(3), false);
  assert.equal(t.isClaimable(3), true);
  assert.deepEqual(drain(t), [3]);
});

test('LeaseTable: stale heap entries after extend, unlease and re-delay are skipped', () => {
  const t = new LeaseTable();
  // extended later: the old deadline entry is stale
  const a = mkLease(1000);
  t.lease(1, a);
  t.extend(1, a, 3000);
  assert.deepEqual(t.sweep(2000), [], 'the old deadline no longer counts');
  assert.equal(t.active.get(1), a);
  assert.equal(t.nextDueMs(), 3001, 'nextDueMs skips the stale entry');
  assert.deepEqual(t.sweep(3001), [{ seq: 1, lease: a }]);
  assert.deepEqual(t.sweep(10_000), [], 'one expiry, although two heap entries named the lease');
  assert.deepEqual(drain(t), [1]);

  // extended to an earlier deadline (extend sets, not adds): expires then, once
  const b = mkLease(5000);
  t.lease(2, b);
  t.extend(2, b, 4000);
  assert.deepEqual(t.sweep(4001), [{ seq: 2, lease: b }]);
  assert.deepEqual(t.sweep(6000), []);
  assert.deepEqual(drain(t), [2]);

  // unleased (ack) then leased again with a new lease: the first lease's entry is stale
  const c1 = mkLease(7000);
  t.lease(3, c1);
  t.unlease(3);
  const c2 = mkLease(9000);
  t.lease(3, c2);
  assert.deepEqual(t.sweep(8000), [], 'the first lease of job 3 is gone; the second holds');
  assert.equal(t.active.get(3), c2);
  assert.deepEqual(t.sweep(9001), [{ seq: 3, lease: c2 }]);
  assert.deepEqual(drain(t), [3]);

  // unleased and never leased again: nothing expires
  t.lease(4, mkLease(11_000));
  t.unlease(4);
  assert.deepEqual(t.sweep(20_000), []);
  assert.deepEqual(drain(t), []);

  // a delay set again: the first readyAt is stale
  t.delay(5, 21_000);
  t.delay(5, 25_000);
  t.sweep(22_000);
  assert.equal(t.delayed.get(5), 25_000);
  assert.equal(t.nextDueMs(), 25_000);
  t.sweep(25_000);
  assert.equal(t.delayed.has(5), false);
  assert.deepEqual(drain(t), [5]);
  assert.equal(t.nextDueMs(), undefined);
});

test('LeaseTable: the heaps stay bounded under endless extends and delays of far deadlines', () => {
  const t = new LeaseTable();
  const day = 86_400_000;
  for (let seq = 1; seq <= 10; seq++) t.lease(seq, mkLease(day, 0));
  // A worker extending its 10 one-day leases every second for a day and a half.
  for (let i = 0; i < 130_000; i++) {
    const seq = (i % 10) + 1;
    t.extend(seq, t.active.get(seq)!, day + i);
    assert.ok(t.heapSizes.deadlines <= 2 * t.active.size + 1024, `deadline heap ${t.heapSizes.deadlines} after ${i} extends`);
  }
  // Delays of jobs that are then deleted (forgotten) before their delay elapses.
  for (let seq = 100; seq < 20_000; seq++) {
    t.delay(seq, 10 * day);
    t.forget(seq);
    assert.ok(t.heapSizes.delays <= 2 * t.delayed.size + 1026, `delay heap ${t.heapSizes.delays}`);
  }
  // Nothing live was lost by the compactions: every lease still expires at its last deadline.
  // (the last extends set deadlines day + 129990 … day + 129999, one per job)
  assert.deepEqual(t.sweep(day + 129_990), []);
  assert.equal(t.sweep(day + 130_000).length, 10);
});

test('LeaseTable: popReclaim serves ascending and drops what is not claimable or not accepted', () => {
  const t = new LeaseTable();
  for (const s of [9, 2, 7, 4, 11, 1]) t.makeReady(s);
  // 7 was leased meanwhile, 4 is delayed, 11 is on its way to the dead-letter topic
  t.lease(7, mkLease(100));
  t.delay(4, 500);
  t.inTransit.add(11);
  assert.equal(
    t.minReclaimable(() => true),
    1,
    'minReclaimable looks without taking',
  );
  assert.equal(
    t.minReclaimable((s) => s !== 1),
    2,
  );
  assert.equal(
    t.popReclaim((s) => s !== 2),
    1,
  );
  assert.equal(
    t.popReclaim((s) => s !== 2),
    9,
    '2 is refused (and dropped), 4 and 7 are not claimable',
  );
  assert.equal(
    t.popReclaim(() => true),
    undefined,
    '11 is in transit',
  );
  assert.equal(
    t.minReclaimable(() => true),
    undefined,
    'the skipped entries were dropped',
  );
  // popped-and-dropped entries do not come back when the job becomes claimable
  t.inTransit.delete(11);
  assert.equal(
    t.popReclaim(() => true),
    undefined,
  );
  // the same seq made ready twice is served once while it is leased after the first
  t.makeReady(3);
  t.makeReady(3);
  assert.equal(
    t.popReclaim(() => true),
    3,
  );
  t.lease(3, mkLease(100));
  assert.equal(
    t.popReclaim(() => true),
    undefined,
  );
});

test('LeaseTable: heldBy counts the leases of each /work connection; claims are not counted', () => {
  const t = new LeaseTable();
  t.lease(1, mkLease(1000, 7));
  t.lease(2, mkLease(2000, 7));
  t.lease(3, mkLease(3000, 8));
  t.lease(4, mkLease(4000, 0));
  assert.equal(t.heldBy(7), 2);
  assert.equal(t.heldBy(8), 1);
  assert.equal(t.heldBy(0), 0, 'claim leases are not per connection');
  assert.deepEqual(t.connsCounted().sort(), [7, 8]);
  assert.deepEqual(t.connLeases(7), [1, 2]);
  t.unlease(1);
  assert.equal(t.heldBy(7), 1);
  // expiry (sweep) gives the connection room too
  assert.deepEqual(
    t.sweep(2001).map((e) => e.seq),
    [2],
  );
  assert.equal(t.heldBy(7), 0);
  assert.deepEqual(t.connLeases(7), []);
  t.forget(3);
  assert.equal(t.heldBy(8), 0);
  t.dropConn(7);
  t.dropConn(8);
  assert.deepEqual(t.connsCounted(), [], 'a closed connection keeps no count');
  assert.equal(t.unlease(99), undefined, 'unleasing what is not leased is a no-op');
  assert.equal(t.active.size, 1);
});

test('LeaseTable: forget clears every structure of a job', () => {
  const t = new LeaseTable();
  t.lease(1, mkLease(1000, 5));
  t.deliveries.set(1, 3);
  t.delay(2, 1500);
  t.deliveries.set(2, 1);
  t.inTransit.add(3);
  t.deliveries.set(3, 4);
  for (const s of [1, 2, 3]) t.forget(s);
  assert.equal(t.active.size, 0);
  assert.deepEqual(t.connLeases(5), []);
  assert.equal(t.delayed.size, 0);
  assert.equal(t.deliveries.size, 0);
  assert.equal(t.inTransit.size, 0);
  assert.equal(t.heldBy(5), 0);
  for (const s of [1, 2, 3]) assert.equal(t.isClaimable(s), true);
  assert.deepEqual(t.sweep(10_000), [], 'their heap entries are stale: nothing expires or elapses');
  assert.deepEqual(drain(t), []);
  assert.equal(t.nextDueMs(), undefined);
});

// ---- deadLetterBody ------------------------------------------------------------------------------

/** Appends one record (raw JSON text) to a log topic on a SimHost; returns its stored text. */
function stored(recordJson: string) {
  const sim = newSim('dead-letter-body');
  put(sim, 'src', { durability: 'memory' });
  const [seq] = append(sim, 'src', `{"records":[${recordJson}]}`);
  const text = sim.actor('src').current!.index.text(seq!);
  assert.ok(text, 'the stored text is in memory');
  return text;
}

function parsedMeta(body: Buffer, p: ParsedAppend): string | undefined {
  const r = p.records[0]!;
  return r.metaLen < 0 ? undefined : body.subarray(r.metaStart, r.metaEnd).toString('utf8');
}

const STAMPS = (q: string, deliveries: number, seq: number) =>
  `"$dead_letter_from":${JSON.stringify(q)},"$dead_letter_deliveries":${deliveries},"$dead_letter_src_seq":${seq}`;

test('deadLetterBody: meta absent or {} → just the stamps; data, tag and node as stored', () => {
  for (const [rec, data, tag, node] of [
    ['{"data":{"a":[1,2,{"b":null}]}}', '{"a":[1,2,{"b":null}]}', undefined, undefined],
    ['{"data":"x","meta":{}}', '"x"', undefined, undefined],
    [
      '{ "data" : [ 1e400 , -0.0 , "\\u00e9\\n" ] , "meta" : { } , "tag" : "t\\u00e9" , "node" : "n-1" }',
      '[1e400,-0.0,"\\u00e9\\n"]',
      't\u00e9',
      'n-1',
    ],
  ] as const) {
    const body = deadLetterBody('jobs', 17, 5, stored(rec));
    const p = parseAppendBody(body, DEAD_LETTER_STAMPS);
    assert.ok(p.ok, `${rec}: ${JSON.stringify(p)}\n${body}`);
    assert.equal(p.value.records.length, 1);
    assert.equal(p.value.create, true, 'the dead-letter topic is created if absent');
    const r = p.value.records[0]!;
    assert.equal(body.subarray(r.dataStart, r.dataEnd).toString(), data, 'data as stored (compact, verbatim)');
    assert.equal(parsedMeta(body, p.value), `{${STAMPS('jobs', 5, 17)}}`);
    assert.equal(r.tag, tag);
    assert.equal(r.node, node);
    // and it is JSON (1e400 aside, which JSON.parse reads as Infinity)
    const doc = JSON.parse(body.toString());
    assert.deepEqual(Object.keys(doc.records[0].meta), ['$dead_letter_from', '$dead_letter_deliveries', '$dead_letter_src_seq']);
  }
});

test('deadLetterBody: the original meta keys verbatim and in order, then the stamps (which win over look-alikes)', () => {
  const meta = '{"z":1e400,"a":{"nested":[1,2]},"m":"\\u2603 snow","dup":1,"dup":2,"$dead_letter_from":"spoof"}';
  const text = stored(`{"data":1,"meta":${meta}}`);
  const body = deadLetterBody('q.name:with-chars', 2 ** 53 - 1, 4_294_967_295, text);
  const p = parseAppendBody(body, DEAD_LETTER_STAMPS);
  assert.ok(p.ok, JSON.stringify(p));
  assert.equal(parsedMeta(body, p.value), `${meta.slice(0, -1)},${STAMPS('q.name:with-chars', 4_294_967_295, 2 ** 53 - 1)}}`);
  const doc = JSON.parse(body.toString()) as { records: { meta: Record<string, unknown> }[] };
  assert.equal(doc.records[0]!.meta.$dead_letter_from, 'q.name:with-chars', 'the real stamp wins over the spoofed one');
  assert.ok(body.toString().includes('"z":1e400,'), '1e400 is copied, not re-serialized');
});

/** A compact meta object text with `keys` keys and exactly `bytes` bytes. */
function metaOf(keys: number, bytes: number): string {
  const names = Array.from({ length: keys }, (_, i) => `k${String(i).padStart(2, '0')}`);
  const skeleton = `{${names.map((k) => `"${k}":""`).join(',')}}`;
  const fill = bytes - skeleton.length;
  assert.ok(fill >= 0);
  const per = Math.floor(fill / keys);
  const extra = fill - per * keys;
  const text = `{${names.map((k, i) => `"${k}":"${'v'.repeat(per + (i < extra ? 1 : 0))}"`).join(',')}}`;
  assert.equal(Buffer.byteLength(text), bytes);
  return text;
}

test('deadLetterBody: a full meta (64 keys, 16 KiB) fits only with the DEAD_LETTER_STAMPS allowance', () => {
  const full = metaOf(LIMITS.maxMetaKeys, LIMITS.maxMetaBytes);
  // the job itself was within the limits
  assert.ok(parseAppendBody(Buffer.from(`{"records":[{"data":0,"meta":${full}}]}`)).ok);
  const longQueue = 'q'.repeat(255); // the longest topic name
  const body = deadLetterBody(
    longQueue,
    Number.MAX_SAFE_INTEGER,
    0xffff_ffff,
    stored(`{"data":{"big":true},"meta":${full},"tag":"t","node":"n"}`),
  );
  const without = parseAppendBody(body);
  assert.equal(without.ok, false, 'without the allowance the stamped copy is over the limit');
  if (!without.ok) {
    assert.equal(without.code, 'record_too_large');
    assert.equal((without.detail as any).limit, 'meta_bytes');
  }
  const withA = parseAppendBody(body, DEAD_LETTER_STAMPS);
  assert.ok(withA.ok, JSON.stringify(withA));
  assert.equal(parsedMeta(body, withA.value), `${full.slice(0, -1)},${STAMPS(longQueue, 0xffff_ffff, Number.MAX_SAFE_INTEGER)}}`);

  // 64 small keys: only the key count is over without the allowance
  const keysOnly = metaOf(LIMITS.maxMetaKeys, 1000);
  const b2 = deadLetterBody('jobs', 1, 1, stored(`{"data":0,"meta":${keysOnly}}`));
  const w2 = parseAppendBody(b2);
  assert.ok(!w2.ok && w2.code === 'record_too_large' && (w2.detail as any).limit === 'meta_keys', JSON.stringify(w2));
  assert.ok(parseAppendBody(b2, DEAD_LETTER_STAMPS).ok);

  // a record at the 1 MiB record limit (data + meta): the stamps fit in the allowance too
  const dataText = `"${'d'.repeat(LIMITS.maxRecordBytes - LIMITS.maxMetaBytes - 2)}"`;
  const b3 = deadLetterBody('jobs', 1, 1, stored(`{"data":${dataText},"meta":${full}}`));
  const w3 = parseAppendBody(b3);
  assert.ok(!w3.ok && w3.code === 'record_too_large', JSON.stringify(w3));
  const a3 = parseAppendBody(b3, DEAD_LETTER_STAMPS);
  assert.ok(a3.ok, JSON.stringify(a3));
  assert.equal(a3.value.records[0]!.dataLen, dataText.length);
});
