// A router PUT and a delete of one of its topics (src/supervisor/routerRegistry.ts): the PUT
// makes its topics and installs its forwarder before it indexes the router, so a delete of either
// end while the PUT waits or runs must wait for it and take the router along (docs/API.md
// "DELETE /v0/topics/:topic"), never delete the topic alone and leave a router naming it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RouterRegistry, type RouterHost } from '../../src/supervisor/routerRegistry.js';
import { routerInput } from '../support/routerInput.js';
import { nodeFs } from '../../src/storage/fs.js';
import type { TopicResult } from '../../src/protocol/messages/rpc.js';
import { fail } from '../../src/protocol/errors.js';

const ok = (text: string): TopicResult => ({ ok: true, status: 200, json: Buffer.from(text, 'utf8'), perf: {} });
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

test('a topic delete that arrives while a router PUT naming it runs waits for it and removes the router', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-rpd-'));
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let putStarted!: () => void;
  const started = new Promise<void>((r) => (putStarted = r));
  const host: RouterHost = {
    instances: async (names) => names.map(() => 1),
    topicCount: () => ({ live: 0, max: 0 }),
    request: async (req) => {
      if (req.op === 'put') {
        putStarted();
        await held; // the PUT is making its topics
      }
      return ok(req.op === 'routerSet' ? '{"start":0,"head":0,"instance":1' : '{"removed":true');
    },
  };
  const reg = new RouterRegistry(host, nodeFs, dir, 0, quiet);
  try {
    const putting = reg.put('r', routerInput('s', 'd'));
    await started;
    let told: string[] | undefined;
    const deleting = reg.deleteTopic('d', async (names) => ((told = names), ok('{"deleted":true')));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(told, undefined, 'the delete waits for the PUT');
    release();
    assert.equal((await putting).ok, true);
    await deleting;
    assert.deepEqual(told, ['r'], 'and takes its router along');
    assert.equal(reg.get('r'), undefined);
    // A topic no PUT names is deleted at once, as before.
    let other: string[] | undefined;
    await reg.deleteTopic('x', async (names) => ((other = names), ok('{"deleted":true')));
    assert.deepEqual(other, []);
  } finally {
    reg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a router PUT whose dest no longer fits under max_topics (a topic made meanwhile) deletes the source it made, if still empty', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-rpd-'));
  const calls: string[] = [];
  const host: RouterHost = {
    instances: async (names) => names.map(() => null),
    topicCount: () => ({ live: 0, max: 2 }), // room for both when asked
    request: async (req) => {
      calls.push(req.op === 'deleteTopic' ? `deleteTopic ${req.topic} ifEmpty=${req.ifEmpty}` : `${req.op} ${req.topic}`);
      if (req.op === 'put' && req.topic === 's') return { ...ok('{"created":true'), status: 201 };
      if (req.op === 'put') return fail('throttled', 'too many topics', { limit: 'max_topics', max: 2 });
      return ok('{"deleted":true');
    },
  };
  const reg = new RouterRegistry(host, nodeFs, dir, 0, quiet);
  try {
    const r = await reg.put('r', routerInput('s', 'd'));
    assert.equal(r.ok, false);
    assert.deepEqual(calls, ['put s', 'put d', 'deleteTopic s ifEmpty=true']);
    assert.equal(reg.get('r'), undefined);
  } finally {
    reg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
