// Property-based model of router forwarding (docs/ARCHITECTURE.md "Routers", "Traces and replay"), shared by the unit test
// (test/unit/routerModel.test.ts) and long fuzz sessions (`npm run fuzz -- --router`). Random
// command sequences drive the REAL source and dest actors on a SimHost (manual clock, simulated
// WAL whose writes and fsyncs, peer messages, timers and crashes happen only on command):
// appends to the source, WAL writes and syncs, peer deliveries, time (backoff timers), the dest
// turning full (`discard: reject` at its current count: forwards are refused) and free again,
// checkpoints, SIGKILL and power loss, and a clean SIGTERM with its restart. After a crash or
// restart the router is reinstalled from its stored start, as the registry does at boot.
// Checked after every command:
// - the dest's copies carry strictly increasing source seqs (`_spool_router`): no duplicate, no
//   reorder, whatever crashed (exactly_once);
// - no gap: every source record at or below the forwarder's cursor that passes the filter has its
//   copy in the dest, so progress never passes what the dest holds (after a crash the cursor
//   comes back from the dest's durable frames);
// and at the end, with everything delivered and the dest free: the copies are exactly the source
// records that pass the filter, in order. A SIGTERM (the drain of docs/ARCHITECTURE.md "Startup
// and shutdown" step 4: forwarders stopped, their requests answered, WAL flushed, final
// checkpoint) leaves nothing after the checkpoint however long the threads run on, so its
// restart replays nothing and keeps the dest's head: no seq padded.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SimHost } from '../test/support/simHost.js';
import { resolveConfig, type Durability } from '../src/protocol/topicConfig.js';
import type { TopicRequest } from '../src/protocol/messages/rpc.js';
import type { RouterDef } from '../src/protocol/messages/router.js';
import { forwardsOut } from '../src/actors/router/forwarder.js';

const S = 'src';
const D = 'dst';

export interface RouterCfg {
  source: Durability;
  dest: Durability;
  filter: boolean;
}

type Cmd =
  | { k: 'append'; n: number }
  | { k: 'wal'; w: 'write' | 'writeOne' | 'sync' }
  | { k: 'peer' }
  | { k: 'advance'; ms: number }
  | { k: 'cap'; full: boolean }
  | { k: 'checkpoint' }
  | { k: 'crash'; mode: 'kill' | 'power'; keep: number }
  | { k: 'term' };

export const cfgArb: fc.Arbitrary<RouterCfg> = fc.record({
  source: fc.constantFrom<Durability>('disk', 'fsync'),
  dest: fc.constantFrom<Durability>('disk', 'fsync'),
  filter: fc.boolean(),
});

export const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 5 }).map((n): Cmd => ({ k: 'append', n })) },
  { weight: 4, arbitrary: fc.constantFrom<'write' | 'writeOne' | 'sync'>('write', 'writeOne', 'sync').map((w): Cmd => ({ k: 'wal', w })) },
  { weight: 5, arbitrary: fc.constant<Cmd>({ k: 'peer' }) },
  { weight: 2, arbitrary: fc.constantFrom(10, 60, 500, 2100).map((ms): Cmd => ({ k: 'advance', ms })) },
  { weight: 1, arbitrary: fc.boolean().map((full): Cmd => ({ k: 'cap', full })) },
  { weight: 1, arbitrary: fc.constant<Cmd>({ k: 'checkpoint' }) },
  { weight: 1, arbitrary: fc.constant<Cmd>({ k: 'term' }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom<'kill' | 'power'>('kill', 'power'), fc.nat(3))
      .map(([mode, keep]): Cmd => ({ k: 'crash', mode, keep })),
  },
);

class World {
  readonly sim: SimHost;
  readonly def: RouterDef;
  start = 0;
  private next = 0;

  constructor(
    readonly cfg: RouterCfg,
    seed: string,
  ) {
    this.sim = new SimHost({ seed, maxLimit: 1000, segmentBytes: 64 * 1024 * 1024, maxTopics: 0 });
    this.def = {
      name: 'r',
      id: 1,
      source: S,
      dest: D,
      preserveNode: true,
      preserveTag: true,
      filter: cfg.filter ? { op: 'Eq', value: 'k' } : null,
      allowCycle: false,
      guarantee: 'exactly_once',
    };
    this.must({ op: 'put', topic: S, config: this.config(S, cfg.source, false) });
    this.must({ op: 'put', topic: D, config: this.config(D, cfg.dest, false) });
    const r = this.must({ op: 'routerSet', topic: S, def: this.def, start: null });
    this.start = (JSON.parse(Buffer.from(r).toString('utf8') + '}') as { start: number }).start;
  }

  config(topic: string, durability: Durability, full: boolean) {
    const cap = full ? Math.max(1, this.count(D)) : 0;
    const c = resolveConfig(topic, { durability, ...(topic === D ? { discard: 'reject', cap_records: cap } : {}) });
    assert.ok(c.ok);
    return c.config;
  }

  /** Records held and on their way to visibility: a tighter cap would evict dest records. */
  private count(topic: string): number {
    const inst = this.sim.actor(topic).current;
    return inst ? inst.count + inst.pendingCount : 0;
  }

  /** A request that must succeed once the WAL is flushed (setup, reinstall). */
  must(req: TopicRequest): Uint8Array {
    const id = this.sim.request(req);
    this.sim.flushAll();
    const r = this.sim.replies.get(id);
    assert.ok(r?.ok, `${req.op} failed: ${JSON.stringify(r)}`);
    this.sim.replies.delete(id);
    return r.json;
  }

  run(c: Cmd): void {
    const sim = this.sim;
    switch (c.k) {
      case 'append': {
        const records = Array.from({ length: c.n }, () => ({ data: { i: this.next++ }, tag: this.next % 3 === 0 ? 'z' : 'k' }));
        sim.request({
          op: 'append',
          topic: S,
          body: Buffer.from(JSON.stringify({ records })),
          returnSeqs: false,
          headerIdemKey: undefined,
        });
        return;
      }
      case 'wal':
        if (c.w === 'write') sim.writeFrames();
        else if (c.w === 'writeOne') sim.writeFrames(1);
        else sim.syncFrames();
        return;
      case 'peer':
        sim.deliverPeer();
        return;
      case 'advance':
        sim.advance(c.ms);
        return;
      case 'cap':
        sim.request({ op: 'put', topic: D, config: this.config(D, this.cfg.dest, c.full) });
        return;
      case 'checkpoint':
        sim.takeCheckpoint();
        return;
      case 'crash':
        // A `disk` source promises nothing past its fsynced prefix under power loss: copies of
        // lost source records may then outlive them (the class's documented behaviour).
        sim.crash(this.cfg.source === 'disk' ? 'kill' : c.mode, c.keep);
        this.reinstall();
        return;
      case 'term':
        this.term();
        this.reinstall();
        return;
    }
  }

  private reinstall(): void {
    this.sim.replies.clear();
    if (this.sim.actor(S).current && this.sim.actor(D).current) this.must({ op: 'routerSet', topic: S, def: this.def, start: this.start });
  }

  /** A clean SIGTERM and restart (src/supervisor/supervisor.ts shutdown). */
  private term(): void {
    const sim = this.sim;
    const src = sim.actor(S).current;
    sim.input(S, { k: 'stopRouters' });
    // The drain waits until the requests out are answered (workers still serve each other).
    for (let i = 0; src && forwardsOut(src) > 0 && i < 10; i++) {
      sim.flushAll();
      while (sim.deliverPeer()) sim.flushAll();
    }
    assert.equal(src ? forwardsOut(src) : 0, 0, 'a stopped forwarder still has a request out');
    sim.flushAll();
    sim.takeCheckpoint(true);
    const cut = sim.frames.length;
    const head = sim.actor(D).current?.head;
    // The threads run on until they stop: timers fire, peer messages cross; nothing may reach the dest.
    sim.advance(2100);
    while (sim.deliverPeer()) sim.flushAll();
    sim.flushAll();
    assert.equal(sim.frames.length, cut, 'a frame after the final checkpoint (the restart would replay it)');
    sim.crash('kill'); // everything is durable: a restart from the final checkpoint
    assert.equal(sim.actor(D).current?.head, head, 'the restart moved the dest head (seqs padded)');
  }

  /** Visible records of a topic as a client reads them (cold texts read back). */
  read(topic: string): { seq: number; tag?: string; meta?: Record<string, unknown> }[] {
    const out: { seq: number; tag?: string; meta?: Record<string, unknown> }[] = [];
    if (!this.sim.actor(topic).current) return out;
    for (let from = 0; ;) {
      const id = this.sim.request({
        op: 'diff',
        topic,
        fromSeq: from,
        limit: 1000,
        nodes: null,
        includeTags: true,
        includeMeta: true,
        waitMs: 0,
        maxBatchBytes: 0,
      });
      const r = this.sim.replies.get(id);
      this.sim.replies.delete(id);
      assert.ok(r?.ok, `diff ${topic}: ${JSON.stringify(r)}`);
      const body = JSON.parse(Buffer.from(r.json).toString('utf8') + '}') as {
        records: { $seq: number; $tag?: string; meta?: Record<string, unknown> }[];
        next_from_seq: number;
        caught_up: boolean;
      };
      out.push(...body.records.map((x) => ({ seq: x.$seq, tag: x.$tag, meta: x.meta })));
      if (body.caught_up || body.records.length === 0) return out;
      from = body.next_from_seq;
    }
  }

  passes(tag: string | undefined): boolean {
    return !this.cfg.filter || tag === 'k';
  }

  /** The invariants that hold after every command. */
  check(): void {
    const copies = this.read(D).map((x) => Number(String(x.meta?._spool_router).split(':').pop()));
    for (let i = 1; i < copies.length; i++)
      assert.ok(copies[i]! > copies[i - 1]!, `copies out of order or duplicated: ${copies.join(',')}`);
    const f = this.sim.actor(S).current?.routing?.forwarders.get('r');
    if (!f || !f.known) return;
    const held = new Set(copies);
    for (const s of this.read(S)) {
      if (s.seq > f.cursor) break;
      if (this.passes(s.tag))
        assert.ok(held.has(s.seq), `gap: source ${s.seq} is at or below the cursor ${f.cursor} but not in the dest (${copies.join(',')})`);
    }
  }

  /** Everything delivered, the dest free: the copies are exactly the passing source records. */
  finish(): void {
    this.run({ k: 'cap', full: false });
    for (let round = 0; round < 12; round++) {
      this.sim.flushAll();
      while (this.sim.deliverPeer()) this.sim.flushAll();
      this.sim.advance(2100);
    }
    this.check();
    const copies = this.read(D).map((x) => Number(String(x.meta?._spool_router).split(':').pop()));
    const want = this.read(S)
      .filter((s) => s.seq > this.start && this.passes(s.tag))
      .map((s) => s.seq);
    assert.deepEqual(copies, want, 'the dest does not hold exactly the passing source records');
  }
}

export function routerProperty(maxCommands: number): fc.IPropertyWithHooks<[RouterCfg, string, Cmd[]]> {
  return fc.property(
    cfgArb,
    fc.string({ maxLength: 8 }),
    fc.array(cmdArb, { minLength: Math.floor(maxCommands / 2), maxLength: maxCommands }),
    (cfg, seed, cmds) => {
      const w = new World(cfg, seed);
      for (const c of cmds) {
        w.run(c);
        w.check();
      }
      w.finish();
    },
  );
}
