// The in-process world of the crash sweep (test/support/crashWorld.ts, inProcessThreads.ts): the
// real supervisor, workers and WAL writer on one thread and a SimDisk. It is deterministic (two
// runs of the sweep workload make the same fs calls, so a crash point names the same call every
// time), its topics are spread over both workers, an abandoned world is collected, and a few
// crash cases run here so the quick gate exercises the sweep (test/crash/crashSweep.test.ts
// runs every call).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { workerOf } from '../../src/core/names.js';
import { SimDisk } from '../support/simDisk.js';
import { CrashWorld, sweepSettings } from '../support/crashWorld.js';
import { DEFAULT_SEED, makeWorkload, SWEEP_TOPICS } from '../support/crashPlan.js';
import { runWorkload } from '../support/crashWorkload.js';
import { dryRun, runCase, sweepPoints } from '../support/crashSweep.js';

test('two runs of the sweep workload make the same fs calls', async () => {
  const [a, b] = [await dryRun(DEFAULT_SEED), await dryRun(DEFAULT_SEED)];
  assert.ok(a.totalCalls > 300, `the workload makes ${a.totalCalls} fs calls`);
  assert.deepEqual(b, a);
});

test('an undisturbed run of the sweep workload acks every kind of operation, rotates WAL files, seals segments and packs and checkpoints', async () => {
  // The sweep only means something if the workload it crashes does all of this.
  const workload = makeWorkload(DEFAULT_SEED);
  const disk = new SimDisk();
  const world = new CrashWorld(disk, sweepSettings(workload.settings));
  await world.boot();
  const h = await runWorkload(world, disk, workload);
  world.halt();
  assert.equal(h.acked, h.issued);
  assert.deepEqual([...new Set(workload.steps.flat().map((o) => o.t))].sort(), [
    'ack',
    'append',
    'checkpoint',
    'claim',
    'compact',
    'deleteBefore',
    'deleteMatch',
    'drop',
    'put',
  ]);
  assert.deepEqual(new Set([...h.topics.values()].map((t) => t.spec.durability)), new Set(['ephemeral', 'memory', 'disk', 'fsync']));
  for (const [topic, t] of h.topics)
    assert.ok(
      t.instances.every((i) => i.createAcked && i.maxAckedSeq > 0),
      `${topic}: created and appended to`,
    );
  const users = h.topics.get('users')!.instances;
  assert.ok(users.length === 2 && users[0]!.drop?.acked, 'users is deleted and created again');
  const jobs = h.topics.get('jobs')!.instances[0]!;
  assert.ok(jobs.leases.size >= 3 && jobs.deletes.some((d) => d.acked), 'jobs are claimed and acked');
  const calls = disk.callLog();
  assert.ok(calls.length < 1000, 'the call log holds the whole run');
  const files = (re: RegExp) => new Set(calls.map((c) => c.to ?? c.path ?? '').filter((p) => re.test(p)));
  assert.ok(files(/\/wal\/\d+\.wal$/).size >= 3, 'WAL files rotate');
  assert.ok(files(/\/meta\/snapshot-.*\.snap$/).size >= 4, 'checkpoints run (recovery, workload, end)');
  const segsPerTopic = new Map<string, number>();
  for (const f of files(/\/topics\/\d+\/seg-\d+\.log$/))
    segsPerTopic.set(f.split('/').at(-2)!, (segsPerTopic.get(f.split('/').at(-2)!) ?? 0) + 1);
  assert.ok(
    [...segsPerTopic.values()].some((n) => n >= 3),
    'segments seal',
  );
  // Packs (docs/FORMAT.md "Pack files"): several seal, some topics roll from theirs to own
  // files, others never leave them.
  assert.ok(files(/\/packs\/pack-\d{20}-\d+-\d+\.log$/).size >= 3, 'pack files seal');
  const withFrames = [...h.topics.values()].filter((t) => t.spec.durability !== 'ephemeral').reduce((n, t) => n + t.instances.length, 0);
  assert.ok(
    segsPerTopic.size >= 1 && segsPerTopic.size < withFrames,
    `${segsPerTopic.size} of ${withFrames} topic instances have own segment files`,
  );
  assert.ok(
    calls.some((c) => c.op === 'rm' && /\/packs\/pack-/.test(c.path ?? '')),
    'a checkpoint unlinks a pack nothing live is left in',
  );
  // Compaction (docs/ARCHITECTURE.md "Compaction"): copies are written and renamed over their segments.
  assert.ok(
    calls.some((c) => c.op === 'rename' && /\.log\.compact$/.test(c.path ?? '') && /\/seg-\d+\.log$/.test(c.to ?? '')),
    'a compacted copy is swapped in',
  );
  // A packed first segment moves into its topic's own file (a name no call used before), and a
  // pack is unlinked at the checkpoint after that.
  const used = new Set<string>();
  let movedAt = -1;
  calls.forEach((c, i) => {
    if (movedAt < 0 && c.op === 'rename' && /\.log\.compact$/.test(c.path ?? '') && !used.has(c.to!)) movedAt = i;
    if (c.path) used.add(c.path);
  });
  assert.ok(movedAt >= 0, 'a packed segment is compacted into an own file');
  assert.ok(
    calls.slice(movedAt).some((c) => c.op === 'rm' && /\/packs\/pack-/.test(c.path ?? '')),
    'a pack is unlinked after the move',
  );
});

test('the sweep topics live on both workers', () => {
  const workers = sweepSettings().workers;
  assert.deepEqual(new Set(SWEEP_TOPICS.map((t) => workerOf(t, workers))).size, workers);
});

/** A world frozen mid-workload (calls pending) and halted; only weak references come back. */
async function abandonedWorld(freezeAt: number): Promise<WeakRef<object>[]> {
  const disk = new SimDisk();
  disk.freezeAt(freezeAt);
  const world = new CrashWorld(disk, sweepSettings());
  await world.boot();
  await runWorkload(world, disk, makeWorkload(DEFAULT_SEED));
  assert.ok(disk.isFrozen);
  world.halt();
  return [new WeakRef(world), new WeakRef(disk)];
}

test('an abandoned world (frozen mid-workload, pending calls and all) is garbage collected', async () => {
  // Comlink keeps a proxy's endpoint in a finalization registry; a call left pending used to
  // keep the whole world reachable from it, until Supervisor.abandon() released the proxies.
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const refs: WeakRef<object>[] = [];
  for (let i = 0; i < 3; i++) refs.push(...(await abandonedWorld(120 + 9 * i)));
  for (let k = 0; k < 5 && refs.some((r) => r.deref()); k++) {
    await new Promise((r) => setTimeout(r, 20));
    gc();
  }
  assert.equal(refs.filter((r) => r.deref()).length, 0, 'halted worlds stay reachable');
});

test('a few crash cases of the sweep', async () => {
  const dry = await dryRun(DEFAULT_SEED);
  const points = sweepPoints(dry, 29);
  for (const [i, at] of points.entries()) {
    const r = await runCase({ seed: DEFAULT_SEED, mode: (['durable-only', 'random', 'random-dirs'] as const)[i % 3]!, at });
    assert.deepEqual(r.violations, [], r.report);
  }
});
