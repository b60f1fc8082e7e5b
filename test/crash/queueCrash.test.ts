// Queue crash test against the real server process (docs/QUEUES.md "Durability and restarts",
// "Job states"; docs/API.md "Queues", "Topic lifecycle"): two `fsync` queues, one with plain
// leases and one with `leases_durable: true`. A producer per queue appends jobs while workers
// claim (short lease_ms), ack most, nack some (with and without delay_ms) and abandon the rest;
// the server is SIGKILLed at a random moment, three times, and restarted on the same data
// directory. Checked:
// - during the load: a claim never returns a job whose ack got a 200 before the claim was sent;
//   an ack never reports a seq that an earlier ack already removed; a job is never leased to two
//   live holders at once (the next lease of a seq starts after the previous deadline or after the
//   previous holder's nack + delay_ms); deliveries go up by exactly one per claim within a process
//   (at least one across a restart on the leases_durable queue); an ack answered before its
//   lease's deadline is never skipped; claimed data is the appended data;
// - after each restart: no acked seq is in a diff of the queue or ever claimable; every job whose
//   append got a 200 and whose ack did not is still in the log with its data, and all of them
//   (every live job, in fact) become claimable within lease_ms + a few seconds; on the
//   leases_durable queue a lease answered before the crash still holds after the restart (its
//   job is not handed out before its deadline) and the delivery count never goes back;
//   the counters agree (count, ready, in_flight, dead_lettered 0) once the verifier holds all;
// - finally a clean SIGTERM exits 0.
//
// The random seed is printed as a diagnostic; rerun a failure with CRASH_SEED=<seed>.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { seededRng } from '../../src/core/rng.js';
import fs from 'node:fs';
import { client, killServersAfterFile, startServer, tempDir, type Server } from '../helpers/server.js';

killServersAfterFile();

type Api = ReturnType<typeof client>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Tolerance when judging whether two leases of one seq overlapped. A lease's start is derived as
 * deadline − lease_ms; a server may stamp "claim time" when the request arrived rather than when
 * its claim pass ran, so the derived start can be a little earlier than the moment the previous
 * lease expired or was released. A real double lease overlaps by far more (up to lease_ms).
 */
const OVERLAP_TOLERANCE_MS = 100;
/** Slack for comparing a client-side Date.now() with a server-side time (same system clock). */
const CLIENT_EPS = 20;
const VERIFY_EXTRA_MS = 6000;

interface LeaseRec {
  node: string;
  leaseId: string;
  leaseMs: number;
  claimAt: number;
  deadline: number;
  deliveries: number;
  /** Server process (cycle) that handed it out. */
  proc: number;
  nackSentAt?: number;
  nackDelay?: number;
}

interface Job {
  $seq: number;
  data: { id: string };
  lease_id: string;
  deadline: number;
  deliveries: number;
}

/** What the test knows about one queue. */
class QueueModel {
  /** seq → data id, for appends answered 200. */
  readonly appended = new Map<number, string>();
  /** Data ids of every append sent (a job can be claimed before its append's answer is read). */
  readonly sentIds = new Set<string>();
  /** Data ids of appends without an answer (may or may not be in the log). */
  readonly unknownIds = new Set<string>();
  /** seq → Date.now() when its ack's 200 arrived. */
  readonly acked = new Map<number, number>();
  /** Seqs of acks without an answer (may or may not be removed). */
  readonly ackUnknown = new Set<number>();
  /** The last lease seen per seq. */
  readonly lastLease = new Map<number, LeaseRec>();
  readonly violations: string[] = [];
  claims = 0;
  acks = 0;
  nacks = 0;

  constructor(
    readonly name: string,
    readonly leaseMs: number,
    readonly leasesDurable: boolean,
  ) {}

  violation(msg: string): void {
    if (this.violations.length < 20) this.violations.push(`${this.name}: ${msg}`);
  }

  /** Checks and records the jobs of a claim answered 200 (sent at tSend, lease leaseMs). */
  onClaim(node: string, jobs: Job[], tSend: number, leaseMs: number, proc: number): void {
    this.claims++;
    for (const j of jobs) {
      const s = j.$seq;
      const ackedAt = this.acked.get(s);
      if (ackedAt !== undefined && ackedAt < tSend)
        this.violation(`seq ${s} claimed by ${node} although its ack got a 200 ${tSend - ackedAt} ms before the claim was sent`);
      const want = this.appended.get(s);
      const id = j.data?.id;
      if (want !== undefined && id !== want) this.violation(`seq ${s}: claimed data id ${id}, appended ${want}`);
      if (want === undefined && !this.sentIds.has(id)) this.violation(`seq ${s}: claimed data id ${id} was never sent`);
      const cur: LeaseRec = {
        node,
        leaseId: j.lease_id,
        leaseMs,
        claimAt: j.deadline - leaseMs,
        deadline: j.deadline,
        deliveries: j.deliveries,
        proc,
      };
      const prev = this.lastLease.get(s);
      if (prev && (prev.proc === proc || this.leasesDurable)) {
        const expired = cur.claimAt > prev.deadline - OVERLAP_TOLERANCE_MS;
        const nacked = prev.nackSentAt !== undefined && cur.claimAt >= prev.nackSentAt + (prev.nackDelay ?? 0) - OVERLAP_TOLERANCE_MS;
        if (!expired && !nacked) {
          this.violation(
            `seq ${s} leased to ${node} at ${cur.claimAt} (process ${proc}) while the lease of ${prev.node} (process ${prev.proc}) ran until ${prev.deadline}` +
              (prev.nackSentAt !== undefined ? ` (its nack with delay ${prev.nackDelay} was sent at ${prev.nackSentAt})` : ''),
          );
        }
        if (prev.proc === proc && cur.deliveries !== prev.deliveries + 1)
          this.violation(`seq ${s}: deliveries ${cur.deliveries} after ${prev.deliveries} in the same process`);
        if (prev.proc !== proc && cur.deliveries < prev.deliveries + 1)
          this.violation(
            `seq ${s}: deliveries went back from ${prev.deliveries} to ${cur.deliveries} across a restart on a leases_durable queue`,
          );
      }
      if (cur.deliveries < 1) this.violation(`seq ${s}: deliveries ${cur.deliveries}`);
      this.lastLease.set(s, cur);
    }
  }

  /** Records an ack of `jobs` (their seqs and lease_ids, in order) answered 200 at tRecv. */
  onAck(jobs: Job[], skipped: number[], acked: number, tRecv: number): void {
    this.acks++;
    const sk = new Set(skipped);
    const done = jobs.filter((j) => !sk.has(j.$seq));
    if (done.length !== acked) this.violation(`ack of ${jobs.length} seqs: acked ${acked} but ${skipped.length} skipped`);
    for (const j of done) {
      const s = j.$seq;
      if (this.acked.has(s)) this.violation(`seq ${s} acked twice (first at ${this.acked.get(s)}, again at ${tRecv})`);
      this.acked.set(s, tRecv);
    }
    for (const j of jobs) {
      // the lease this ack was for was still live when the answer came back: it must have acted
      if (sk.has(j.$seq) && tRecv < j.deadline - CLIENT_EPS)
        this.violation(`seq ${j.$seq}: ack answered ${j.deadline - tRecv} ms before its lease's deadline was skipped`);
    }
  }
}

interface Ctx {
  t: TestContext;
  rnd: () => number;
  proc: number;
}

// ---- load ----------------------------------------------------------------------------------------

async function producer(api: Api, m: QueueModel, ctx: Ctx, stop: () => boolean, errors: Error[]): Promise<void> {
  let b = 0;
  while (!stop()) {
    const n = 1 + Math.floor(ctx.rnd() * 8);
    const ids = Array.from({ length: n }, (_, i) => `p${ctx.proc}b${b}r${i}`);
    b++;
    const records = ids.map((id) => ({ data: { id, pad: 'x'.repeat(Math.floor(ctx.rnd() * 200)) } }));
    for (const id of ids) m.sentIds.add(id);
    let r;
    try {
      r = await api.post(`/v0/topics/${m.name}`, { records });
    } catch {
      for (const id of ids) m.unknownIds.add(id);
      return;
    }
    if (r.status === 200) {
      const seqs: number[] = r.body.seqs;
      if (!Array.isArray(seqs) || seqs.length !== n) {
        errors.push(new Error(`append to ${m.name}: bad reply ${r.text.slice(0, 300)}`));
        return;
      }
      seqs.forEach((s, i) => {
        if (m.appended.has(s)) m.violation(`seq ${s} handed out twice by appends`);
        m.appended.set(s, ids[i]!);
      });
    } else if (r.status !== 429 && r.status !== 503) {
      errors.push(new Error(`append to ${m.name}: unexpected ${r.status} ${r.text.slice(0, 300)}`));
      return;
    }
    await sleep(5 + Math.floor(ctx.rnd() * 20));
  }
}

async function worker(api: Api, m: QueueModel, node: string, ctx: Ctx, stop: () => boolean, errors: Error[]): Promise<void> {
  const unexpected = (what: string, r: { status: number; text: string }) =>
    errors.push(new Error(`${what} on ${m.name}: unexpected ${r.status} ${r.text.slice(0, 300)}`));
  while (!stop()) {
    const max = 1 + Math.floor(ctx.rnd() * 5);
    const tSend = Date.now();
    let r;
    try {
      r = await api.post(`/v0/topics/${m.name}/claim`, { node, max, lease_ms: m.leaseMs });
    } catch {
      return;
    }
    if (r.status === 429 || r.status === 503) {
      await sleep(50);
      continue;
    }
    if (r.status !== 200) return void unexpected('claim', r);
    const jobs: Job[] = r.body.claimed;
    m.onClaim(node, jobs, tSend, m.leaseMs, ctx.proc);
    if (jobs.length === 0) {
      await sleep(20);
      continue;
    }
    const toAck: Job[] = [];
    const toNack: Job[] = [];
    for (const j of jobs) {
      const x = ctx.rnd();
      if (x < 0.7) toAck.push(j);
      else if (x < 0.85) toNack.push(j);
      // else abandoned: never acked, its lease expires
    }
    await sleep(Math.floor(ctx.rnd() * 40)); // "work"
    if (toNack.length) {
      const delay = ctx.rnd() < 0.5 ? 0 : 150;
      const sentAt = Date.now();
      for (const j of toNack) {
        const l = m.lastLease.get(j.$seq);
        if (l && l.leaseId === j.lease_id) {
          l.nackSentAt = sentAt;
          l.nackDelay = delay;
        }
      }
      let n;
      try {
        n = await api.post(`/v0/topics/${m.name}/nack`, {
          node,
          seqs: toNack.map((j) => j.$seq),
          lease_ids: toNack.map((j) => j.lease_id),
          delay_ms: delay,
        });
      } catch {
        return;
      }
      if (n.status === 200) m.nacks++;
      else if (n.status !== 429 && n.status !== 503) return void unexpected('nack', n);
    }
    if (toAck.length) {
      const seqs = toAck.map((j) => j.$seq);
      let a;
      try {
        a = await api.post(`/v0/topics/${m.name}/ack`, { node, seqs, lease_ids: toAck.map((j) => j.lease_id) });
      } catch {
        for (const s of seqs) m.ackUnknown.add(s);
        return;
      }
      if (a.status === 200) m.onAck(toAck, a.body.skipped, a.body.acked, Date.now());
      else if (a.status !== 429 && a.status !== 503) return void unexpected('ack', a);
    }
  }
}

async function runLoad(url: string, models: QueueModel[], ctx: Ctx, killAfterMs: number, kill: () => Promise<void>): Promise<void> {
  const api = client(url);
  let stopped = false;
  const stop = () => stopped;
  const errors: Error[] = [];
  const running: Promise<void>[] = [];
  for (const m of models) {
    running.push(producer(api, m, ctx, stop, errors));
    for (let w = 0; w < 3; w++) running.push(worker(api, m, `w${w}`, ctx, stop, errors));
  }
  await sleep(killAfterMs);
  await kill(); // SIGKILL while everything is in flight
  stopped = true;
  await Promise.all(running);
  if (errors.length) throw errors[0];
}

// ---- verification after a restart -----------------------------------------------------------------

async function diffAll(api: Api, q: string): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  let from = 0;
  for (let i = 0; i < 100_000; i++) {
    const r = await api.post(`/v0/topics/${q}/diff`, { from_seq: from, limit: 1000 });
    assert.equal(r.status, 200, `diff ${q}: ${r.text.slice(0, 300)}`);
    for (const rec of r.body.records) {
      assert.ok(rec.$seq > from, `${q}: diff order`);
      out.set(rec.$seq, rec.data?.id);
    }
    assert.equal(r.body.tombstone, null, `${q}: no tombstone expected (acks are silent deletes)`);
    if (r.body.caught_up) return out;
    assert.ok(r.body.next_from_seq > from, `${q}: diff made no progress from ${from}`);
    from = r.body.next_from_seq;
  }
  throw new Error(`${q}: diff never caught up`);
}

async function verify(api: Api, m: QueueModel, ctx: Ctx): Promise<void> {
  const what = `${m.name} after restart ${ctx.proc}`;
  const present = await diffAll(api, m.name);
  // acked jobs never come back
  for (const [s] of m.acked) assert.ok(!present.has(s), `${what}: seq ${s} was acked (200) but is in the log again`);
  // appended jobs are there with their data, unless acked (or an ack of unknown outcome)
  let required = 0;
  for (const [s, id] of m.appended) {
    if (m.acked.has(s) || m.ackUnknown.has(s)) continue;
    required++;
    assert.equal(
      present.get(s),
      id,
      `${what}: job ${id} appended (200) at seq ${s} and never acked is ${present.has(s) ? 'changed' : 'lost'}`,
    );
  }
  const ids = new Set<string>();
  for (const [s, id] of present) {
    assert.ok(!ids.has(id), `${what}: job ${id} twice in the log`);
    ids.add(id);
    const want = m.appended.get(s);
    if (want !== undefined) assert.equal(id, want, `${what}: seq ${s}`);
    else assert.ok(m.unknownIds.has(id), `${what}: seq ${s} holds ${id}, which was never sent or was answered at another seq`);
  }

  // every live job becomes claimable within lease_ms + a few seconds (old leases expire)
  const held = new Map<number, Job>();
  const deadline = Date.now() + m.leaseMs + VERIFY_EXTRA_MS;
  while (held.size < present.size) {
    const tSend = Date.now();
    const r = await api.post(`/v0/topics/${m.name}/claim`, { node: 'verifier', max: 1000, lease_ms: 30_000 });
    assert.equal(r.status, 200, `${what}: verifier claim: ${r.text.slice(0, 300)}`);
    const jobs: Job[] = r.body.claimed;
    m.onClaim('verifier', jobs, tSend, 30_000, ctx.proc);
    for (const j of jobs) {
      assert.ok(present.has(j.$seq), `${what}: claimed seq ${j.$seq} is not in the log`);
      assert.ok(!held.has(j.$seq), `${what}: seq ${j.$seq} handed to the verifier twice while it holds it`);
      held.set(j.$seq, j);
    }
    if (held.size >= present.size) break;
    if (Date.now() > deadline) {
      const missing = [...present.keys()].filter((s) => !held.has(s));
      assert.fail(
        `${what}: ${missing.length} live jobs not claimable within ${m.leaseMs + VERIFY_EXTRA_MS} ms of the restart: ${missing.slice(0, 20).join(', ')}`,
      );
    }
    if (jobs.length === 0) await sleep(100);
  }
  const st = await api.get(`/v0/topics/${m.name}?touch=false`);
  assert.equal(st.status, 200);
  assert.equal(st.body.count, present.size, `${what}: count`);
  assert.deepEqual(
    st.body.queue,
    { ready: 0, in_flight: present.size, dead_lettered: 0 },
    `${what}: counters while the verifier holds every job`,
  );

  // the verifier acks about a quarter and nacks the rest, so the next cycle has work
  const all = [...held.values()];
  const ackJobs = all.filter(() => ctx.rnd() < 0.25);
  const nackJobs = all.filter((j) => !ackJobs.includes(j));
  for (let i = 0; i < ackJobs.length; i += 1000) {
    const part = ackJobs.slice(i, i + 1000);
    const a = await api.post(`/v0/topics/${m.name}/ack`, {
      node: 'verifier',
      seqs: part.map((j) => j.$seq),
      lease_ids: part.map((j) => j.lease_id),
    });
    assert.equal(a.status, 200, `${what}: verifier ack: ${a.text.slice(0, 300)}`);
    assert.deepEqual(a.body.skipped, [], `${what}: verifier ack skipped`);
    m.onAck(part, a.body.skipped, a.body.acked, Date.now());
  }
  for (let i = 0; i < nackJobs.length; i += 1000) {
    const part = nackJobs.slice(i, i + 1000);
    const sentAt = Date.now();
    for (const j of part) {
      const l = m.lastLease.get(j.$seq)!;
      l.nackSentAt = sentAt;
      l.nackDelay = 0;
    }
    const n = await api.post(`/v0/topics/${m.name}/nack`, {
      node: 'verifier',
      seqs: part.map((j) => j.$seq),
      lease_ids: part.map((j) => j.lease_id),
    });
    assert.equal(n.status, 200, `${what}: verifier nack: ${n.text.slice(0, 300)}`);
    assert.deepEqual(n.body.skipped, [], `${what}: verifier nack skipped`);
    assert.equal(n.body.nacked, part.length);
  }
  const st2 = await api.get(`/v0/topics/${m.name}?touch=false`);
  assert.equal(st2.body.count, nackJobs.length, `${what}: count after the verifier's acks`);
  assert.deepEqual(
    st2.body.queue,
    { ready: nackJobs.length, in_flight: 0, dead_lettered: 0 },
    `${what}: counters after the verifier released everything`,
  );
  ctx.t.diagnostic(
    `${what}: ${present.size} live jobs (${required} required), all claimable; ${m.acked.size} acked so far, ${m.ackUnknown.size} acks of unknown outcome, ${m.claims} claims, ${m.nacks} nacks`,
  );
  assert.deepEqual(m.violations, [], `${m.name}: violations`);
}

// ---- the test ----------------------------------------------------------------------------------------

test(
  'queue crash: 3 SIGKILLs under claim/ack/nack load; acked jobs never return, the rest are kept and claimable',
  { timeout: 120_000 },
  async (t) => {
    const seed = process.env.CRASH_SEED ? Number(process.env.CRASH_SEED) : Math.floor(Math.random() * 2 ** 31);
    t.diagnostic(`seed ${seed} (rerun with CRASH_SEED=${seed})`);
    const rng = seededRng(`queue-crash/${seed}`);
    const rnd = () => rng.next();
    const dataDir = tempDir('spool-qcrash-');
    const env = { SERVICE_WORKERS: '2', SERVICE_CHECKPOINT_MS: '500', SERVICE_WAL_SYNC_INTERVAL_MS: '20' };
    const models = [new QueueModel('jobs.plain', 1000, false), new QueueModel('jobs.durable-leases', 2000, true)];
    const started = Date.now();
    let server: Server = await startServer({ dataDir, env });
    try {
      const api0 = client(server.url);
      for (const m of models) {
        const r = await api0.put(`/v0/topics/${m.name}`, {
          type: 'queue',
          durability: 'fsync',
          lease_ms: m.leaseMs,
          leases_durable: m.leasesDurable,
        });
        assert.equal(r.status, 201, `PUT ${m.name}: ${r.text}`);
      }
      const KILLS = 3;
      for (let proc = 0; proc <= KILLS; proc++) {
        const ctx: Ctx = { t, rnd, proc };
        const api = client(server.url);
        if (proc > 0) for (const m of models) await verify(api, m, ctx);
        if (proc === KILLS) break;
        const killAfter = 1500 + Math.floor(rnd() * 1500);
        const s = server;
        await runLoad(server.url, models, ctx, killAfter, () => s.kill());
        for (const m of models) {
          t.diagnostic(
            `process ${proc}: ${m.name}: SIGKILL after ${killAfter} ms; ${m.appended.size} jobs appended (200), ${m.acked.size} acked (200), ${m.claims} claims so far`,
          );
          assert.deepEqual(m.violations, [], `${m.name}: violations during the load of process ${proc}`);
        }
        server = await startServer({ dataDir, env });
      }
      for (const m of models)
        assert.ok(m.acked.size > 0 && m.claims > 0, `${m.name}: the load did something (${m.acked.size} acks, ${m.claims} claims)`);
      const code = await server.stop();
      assert.equal(code, 0, `clean SIGTERM after the last verification (stderr: ${server.stderr().slice(-500)})`);
      t.diagnostic(`total ${Date.now() - started} ms`);
      for (const p of [dataDir, `${dataDir}-port`]) fs.rmSync(p, { recursive: true, force: true });
    } finally {
      await server.kill();
    }
  },
);
