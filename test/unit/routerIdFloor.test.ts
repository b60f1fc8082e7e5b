// The router id floor (docs/ARCHITECTURE.md "Routers"; docs/FORMAT.md "Router definitions"): a
// dest keys its progress by router id alone, so an id some topic holds progress of must never be
// handed out again, even when meta/routers.json is missing or older than the data. Recovery
// gathers the highest such id (AppliedTable.maxId per topic, the maximum over the workers:
// higherFloor) and RouterRegistry.load hands out ids above it, and above every stored router's,
// logging a warn line when the file is missing or older than the data. A fresh data directory
// numbers from 1 as before. Then the whole server in this process (CrashWorld: the supervisor, two
// workers, a simulated disk): the floor gathered at recovery from a snapshot's `routers_applied`
// (lazy recovery's sections, or the part-by-part load without it) and from replayed WAL frames. The end-to-end
// case, with real server processes over HTTP: test/crash/routerIdReuse.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RouterRegistry, type RouterHost } from '../../src/supervisor/routerRegistry.js';
import { routerInput, storedRouter } from '../support/routerInput.js';
import { loadRouters, routerFilePath, saveRouters } from '../../src/storage/routerStore.js';
import { nodeFs } from '../../src/storage/fs.js';
import { AppliedTable } from '../../src/actors/router/appliedTable.js';
import { higherFloor } from '../../src/protocol/messages/router.js';
import type { TopicRequest, TopicResult } from '../../src/protocol/messages/rpc.js';
import { workerOf } from '../../src/core/names.js';
import { SimDisk } from '../support/simDisk.js';
import { CrashWorld, diffRequest, replyBody, sweepSettings, SWEEP_DATA_DIR } from '../support/crashWorld.js';

const ok = (text: string): TopicResult => ({ ok: true, status: 200, json: Buffer.from(text, 'utf8'), perf: {} });

/** A registry over faked topic actors (every topic exists) in a fresh data directory. */
function rig() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-rif-'));
  const ids = new Map<string, number>();
  const idOf = (t: string) => ids.get(t) ?? (ids.set(t, 100 + ids.size), ids.get(t)!);
  const host: RouterHost = {
    instances: async (names) => names.map(idOf),
    topicCount: () => ({ live: 0, max: 0 }),
    request: async (req) =>
      ok(req.op === 'routerSet' ? `{"start":0,"head":0,"instance":${idOf(req.topic)}` : req.op === 'put' ? '{"created":true' : '{}'),
  };
  const warn: string[] = [];
  const registry = () =>
    new RouterRegistry(host, nodeFs, dir, 0, { info: () => undefined, warn: (m) => warn.push(m), error: () => undefined });
  const newId = async (reg: RouterRegistry, name: string, source: string, dest: string) => {
    const r = await reg.put(name, routerInput(source, dest));
    assert.ok(r.ok, JSON.stringify(r));
    return r.def.id;
  };
  return { dir, warn, registry, newId, done: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

const stored = storedRouter;

test('AppliedTable.maxId is the highest router id with progress; higherFloor keeps the larger', () => {
  const t = new AppliedTable();
  assert.equal(t.maxId(), 0);
  t.note(3, 10, 10);
  t.note(1, 4, 4);
  assert.equal(t.maxId(), 3);
  const loaded = new AppliedTable();
  loaded.load({ '2': [5, 5], '7': [1, 1] }); // a snapshot's routers_applied
  assert.equal(loaded.maxId(), 7);
  assert.deepEqual(higherFloor(null, null), null);
  assert.deepEqual(higherFloor(null, { id: 2, topic: 'b' }), { id: 2, topic: 'b' });
  assert.deepEqual(higherFloor({ id: 4, topic: 'a' }, { id: 2, topic: 'b' }), { id: 4, topic: 'a' });
  assert.deepEqual(higherFloor({ id: 4, topic: 'a' }, { id: 9, topic: 'b' }), { id: 9, topic: 'b' });
});

test('a fresh data directory numbers routers from 1 and warns of nothing', async () => {
  const { dir, warn, registry, newId, done } = rig();
  const reg = registry();
  await reg.load(null);
  assert.equal(await newId(reg, 'a', 's1', 'd1'), 1);
  assert.equal(await newId(reg, 'b', 's2', 'd2'), 2);
  assert.equal(loadRouters(nodeFs, dir).nextId, 3);
  assert.deepEqual(warn, []);
  done();
});

test('no routers file but progress under router id 4: ids start at 5, and the loss is logged', async () => {
  const { dir, warn, registry, newId, done } = rig();
  const reg = registry();
  await reg.load({ id: 4, topic: 'orders.eu' });
  assert.equal(warn.length, 1);
  assert.match(
    warn[0]!,
    /meta\/routers\.json is missing, but topic orders\.eu holds the progress of router id 4: the router definitions were lost and no router is reinstalled; .*new router ids start at 5/,
  );
  assert.equal(fs.existsSync(path.join(dir, 'meta', 'routers.json')), false, 'the start writes no file of its own');
  assert.equal(await newId(reg, 'r', 'orders', 'orders.eu'), 5);
  assert.equal(loadRouters(nodeFs, dir).nextId, 6);
  done();
});

test('a routers file older than the data: its routers come back with their ids, new ids start above the progress', async () => {
  const { dir, warn, registry, newId, done } = rig();
  await saveRouters(nodeFs, dir, { version: 1, nextId: 2, routers: [stored('old', 1, 'x', 'y')] });
  const reg = registry();
  await reg.load({ id: 3, topic: 'd' });
  assert.deepEqual(
    reg.all().map((r) => [r.name, r.id]),
    [['old', 1]],
  );
  assert.equal(warn.length, 1);
  assert.match(
    warn[0]!,
    /meta\/routers\.json is older than the data \(its nextId is 2, but topic d holds the progress of router id 3\): routers created after it was written are not reinstalled/,
  );
  assert.equal(await newId(reg, 'new', 'b', 'd'), 4);
  done();
});

test('a file at or past the progress changes nothing and warns of nothing', async () => {
  const { dir, warn, registry, newId, done } = rig();
  await saveRouters(nodeFs, dir, { version: 1, nextId: 5, routers: [stored('r', 4, 'x', 'y')] });
  const reg = registry();
  await reg.load({ id: 4, topic: 'y' });
  assert.deepEqual(warn, []);
  assert.equal(await newId(reg, 'n', 'a', 'b'), 5);
  done();
});

test('a stored router id at or above the file nextId (a hand-edited file) is not handed out again', async () => {
  const { dir, registry, newId, done } = rig();
  await saveRouters(nodeFs, dir, { version: 1, nextId: 2, routers: [stored('r', 6, 'x', 'y')] });
  const reg = registry();
  await reg.load(null);
  assert.equal(await newId(reg, 'n', 'a', 'b'), 7);
  done();
});

/** A topic name from `prefix` placed on worker `w` of two. */
function onWorker(prefix: string, w: number): string {
  for (let i = 0; ; i++) if (workerOf(`${prefix}${i}`, 2) === w) return `${prefix}${i}`;
}

async function appendTo(world: CrashWorld, topic: string, tag: string, n: number): Promise<void> {
  const records = Array.from({ length: n }, (_, i) => ({ data: `${tag}${i + 1}` }));
  const body = new TextEncoder().encode(JSON.stringify({ records }));
  const req: TopicRequest = { op: 'append', topic, body, returnSeqs: true, headerIdemKey: undefined };
  replyBody(await world.request(req));
}

/** The data of every record of `topic`, after draining the routers into it. */
async function datasOf(world: CrashWorld, topic: string): Promise<string[]> {
  await world.sup.routers.drainInto(topic);
  const r = await world.request(diffRequest(topic));
  return (replyBody(r) as { records: { data: string }[] }).records.map((x) => x.data);
}

for (const how of ['checkpoint, lazy', 'checkpoint, eager', 'WAL replay'] as const) {
  test(`recovery gathers the id floor over both workers (${how}): a lost routers file hands out no old id`, async () => {
    const disk = new SimDisk({ seed: `router-id-floor-${how}`, durableMkdir: true });
    const settings = sweepSettings({ lazyRecovery: how !== 'checkpoint, eager' });
    const [A, B, D] = [onWorker('a', 1), onWorker('b', 0), onWorker('d', 0)];
    const [X, Y] = [onWorker('x', 0), onWorker('y', 1)];
    const live = new Set<CrashWorld>(); // halted at the end, whatever failed
    const boot = async () => {
      const w = new CrashWorld(disk, settings);
      live.add(w);
      await w.boot();
      return w;
    };
    const halt = (w: CrashWorld) => (live.delete(w), w.halt());
    try {
      let world = await boot();
      // Ids 1 (into D, worker 0) and 2 (into Y, worker 1): the floor is on the other worker.
      assert.equal(await newIdOf(world, 'r1', A, D), 1);
      assert.equal(await newIdOf(world, 'r0', X, Y), 2);
      await appendTo(world, A, 'a', 5);
      await appendTo(world, X, 'x', 2);
      assert.equal((await datasOf(world, D)).length, 5);
      assert.equal((await datasOf(world, Y)).length, 2);
      if (how !== 'WAL replay') await world.checkpoint(); // else the copies' frames are replayed from the WAL
      halt(world);
      disk.crash('process'); // a SIGKILL: what was written stays
      disk.fs().unlinkSync(routerFilePath(SWEEP_DATA_DIR));
      disk.syncAll();

      world = await boot();
      assert.equal(world.sup.routers.size, 0, 'no definition to reinstall');
      const id = await newIdOf(world, 'r2', B, D);
      await appendTo(world, B, 'b', 7);
      assert.deepEqual(
        await datasOf(world, D),
        ['a1', 'a2', 'a3', 'a4', 'a5', 'b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'b7'],
        'every record of B reaches D',
      );
      assert.equal(id, 3, 'above every id in progress, on either worker');
      assert.match(world.logs.join('\n'), /routers\.json is missing, but topic y\d+ holds the progress of router id 2/);
    } finally {
      for (const w of live) w.halt();
    }
  });
}

async function newIdOf(world: CrashWorld, name: string, source: string, dest: string): Promise<number> {
  const r = await world.sup.routers.put(name, routerInput(source, dest));
  assert.ok(r.ok, JSON.stringify(r));
  return r.def.id;
}
