// The CLI's pure helpers, without a server: `spool work`'s JobBudget (--max-jobs counts jobs
// finished and never lets more finish) and its command lookup (fail fast), and `spool topics
// set|put`'s config merge and change list. The CLI tests (test/cli/cli.test.ts) show the same
// through the real binary against a spawned server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { JobBudget, commandProblem } from '../../src/cli/workLimits.js';
import { configChanges, mergeConfig } from '../../src/cli/topicConfig.js';

const tick = () => new Promise((r) => setImmediate(r));

test('JobBudget: runs jobs while finished + running < max; a failure frees a slot; once spent the waiting job is given back', async () => {
  const b = new JobBudget(2);
  assert.equal(await b.admit(), true);
  assert.equal(await b.admit(), true);
  let third: boolean | undefined;
  void b.admit().then((v) => (third = v));
  await tick();
  assert.equal(third, undefined, 'waits: two are running for a budget of two');
  assert.equal(b.idle, false);
  b.end(false); // a failure that will be retried: its slot is free again
  await tick();
  assert.equal(third, true, 'runs in the freed slot');
  b.end(true);
  let fourth: boolean | undefined;
  void b.admit().then((v) => (fourth = v));
  await tick();
  assert.equal(fourth, undefined);
  b.end(true);
  await tick();
  assert.deepEqual([fourth, b.spent, b.finished, b.idle], [false, true, 2, true], 'spent: the waiting job is given back unrun');
  assert.equal(await b.admit(), false);
});

test('JobBudget: without a limit every job runs; close() gives back the waiting and later ones', async () => {
  const b = new JobBudget(Infinity);
  for (let i = 0; i < 100; i++) assert.equal(await b.admit(), true);
  assert.equal(b.spent, false);
  const one = new JobBudget(1);
  assert.equal(await one.admit(), true);
  const waiting = one.admit();
  one.close();
  assert.equal(await waiting, false);
  one.end(false);
  assert.equal(await one.admit(), false, 'closed: nothing starts any more');
});

test('commandProblem: found as spawn finds it, a path or on PATH; missing, not a file, not executable', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-cmd-'));
  try {
    const exe = path.join(dir, 'run-me');
    fs.writeFileSync(exe, '#!/bin/sh\n', { mode: 0o755 });
    const plain = path.join(dir, 'plain');
    fs.writeFileSync(plain, '#!/bin/sh\n', { mode: 0o644 });
    fs.mkdirSync(path.join(dir, 'sub'));
    assert.equal(commandProblem(exe), undefined);
    assert.equal(commandProblem(process.execPath), undefined);
    assert.equal(commandProblem('run-me', { PATH: `/nonexistent:${dir}` }), undefined, 'on PATH');
    assert.equal(commandProblem('run-me', { PATH: '/nonexistent' }), 'command not found');
    assert.equal(commandProblem(path.join(dir, 'absent')), 'command not found');
    assert.equal(commandProblem(plain), 'permission denied');
    assert.equal(commandProblem(path.join(dir, 'sub')), 'permission denied', 'a directory');
    assert.equal(commandProblem('sh', { PATH: undefined }), undefined, 'no PATH: left to spawn');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('topics set merges named fields over the config; `durable` alone decides the class; changes are listed', () => {
  const have = { type: 'log', cap_records: 50, durable: true, durability: 'fsync', ttl_ms: 0 };
  assert.deepEqual(mergeConfig(have, { ttl_ms: 1000 }), { ...have, ttl_ms: 1000 });
  assert.deepEqual(mergeConfig(have, { durable: false }), { type: 'log', cap_records: 50, durable: false, ttl_ms: 0 });
  assert.deepEqual(mergeConfig(have, { durable: false, durability: 'memory' }), { ...have, durable: false, durability: 'memory' });
  const after = { type: 'log', cap_records: 0, durable: false, durability: 'disk', ttl_ms: 0 };
  assert.deepEqual(configChanges(have, after), ['cap_records 50 → 0', 'durability "fsync" → "disk"'], '`durable` only echoes the class');
  assert.deepEqual(configChanges(have, have), []);
});
