// Compaction (docs/ARCHITECTURE.md "Compaction") on an in-process server over a SimDisk (as the
// crash sweep runs it):
// - a topic's packed first segment compacted into its own file: a queue whose stuck head job
//   sits in its packed segment, with a second stuck job in a later own segment and everything
//   else acked, is compacted; a power loss right after the swap (the snapshot still names the
//   topic's pack runs, the pack is on disk) and one after the next checkpoint (no runs any more,
//   the pack still on disk: another topic lives in it) both recover the same records, lease and
//   counts, with lazy recovery and with every topic loaded at boot. Without the rule that an own
//   file supersedes packed frames of its seqs, recovery indexes the packed segment and then the
//   own file as two segments, and the records of the packed segment cannot be read once its runs
//   are gone;
// - a sealed segment whose last frames still wait for their segment write is not copied yet:
//   a copy of the file as it is would lack them, and the swap would lose them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { FakeClock } from '../../src/core/clock.js';
import type { Settings } from '../../src/config.js';
import type { TopicRequest } from '../../src/protocol/messages/rpc.js';
import { resolveConfig } from '../../src/protocol/topicConfig.js';
import { packsDir, topicsDir } from '../../src/format/layout.js';
import { SimDisk } from '../support/simDisk.js';
import { CrashWorld, diffRequest, replyBody, sweepSettings, SWEEP_DATA_DIR } from '../support/crashWorld.js';

const Q = 'q';
const OTHER = 'other';

function put(topic: string, body: Record<string, unknown>): TopicRequest {
  const r = resolveConfig(topic, body);
  assert.ok(r.ok);
  return { op: 'put', topic, config: r.config };
}

function append(topic: string, data: unknown[]): TopicRequest {
  const records = data.map((d) => ({ data: d }));
  return { op: 'append', topic, body: new TextEncoder().encode(JSON.stringify({ records })), returnSeqs: true, headerIdemKey: undefined };
}

class Rig {
  readonly disk = new SimDisk();
  readonly clock = new FakeClock();
  world!: CrashWorld;

  constructor(
    private readonly lazy: boolean,
    private readonly over: Partial<Settings> = {},
  ) {}

  async boot(): Promise<void> {
    // One worker: the queue and the other topic share a pack. Packs of 4 KiB per topic.
    const settings = sweepSettings({
      workers: 1,
      packBytes: 4096,
      packFileBytes: 1 << 20,
      segmentBytes: 4096,
      lazyRecovery: this.lazy,
      ...this.over,
    });
    this.world = new CrashWorld(this.disk, settings, this.clock);
    await this.world.boot();
  }

  async ok(req: TopicRequest): Promise<Record<string, unknown>> {
    return replyBody(await this.world.request(req));
  }

  /** A power loss: only what is durable stays; the server starts again on it. */
  async powerLoss(): Promise<void> {
    this.world.halt();
    this.disk.crash('durable-only');
    await this.boot();
  }

  ls(dir: string): string[] {
    const fsx = this.disk.fs();
    return fsx.existsSync(dir) ? fsx.readdirSync(dir).sort() : [];
  }

  qDir(): string {
    const dirs = this.ls(topicsDir(SWEEP_DATA_DIR));
    assert.equal(dirs.length, 1, `one topic directory: ${dirs.join()}`);
    return path.join(topicsDir(SWEEP_DATA_DIR), dirs[0]!);
  }

  /** What a client sees of the queue and the other topic. */
  async view(): Promise<unknown> {
    const q = await this.ok(diffRequest(Q));
    const o = await this.ok(diffRequest(OTHER));
    const s = await this.ok({ op: 'state', topic: Q, touch: false });
    const records = (d: Record<string, unknown>) => (d.records as { $seq: number; data: unknown }[]).map((r) => [r.$seq, r.data]);
    return { q: records(q), other: records(o), count: s.count, earliest: s.earliest_seq, queue: s.queue };
  }
}

for (const lazy of [true, false]) {
  test(`a packed segment compacted into its own file recovers with its pack still on disk, before and after the next checkpoint (${lazy ? 'lazy recovery' : 'every topic loaded'})`, async () => {
    const r = new Rig(lazy);
    await r.boot();
    try {
      await r.ok(put(Q, { type: 'queue', durability: 'fsync' }));
      await r.ok(put(OTHER, { durability: 'fsync' }));
      await r.ok(append(OTHER, ['kept-1', 'kept-2']));
      await r.ok(append(Q, ['head']));
      assert.equal((await r.ok({ op: 'claim', topic: Q, node: 'stuck', max: 1, leaseMs: 3_600_000 })).count, 1);
      // Batches of ~1 KB jobs: the packed segment (4 KiB) rolls to own files of 4 KiB.
      const pad = 'p'.repeat(1000);
      for (let b = 0; b < 12; b++)
        await r.ok(
          append(
            Q,
            [0, 1, 2].map((i) => ({ b, i, pad })),
          ),
        );
      // A second job held in a later own segment; every other job acked.
      const late = await r.ok({ op: 'claim', topic: Q, node: 'w', max: 100, leaseMs: 3_600_000 });
      const seqs = (late.claimed as { $seq: number }[]).map((j) => j.$seq);
      const kept = seqs[seqs.length - 5]!;
      await r.ok({ op: 'ack', topic: Q, node: 'w', seqs: seqs.filter((s) => s !== kept), leaseIds: null });
      const before = await r.view();
      assert.equal((before as { count: number }).count, 2);

      const copied = await r.world.sup.compact(50); // copies, then the checkpoint that swaps them in
      assert.ok(copied >= 2, `${copied} copies`);
      assert.ok(
        r.ls(r.qDir()).includes('seg-00000000000000000001.log'),
        `the packed segment is the queue's own file now: ${r.ls(r.qDir()).join()}`,
      );
      const packs = r.ls(packsDir(SWEEP_DATA_DIR));
      assert.ok(packs.length >= 1, 'the pack is still there (the other topic lives in it)');
      assert.deepEqual(await r.view(), before, 'compaction changes nothing a client sees');

      // The snapshot still names the queue's runs in the pack: the own file wins.
      await r.powerLoss();
      assert.deepEqual(await r.view(), before, 'after a power loss right after the swap');

      // The next checkpoint drops the runs; the pack stays for the other topic.
      await r.world.checkpoint();
      assert.deepEqual(r.ls(packsDir(SWEEP_DATA_DIR)), packs);
      assert.deepEqual(await r.view(), before, 'after the recovery and the checkpoint after it');
      await r.powerLoss();
      assert.deepEqual(await r.view(), before, 'after a power loss past the next checkpoint');
      await r.ok(append(Q, ['after']));
      const after = (await r.view()) as { q: [number, unknown][] };
      assert.equal(after.q.length, 3);
      assert.ok(after.q[2]![0] > kept, 'no seq reused');
      // Nothing of the queue is left in the old pack: once the other topic goes, so does the pack.
      await r.ok({ op: 'deleteTopic', topic: OTHER, ifEmpty: false });
      await r.world.checkpoint();
      for (const p of packs) assert.ok(!r.ls(packsDir(SWEEP_DATA_DIR)).includes(p), `pack ${p} unlinked`);
    } finally {
      r.world.halt();
    }
  });
}

test('a sealed segment whose last frames wait for their segment write is not copied until they are written', async () => {
  // Own files from seq 1, and segment writes that wait 2 s (a checkpoint's flush writes them);
  // texts stay in memory until then (reads after the restart come back from the files).
  const r = new Rig(true, { packBytes: 0, segmentWriteDelayMs: 2000, segmentCacheBytes: 1 << 20 });
  await r.boot();
  try {
    const T = 't';
    await r.ok(put(T, { durability: 'fsync' }));
    const pad = 'p'.repeat(1000);
    await r.ok(append(T, ['head']));
    await r.ok({
      op: 'append',
      topic: T,
      body: new TextEncoder().encode(JSON.stringify({ records: [2, 3, 4].map((i) => ({ data: { i, pad }, tag: 'x' })) })),
      returnSeqs: true,
      headerIdemKey: undefined,
    });
    await r.world.checkpoint(); // seqs 1-4 in seg-1 on disk
    await r.ok(append(T, ['keep'])); // seq 5: seg-1 too, its write waits
    await r.ok(
      append(
        T,
        [6, 7, 8].map((i) => ({ i, pad })),
      ),
    ); // rolls to the next segment, waits too
    await r.ok({ op: 'deleteRecords', topic: T, beforeSeq: null, match: { op: 'Eq', value: 'x' } });
    const read = async () => {
      const d = await r.ok({
        op: 'diff',
        topic: T,
        fromSeq: 0,
        limit: 10,
        nodes: null,
        includeTags: false,
        includeMeta: false,
        waitMs: 0,
        maxBatchBytes: 0,
      });
      return (d.records as { $seq: number; data: unknown }[]).map((x) => [x.$seq, x.data]);
    };
    const before = await read();
    assert.deepEqual(before.slice(0, 2), [
      [1, 'head'],
      [5, 'keep'],
    ]);
    // seg-1 is sealed and mostly dead, but holds only seqs 1-4 on disk yet.
    assert.equal(await r.world.sup.compact(50), 0, 'not copied while its last frame waits');
    assert.deepEqual(await read(), before);
    // Written now (the checkpoint above flushed them): the next look copies it.
    assert.equal(await r.world.sup.compact(50), 1);
    assert.deepEqual(await read(), before);
    await r.powerLoss();
    assert.deepEqual(await read(), before);
  } finally {
    r.world.halt();
  }
});
