// `spool leases|term|redrive` and `spool claim --wait-ms` (docs/CLI.md "Queue tools"), run as the
// built binary against a spawned server: help with exit 0; the lease table and --json; term
// moving a job (exit 0) and reporting a skipped one (exit 3); redrive all / by tag / by seq with
// --json; a blocking claim that gets a job appended while it waits; usage errors exit 2, an
// absent queue exit 4.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { CLI, killServersAfterFile, type Server } from '../helpers/server.js';
import { useSpoolServer } from '../helpers/spoolServer.js';
import { Spool } from '../../src/client/index.js';

killServersAfterFile();
let srv: Server;
let spool: Spool;
useSpoolServer((s, c) => ((srv = s), (spool = c)));

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[]): Run {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, SPOOL_URL: srv.url }, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The same, without blocking this process (the test acts on the server meanwhile). */
function cliAsync(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, SPOOL_URL: srv.url } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d));
    p.stderr.on('data', (d: Buffer) => (stderr += d));
    p.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('help of every queue tool (and claim) on stdout, exit 0', () => {
  for (const args of [
    ['leases', '--help'],
    ['term', '--help'],
    ['redrive', '--help'],
    ['help', 'redrive'],
    ['help', 'leases'],
    ['claim', '--help'],
  ]) {
    const r = cli(args);
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stdout, /^Usage: spool /);
    assert.equal(r.stderr, '');
  }
  assert.match(cli(['claim', '--help']).stdout, /--wait-ms/);
});

test('leases: a table of who holds what, --node, --json', async () => {
  await spool.putTopic('cl.ls', { type: 'queue', lease_ms: 60_000 });
  await spool.append('cl.ls', [{ data: 1 }, { data: 2 }, { data: 3 }]);
  await spool.claim('cl.ls', { node: 'alpha', max: 2 });
  await spool.claim('cl.ls', { node: 'beta', max: 1 });
  const r = cli(['leases', 'cl.ls']);
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.match(lines[0]!, /^SEQ\s+NODE\s+DELIVERIES\s+DEADLINE\s+VIA$/);
  assert.deepEqual(
    lines.slice(1).map((l) => l.split(/\s+/).slice(0, 3)),
    [
      ['1', 'alpha', '1'],
      ['2', 'alpha', '1'],
      ['3', 'beta', '1'],
    ],
  );
  assert.match(lines[1]!, /in \d+\.\ds\s+claim$/);
  const j = cli(['leases', 'cl.ls', '--node', 'beta', '--json']);
  assert.equal(j.status, 0, j.stderr);
  const parsed = JSON.parse(j.stdout) as { $seq: number; node: string }[];
  assert.deepEqual(
    parsed.map((l) => [l.$seq, l.node]),
    [[3, 'beta']],
  );
  assert.equal(cli(['leases', 'cl.ls', '--limit', '1']).stdout.trimEnd().split('\n').length, 2);
  assert.equal(cli(['leases', 'cl.absent']).status, 4);
  assert.equal(cli(['leases', 'cl.ls', '--limit', 'x']).status, 2);
});

test('term moves a held job (exit 0) and reports a skipped one (exit 3); redrive brings it back', async () => {
  await spool.putTopic('cl.t', { type: 'queue', lease_ms: 60_000, dead_letter: 'cl.t.dlq' });
  await spool.append('cl.t', [
    { data: 'a', tag: 'img' },
    { data: 'b', tag: 'doc' },
    { data: 'c', tag: 'img' },
  ]);
  const got = await spool.claim('cl.t', { node: 'w', max: 3 });
  const [j1, j2, j3] = got.claimed;
  let r = cli(['term', 'cl.t', `${j1!.$seq}:${j1!.lease_id}`, String(j2!.$seq), '--node', 'w', '--reason', 'bad input']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'moved 2 to cl.t.dlq\n');
  r = cli(['term', 'cl.t', String(j3!.$seq), '99', '--node', 'w', '--json']);
  assert.equal(r.status, 3, 'a skipped seq is exit 3');
  assert.deepEqual(JSON.parse(r.stdout).skipped, [99]);
  const dl = (await spool.diff('cl.t.dlq', { include_meta: true })).records;
  assert.equal(dl.length, 3);
  assert.equal((dl[0]!.meta as Record<string, unknown>).$dead_letter_reason, 'bad input');
  r = cli(['redrive', 'cl.t', '--tag', 'img']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'moved 2 jobs from cl.t.dlq back into cl.t\n');
  r = cli(['redrive', 'cl.t', '--seq', '2', '--seq', '77', '--json']);
  assert.equal(r.status, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.deepEqual([j.redriven, j.skipped, j.more], [1, [77], false]);
  assert.deepEqual(
    (await spool.diff('cl.t')).records.map((x) => x.data),
    ['a', 'c', 'b'],
  );
  assert.equal(cli(['redrive', 'cl.t', '--tag', 'a', '--tag-prefix', 'b']).status, 2);
  assert.equal(cli(['redrive', 'cl.t', '--seq', 'x']).status, 2);
  assert.equal(cli(['redrive', 'cl.absent']).status, 4);
  assert.equal(cli(['term', 'cl.t', 'x1']).status, 2);
});

test('claim --wait-ms waits for a job appended meanwhile', async () => {
  await spool.putTopic('cl.w', { type: 'queue' });
  const t0 = Date.now();
  const running = cliAsync(['claim', 'cl.w', '--wait-ms', '20000', '--node', 'w']);
  await sleep(1000);
  await spool.append('cl.w', [{ data: { late: true } }]);
  const r = await running;
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^1\tlease_[0-9a-f]+\t1\t\{"late":true\}\n$/);
  assert.ok(Date.now() - t0 < 15_000);
  const empty = cli(['claim', 'cl.w', '--wait-ms', '300', '--node', 'w']);
  assert.equal(empty.status, 0);
  assert.equal(empty.stdout, '');
});
