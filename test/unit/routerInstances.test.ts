// The topic instance ids a router is stored with (docs/FORMAT.md "Router definitions";
// docs/ARCHITECTURE.md "Deleting on a full disk"): a routers file still listing a router whose
// source or dest was deleted and created again since (a save that failed, a crash before it)
// must not bring the router back at start. RouterRegistry.load drops such a router, logs it at
// warn level and rewrites the file without it; a router whose ids match is kept; a router of an
// older build's file (no ids) is kept, and the file then gets its ids.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { RouterRegistry, type RouterHost } from '../../src/supervisor/routerRegistry.js';
import { routerInput, storedRouter } from '../support/routerInput.js';
import { decodeRouterFile, loadRouters, saveRouters, type StoredRouter } from '../../src/storage/routerStore.js';
import { nodeFs } from '../../src/storage/fs.js';
import type { TopicRequest, TopicResult } from '../../src/protocol/messages/rpc.js';

const ok = (text: string): TopicResult => ({ ok: true, status: 200, json: Buffer.from(text, 'utf8'), perf: {} });

/** Topic actors faked over `ids` (topic → instance id; absent: no such topic); every request recorded. */
function rig(ids: Map<string, number>) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-rri-'));
  const sent: TopicRequest[] = [];
  const host: RouterHost = {
    instances: async (names) => names.map((n) => ids.get(n) ?? null),
    topicCount: () => ({ live: 0, max: 0 }),
    request: async (req) => {
      sent.push(req);
      if (req.op === 'put') {
        if (!ids.has(req.topic)) ids.set(req.topic, 100 + ids.size);
        return ok('{"created":true');
      }
      return ok(req.op === 'routerSet' ? `{"start":0,"head":0,"instance":${ids.get(req.topic)}` : '{"removed":true');
    },
  };
  const logs = { info: [] as string[], warn: [] as string[], error: [] as string[] };
  const registry = () =>
    new RouterRegistry(host, nodeFs, dir, 0, {
      info: (m) => logs.info.push(m),
      warn: (m) => logs.warn.push(m),
      error: (m) => logs.error.push(m),
    });
  const stored = () => loadRouters(nodeFs, dir).routers;
  const installed = () => sent.filter((r) => r.op === 'routerSet').map((r) => (r as { def: { name: string } }).def.name);
  const done = () => fs.rmSync(dir, { recursive: true, force: true });
  return { dir, logs, registry, stored, installed, done };
}

const def = (name: string, source: string, dest: string, id: number): StoredRouter => storedRouter(name, id, source, dest);

test('a PUT stores the instance ids of the source and the dest', async () => {
  const ids = new Map([['s', 7]]);
  const { registry, stored, done } = rig(ids);
  const reg = registry();
  assert.equal((await reg.put('r', routerInput('s', 'd'))).ok, true);
  const [r] = stored();
  assert.equal(r!.sourceInstance, 7);
  assert.equal(r!.destInstance, ids.get('d'));
  assert.equal(reg.get('r')!.destInstance, ids.get('d'));
  done();
});

test('load drops a router whose dest or source is another instance now or missing, logs it, and rewrites the file', async () => {
  const ids = new Map([
    ['s1', 1],
    ['d1', 2],
    ['s2', 3],
    ['d2', 4],
    ['s3', 5],
    ['d3', 6],
  ]);
  const { dir, logs, registry, stored, installed, done } = rig(ids);
  await saveRouters(nodeFs, dir, {
    version: 1,
    nextId: 5,
    routers: [
      { ...def('kept', 's1', 'd1', 1), sourceInstance: 1, destInstance: 2 },
      { ...def('newdest', 's2', 'd2', 2), sourceInstance: 3, destInstance: 40 },
      { ...def('newsource', 's3', 'd3', 3), sourceInstance: 50, destInstance: 6 },
      { ...def('gone', 's1', 'nowhere', 4), sourceInstance: 1, destInstance: 9 },
    ],
  });
  const reg = registry();
  await reg.load();
  assert.deepEqual(
    reg.all().map((r) => r.name),
    ['kept'],
  );
  assert.deepEqual(installed(), ['kept'], 'no forwarder is installed for a dropped router');
  assert.deepEqual(
    stored().map((r) => r.name),
    ['kept'],
    'the file is rewritten without them',
  );
  assert.equal(logs.warn.length, 3, logs.warn.join('\n'));
  assert.match(logs.warn[0]!, /router newdest dropped: d2 was deleted and created again since it was stored/);
  assert.match(logs.warn[1]!, /router newsource dropped: s3 was deleted and created again since it was stored/);
  assert.match(logs.warn[2]!, /router gone dropped: nowhere does not exist/);
  done();
});

test('load keeps a router stored without ids (an older build) and stores its ids', async () => {
  const ids = new Map([
    ['s', 11],
    ['d', 12],
  ]);
  const { dir, logs, registry, stored, installed, done } = rig(ids);
  await saveRouters(nodeFs, dir, { version: 1, nextId: 2, routers: [def('old', 's', 'd', 1)] });
  const reg = registry();
  await reg.load();
  assert.deepEqual(installed(), ['old']);
  assert.equal(reg.get('old')!.sourceInstance, 11);
  assert.deepEqual(logs.warn, []);
  const [r] = stored();
  assert.deepEqual([r!.name, r!.sourceInstance, r!.destInstance], ['old', 11, 12], 'the file now holds its ids');

  // Its dest deleted and created again while the file still lists it: the next start drops it.
  ids.set('d', 13);
  const next = registry();
  await next.load();
  assert.equal(next.get('old'), undefined);
  assert.deepEqual(stored(), []);
  assert.match(logs.warn.join('\n'), /router old dropped: d was deleted/);
  done();
});

test('the decoder takes the ids (optional) and checks their type', () => {
  const withIds = { ...def('r', 's', 'd', 1), sourceInstance: 1, destInstance: 2 };
  const wrap = (body: unknown) => {
    const text = JSON.stringify(body);
    return JSON.stringify({ crc: crc32(Buffer.from(text, 'utf8')), body: text });
  };
  const f = decodeRouterFile(wrap({ version: 1, nextId: 3, routers: [withIds, def('old', 's2', 'd2', 2)] }));
  assert.notEqual(typeof f, 'string', String(f));
  const bad = decodeRouterFile(wrap({ version: 1, nextId: 2, routers: [{ ...withIds, destInstance: 'x' }] }));
  assert.equal(bad, 'router 0: destInstance is not a topic instance id');
});
