// The routers file on a failed save (docs/ARCHITECTURE.md "Deleting on a full disk"): a topic
// delete whose rewrite of meta/routers.json fails (ENOSPC, injected with FaultFs) still answers
// with the delete's own result, its routers are gone from the registry and from the other ends'
// actors, the failure is logged, and the file, stale meanwhile, is written again without them:
// by the retry timer, or by the next operation that saves, whichever comes first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROUTERS_REWRITE_MS, RouterRegistry, type RouterHost } from '../../src/supervisor/routerRegistry.js';
import { routerInput } from '../support/routerInput.js';
import { loadRouters, routerFilePath } from '../../src/storage/routerStore.js';
import { nodeFs } from '../../src/storage/fs.js';
import type { TopicRequest, TopicResult } from '../../src/protocol/messages/rpc.js';
import { FaultFs } from '../support/faultFs.js';

const ok = (text: string): TopicResult => ({ ok: true, status: 200, json: Buffer.from(text, 'utf8'), perf: {} });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A registry on a FaultFs over a temp dir, its topic actors faked (every request recorded). */
function rig() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-rrs-'));
  const ffs = new FaultFs(nodeFs);
  const sent: TopicRequest[] = [];
  const host: RouterHost = {
    instances: async (names) => names.map(() => 1),
    topicCount: () => ({ live: 0, max: 0 }),
    request: async (req) => {
      sent.push(req);
      return ok(req.op === 'routerSet' ? '{"start":0,"head":0,"instance":1' : '{"removed":true');
    },
  };
  const logs = { info: [] as string[], warn: [] as string[], error: [] as string[] };
  const reg = new RouterRegistry(host, ffs, dir, 0, {
    info: (m) => logs.info.push(m),
    warn: (m) => logs.warn.push(m),
    error: (m) => logs.error.push(m),
  });
  const stored = () => loadRouters(nodeFs, dir).routers.map((r) => r.name);
  // Every write of the routers file (its temp file, the rename) fails until clear().
  const failSaves = () => ffs.failWhen((c) => c.kind !== 'other' && (c.path ?? '').startsWith(routerFilePath(dir)), 'ENOSPC');
  const removes = () => sent.filter((r) => r.op === 'routerRemove').map((r) => `${r.topic}/${(r as { router: string }).router}`);
  const done = () => (reg.stop(), fs.rmSync(dir, { recursive: true, force: true }));
  return { reg, ffs, logs, stored, failSaves, removes, done };
}

test('a topic delete whose routers file save fails answers ok, completes its cascade, and the timer writes the file again', async () => {
  const { reg, ffs, logs, stored, failSaves, removes, done } = rig();
  assert.equal((await reg.put('a', routerInput('s1', 'd1'))).ok, true);
  assert.equal((await reg.put('b', routerInput('d1', 'x1'))).ok, true);
  assert.equal((await reg.put('c', routerInput('s3', 'd3'))).ok, true);
  assert.deepEqual(stored(), ['a', 'b', 'c']);

  failSaves();
  const deleted = ok('{"topic":"d1","deleted":true,"routers_removed":["a","b"]');
  let told: string[] = [];
  const res = await reg.deleteTopic('d1', async (names) => ((told = names), deleted));
  assert.equal(res, deleted, "the reply is the delete's own result");
  assert.deepEqual(told, ['a', 'b']);
  assert.equal(reg.get('a'), undefined);
  assert.equal(reg.get('b'), undefined);
  assert.deepEqual(reg.naming('d1'), []);
  assert.deepEqual(removes(), ['s1/a'], 'the other end (the source of a) stops forwarding; b went with d1 itself');
  assert.equal(logs.error.length, 1, logs.error.join('\n'));
  assert.match(logs.error[0]!, /topic d1 deleted with router\(s\) a, b, but meta\/routers\.json could not be written \(ENOSPC/);
  assert.deepEqual(stored(), ['a', 'b', 'c'], 'the file is stale meanwhile');

  // Still failing: the timer keeps trying, the file stays as it was.
  await sleep(ROUTERS_REWRITE_MS * 1.5);
  assert.deepEqual(stored(), ['a', 'b', 'c']);
  assert.ok(ffs.callLog().filter((c) => c.error === 'ENOSPC').length >= 2, 'the timer tried again');

  ffs.clear();
  // The renamed file shows before the save's promise settles and the line is logged: wait for both.
  for (const t0 = Date.now(); stored().length !== 1 || logs.info.length === 0; await sleep(50)) {
    assert.ok(Date.now() - t0 < 3 * ROUTERS_REWRITE_MS, `written again by the timer (still ${stored().join(', ')})`);
  }
  assert.deepEqual(stored(), ['c']);
  assert.equal(logs.info.length, 1);
  assert.match(logs.info[0]!, /meta\/routers\.json written again/);
  done();
});

test('a stale routers file is written again by the next operation that saves', async () => {
  const { reg, ffs, logs, stored, failSaves, removes, done } = rig();
  assert.equal((await reg.put('a', routerInput('s1', 'd1'))).ok, true);
  failSaves();
  const res = await reg.deleteTopic('d1', async () => ok('{"topic":"d1","deleted":true,"routers_removed":["a"]'));
  assert.equal(res.ok, true);
  assert.deepEqual(removes(), ['s1/a']);
  assert.deepEqual(stored(), ['a']);

  // A PUT of another router saves the definitions whole, before the timer's turn.
  ffs.clear();
  assert.equal((await reg.put('b', routerInput('s2', 'd2'))).ok, true);
  assert.deepEqual(stored(), ['b']);
  await sleep(ROUTERS_REWRITE_MS * 1.5);
  assert.deepEqual(logs.info, [], 'nothing was left for the timer');
  assert.deepEqual(stored(), ['b']);
  done();
});

test('closing the registry writes a stale routers file once more, then retries no more', async () => {
  const { reg, ffs, stored, failSaves, done } = rig();
  assert.equal((await reg.put('a', routerInput('s1', 'd1'))).ok, true);
  failSaves();
  assert.equal((await reg.deleteTopic('d1', async () => ok('{"topic":"d1","deleted":true,"routers_removed":["a"]'))).ok, true);
  assert.deepEqual(stored(), ['a']);
  ffs.clear();
  await reg.close(); // a clean shutdown, before the timer's turn
  assert.deepEqual(stored(), [], 'the restart finds the file as the registry was');
  failSaves();
  await reg.close(); // nothing stale: no write, nothing thrown
  const before = ffs.callLog().length;
  await sleep(ROUTERS_REWRITE_MS * 1.5);
  assert.equal(ffs.callLog().length, before, 'no timer after close');
  done();
});

test('a router delete whose save fails keeps the router (the file still has it) and throws', async () => {
  const { reg, ffs, stored, failSaves, removes, done } = rig();
  assert.equal((await reg.put('a', routerInput('s1', 'd1'))).ok, true);
  failSaves();
  await assert.rejects(reg.delete('a'), /ENOSPC/);
  assert.equal(reg.get('a')?.name, 'a', 'still in the registry');
  assert.deepEqual(reg.naming('d1'), ['a']);
  assert.deepEqual(removes(), [], 'its forwarder keeps running');
  ffs.clear();
  assert.equal(await reg.delete('a'), true);
  assert.deepEqual(removes(), ['s1/a']);
  assert.deepEqual(stored(), []);
  done();
});

test('a router PUT whose definition cannot be stored throws, and its retry answers only once the file holds it', async () => {
  const { reg, ffs, stored, failSaves, done } = rig();
  assert.equal((await reg.put('a', routerInput('s1', 'd1'))).ok, true);
  // The id's save succeeds, the definition's fails: the router runs, the file is stale.
  let saves = 0;
  ffs.failWhen((c) => c.kind !== 'other' && (c.path ?? '').endsWith('.tmp') && c.op.startsWith('open') && ++saves === 2, 'ENOSPC');
  await assert.rejects(reg.put('b', routerInput('s2', 'd2')), /ENOSPC/);
  assert.equal(reg.get('b')?.name, 'b');
  assert.deepEqual(stored(), ['a']);
  failSaves();
  await assert.rejects(reg.put('b', routerInput('s2', 'd2')), /ENOSPC/, 'the retry while the file cannot be written');
  ffs.clear();
  const again = await reg.put('b', routerInput('s2', 'd2'));
  assert.equal(again.ok && again.created, false);
  assert.deepEqual(stored(), ['a', 'b'], 'stored before the 200');
  done();
});
