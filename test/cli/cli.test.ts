// The `spool` command line, run as the built binary (node dist/cli.js) against a spawned server
// (docs/CLI.md): help and version on stdout with exit 0 (every command's, found in the program
// itself), usage errors as one line and exit 2,
// the documented exit codes for 4xx and unreachable servers, --json output parsed, an NDJSON
// round trip of 100k lines (append then read back identical), `tail -f` across a server restart,
// and `work` acking on exit 0 and nacking otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, killServersAfterFile, tempDir, CLI, type Server } from '../helpers/server.js';
import { useSpoolServer } from '../helpers/spoolServer.js';
import { Spool } from '../../src/client/index.js';
import { buildProgram } from '../../src/cli/program.js';
import type { Command } from 'commander';

killServersAfterFile();
let srv: Server;
let spool: Spool;
useSpoolServer((s, c) => ((srv = s), (spool = c)));

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to completion (against `srv` unless --url is given). */
function cli(args: string[], opts: { input?: string; env?: Record<string, string> } = {}): Run {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    input: opts.input,
    encoding: 'utf8',
    env: { ...process.env, SPOOL_URL: srv.url, ...opts.env },
    maxBuffer: 256 * 1024 * 1024,
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A one-line error on stderr, no stack trace. */
function oneLine(r: Run, re: RegExp): void {
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line on stderr: ${JSON.stringify(r.stderr)}`);
  assert.match(lines[0]!, re);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('help and version go to stdout with exit 0; bare `spool` prints the help', () => {
  const pkg = JSON.parse(fs.readFileSync(path.resolve(path.dirname(CLI), '../package.json'), 'utf8'));
  for (const args of [[], ['--help'], ['help'], ['-h']]) {
    const r = cli(args);
    assert.equal(r.status, 0, `spool ${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stdout, /^Usage: spool /);
    assert.match(r.stdout, /append \[options\] <topic>/);
    assert.equal(r.stderr, '');
  }
  for (const args of [
    ['append', '--help'],
    ['help', 'append'],
    ['topics', 'put', '--help'],
    ['work', '--help'],
  ]) {
    const r = cli(args);
    assert.equal(r.status, 0, args.join(' '));
    assert.match(r.stdout, /^Usage: spool /);
    assert.match(r.stdout, /--url <url>|put|work/);
  }
  const v = cli(['--version']);
  assert.deepEqual([v.status, v.stdout.trim()], [0, pkg.version]);
});

/** Runs the CLI without waiting synchronously (for many short runs at once). */
function cliAsync(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, SPOOL_URL: srv.url }, stdio: ['ignore', 'pipe', 'pipe'] });
    const io = { stdout: '', stderr: '' };
    p.stdout!.on('data', (d: Buffer) => (io.stdout += d.toString()));
    p.stderr!.on('data', (d: Buffer) => (io.stderr += d.toString()));
    p.once('close', (status) => resolve({ status, ...io }));
  });
}

/** Every command path registered in the program, subcommands included (`['topics', 'put']`). */
function commandPaths(c: Command, prefix: string[] = []): string[][] {
  return c.commands.flatMap((sub) => [[...prefix, sub.name()], ...commandPaths(sub, [...prefix, sub.name()])]);
}

test(
  "every command's help: `<command> --help`, `help <command>` and `<group> help <sub>` print it with exit 0",
  { timeout: 120_000 },
  async () => {
    const paths = commandPaths(buildProgram({ code: 0, keepAlive: false }));
    assert.ok(paths.length >= 25, `commands found in the program: ${paths.map((p) => p.join(' ')).join(', ')}`);
    for (const must of ['read', 'tail', 'topics put', 'work'])
      assert.ok(
        paths.some((p) => p.join(' ') === must),
        must,
      );
    const runs: string[][] = [];
    for (const p of paths) {
      runs.push([...p, '--help'], ['help', ...p]);
      if (p.length > 1) runs.push([...p.slice(0, -1), 'help', p[p.length - 1]!]);
    }
    const failures: string[] = [];
    for (let i = 0; i < runs.length; i += 4) {
      await Promise.all(
        runs.slice(i, i + 4).map(async (args) => {
          const path = args.filter((a) => a !== 'help' && a !== '--help');
          const r = await cliAsync(args);
          const usage = `Usage: spool ${(path.length ? path : ['help']).join(' ')} `;
          if (r.status !== 0 || r.stderr !== '' || !r.stdout.startsWith(usage))
            failures.push(
              `spool ${args.join(' ')}: exit ${r.status}, stderr ${JSON.stringify(r.stderr)}, stdout ${JSON.stringify(r.stdout.slice(0, 80))}`,
            );
        }),
      );
    }
    assert.deepEqual(failures, [], `${runs.length} help runs`);
  },
);

test('usage errors: one line on stderr, exit 2, never a stack trace', () => {
  const cases: [string[], RegExp][] = [
    [['bogus'], /unknown command 'bogus'/],
    [['read'], /missing required argument 'topic'/],
    [['read', 't', '--limit', 'x'], /--limit .*invalid/],
    [['read', 't', '--nope'], /unknown option '--nope'/],
    [['append', 't', '{bad'], /argument 1: not valid JSON/],
    [['append', 't', '--file', '/nonexistent/x.ndjson'], /\/nonexistent\/x\.ndjson: no such file/],
    [['replay', '/nonexistent/trace.jsonl'], /no such trace file/],
    [['wal-dump', '/nonexistent/data'], /no such data directory/],
    [['verify', '/usr'], /not a spool data directory: \/usr holds none of wal, meta, packs, topics/],
    [['inspect', '/usr'], /not a spool data directory/],
    [['topics'], /a subcommand is required/],
    [['topics', 'nosuch'], /unknown subcommand 'nosuch': ls, get, create, set, put or rm/],
    [['routers', 'nosuch'], /unknown subcommand 'nosuch': ls, get, put or rm/],
    [['topics', 'put', 't', '--type', 'stream'], /--type .*invalid|Allowed choices/],
    [['rm-records', 't'], /give --before, --tag or --tag-prefix/],
    [['ack', 'q', 'seventeen'], /not a job/],
    [['work', 'q'], /missing required argument 'command'/],
    [['read', 't', '--url', 'not a url'], /--url: not a URL/],
    [['read', 't', '--url', 'localhost:4000'], /--url: not an http:\/\/ or https:\/\/ URL/],
    [['backup', '-', '--url', 'localhost:4000'], /--url: not an http:\/\/ or https:\/\/ URL/],
  ];
  for (const [args, re] of cases) {
    const r = cli(args);
    assert.equal(r.status, 2, `spool ${args.join(' ')}: exit ${r.status}, stderr ${r.stderr}`);
    oneLine(r, re);
    assert.equal(r.stdout, '', `nothing on stdout for spool ${args.join(' ')}`);
  }
});

test('a bad NDJSON line in append: exit 2 naming the line; the records before it are appended, none after it', async () => {
  const r = cli(['append', 'cli.badline'], { input: '1\n2\n{oops\n4\n' });
  assert.equal(r.status, 2);
  oneLine(r, /stdin line 3: not valid JSON .*; the 2 records before it were appended \(seqs 1\.\.2\), none after it$/);
  assert.equal(r.stdout, '');
  assert.deepEqual(
    (await spool.diff('cli.badline')).records.map((x) => x.data),
    [1, 2],
  );
  // over several batches (two sent, one being built), with --json: the detail says how far it got
  const j = cli(['append', 'cli.badline2', '--batch', '2', '--json'], { input: '1\n2\n\n3\n4\n5\n[oops\n6\n' });
  assert.equal(j.status, 2);
  const err = JSON.parse(j.stderr).error;
  assert.match(err.message, /^stdin line 7: not valid JSON/);
  assert.deepEqual([err.code, err.detail], ['usage', { appended: 5, first_seq: 1, last_seq: 5 }]);
  assert.deepEqual(
    (await spool.diff('cli.badline2')).records.map((x) => x.data),
    [1, 2, 3, 4, 5],
  );
  // the first line bad: nothing appended, and the topic is not created
  const first = cli(['append', 'cli.badline3'], { input: 'nope\n1\n' });
  assert.equal(first.status, 2);
  oneLine(first, /stdin line 1: not valid JSON .*; nothing was appended$/);
  assert.equal(cli(['topics', 'get', 'cli.badline3']).status, 4);
  // --records: an object that is not a record (no data, a tag not a string) is a bad line too
  for (const [i, [bad, why]] of (
    [
      ['{"nodata":1}', '"data" is required'],
      ['{"data":3,"tag":7}', '"tag" must be a string'],
      ['{"data":3,"meta":[1]}', '"meta" must be an object'],
    ] as const
  ).entries()) {
    const t = `cli.badrec${i}`;
    const rec = cli(['append', t, '--records'], { input: `{"data":1}\n{"data":2}\n${bad}\n{"data":4}\n` });
    assert.equal(rec.status, 2, rec.stderr);
    assert.ok(rec.stderr.includes(`stdin line 3: not a record object: ${why}`), rec.stderr);
    assert.deepEqual(
      (await spool.diff(t)).records.map((x) => x.data),
      [1, 2],
    );
  }
});

test('append --idempotency-key twice: the second says nothing was appended (and --json deduped)', () => {
  const first = cli(['append', 'cli.idem', '--idempotency-key', 'k1', '1', '2']);
  assert.equal(first.status, 0, first.stderr);
  assert.match(first.stderr, /^appended 2 records to cli\.idem \(seqs 1\.\.2\)/);
  const again = cli(['append', 'cli.idem', '--idempotency-key', 'k1', '1', '2']);
  assert.equal(again.status, 0, again.stderr);
  assert.equal(again.stderr, 'nothing appended to cli.idem: idempotency key k1 matched an earlier batch (seqs 1..2)\n');
  const j = JSON.parse(cli(['append', 'cli.idem', '--idempotency-key', 'k1', '--json', '1', '2']).stdout);
  assert.deepEqual([j.deduped, j.first_seq, j.last_seq], [true, 1, 2]);
  assert.equal(JSON.parse(cli(['append', 'cli.idem', '--json', '3']).stdout).deduped, false);
});

test('exit codes for server answers: 4 not found, 3 refused, 5 unreachable; --json errors are JSON', async () => {
  const nf = cli(['topics', 'get', 'cli.absent']);
  assert.equal(nf.status, 4);
  oneLine(nf, /spool topics get: .*HTTP 404 topic_not_found/);
  const nfj = cli(['topics', 'get', 'cli.absent', '--json']);
  assert.equal(nfj.status, 4);
  assert.deepEqual(JSON.parse(nfj.stderr).error, {
    code: 'topic_not_found',
    status: 404,
    message: 'topic cli.absent does not exist',
    detail: { topic: 'cli.absent' },
  });
  assert.equal(cli(['read', 'cli.absent']).status, 4);
  assert.equal(cli(['append', 'cli.absent', '1', '--no-create']).status, 4);

  await spool.putTopic('cli.log', {});
  const conflict = cli(['topics', 'put', 'cli.log', '--type', 'queue']);
  assert.equal(conflict.status, 3);
  oneLine(conflict, /409 topic_exists_incompatible/);
  const notQueue = cli(['claim', 'cli.log']);
  assert.equal(notQueue.status, 3);
  const badTag = cli(['rm-records', 'cli.log', '--tag-prefix', 'a*b']);
  assert.equal(badTag.status, 2);

  const down = cli(['stats', '--url', 'http://127.0.0.1:1']);
  assert.equal(down.status, 5);
  oneLine(down, /network_error/);
});

test('--json output parses: topics put/get/ls/rm, append, stats, claim/ack/nack, rm-records', async () => {
  const put = JSON.parse(cli(['topics', 'put', 'cli.j', '--cap-records', '100', '--json']).stdout);
  assert.deepEqual([put.topic, put.created, put.config.cap_records], ['cli.j', true, 100]);
  const app = JSON.parse(cli(['append', 'cli.j', '{"a":1}', '"two"', '3', '--tag', 'x', '--json']).stdout);
  assert.deepEqual([app.count, app.first_seq, app.last_seq], [3, 1, 3]);
  const get = JSON.parse(cli(['topics', 'get', 'cli.j', '--json']).stdout);
  assert.deepEqual([get.head_seq, get.count, get.config.cap_records], [3, 3, 100]);
  const ls = JSON.parse(cli(['topics', 'ls', '--prefix', 'cli.j', '--json']).stdout);
  assert.deepEqual(
    ls.map((t: { topic: string }) => t.topic),
    ['cli.j'],
  );
  const rm = JSON.parse(cli(['rm-records', 'cli.j', '--tag', 'x', '--before', '3', '--json']).stdout);
  assert.deepEqual([rm.deleted, rm.count], [2, 1]);
  const stats = JSON.parse(cli(['stats', '--json']).stdout);
  assert.equal(stats.health.status, 'ok');
  assert.equal(stats.ready.status, 'ready');
  assert.deepEqual(
    stats.topics.find((t: { topic: string }) => t.topic === 'cli.j'),
    { topic: 'cli.j', head_seq: 3, earliest_seq: 3, records: 1, bytes: 1 },
  );
  assert.equal(JSON.parse(cli(['topics', 'rm', 'cli.j', '--json']).stdout).deleted, true);

  await spool.putTopic('cli.q', { type: 'queue' });
  await spool.append('cli.q', [{ data: { big: 1 } }, { data: 'b' }, { data: 'c' }]);
  const claim = JSON.parse(cli(['claim', 'cli.q', '--max', '2', '--node', 'n1', '--json']).stdout);
  assert.deepEqual(
    claim.claimed.map((j: { $seq: number; data: unknown }) => [j.$seq, j.data]),
    [
      [1, { big: 1 }],
      [2, 'b'],
    ],
  );
  const [j1, j2] = claim.claimed;
  const ack = JSON.parse(cli(['ack', 'cli.q', `${j1.$seq}:${j1.lease_id}`, '--node', 'n1', '--json']).stdout);
  assert.equal(ack.acked, 1);
  const nack = JSON.parse(cli(['nack', 'cli.q', String(j2.$seq), '--node', 'n1', '--delay-ms', '60000', '--json']).stdout);
  assert.equal(nack.nacked, 1);
  // a settle of a job not held: the seq is skipped and the exit code says so
  const stale = cli(['ack', 'cli.q', `${j1.$seq}:${j1.lease_id}`, '--node', 'n1']);
  assert.equal(stale.status, 3);
  assert.match(stale.stdout, /acked 0; skipped .*: 1/);
  // the human form of claim: seq, lease id, deliveries, data
  const human = cli(['claim', 'cli.q', '--node', 'n2']);
  assert.match(human.stdout, /^3\tlease_[0-9a-f]+\t1\t"c"\n$/);
});

test('topics create never changes an existing topic; set changes only the named fields; put replaces and says what it reset', async () => {
  const t = 'cli.cfg';
  const config = async () => (await spool.getTopic(t, { touch: false })).config;
  const made = cli(['topics', 'create', t, '--durability', 'fsync', '--cap-records', '50']);
  assert.deepEqual([made.status, made.stdout], [0, `created ${t} (log, fsync)\n`], made.stderr);
  // create again, bare or with other fields: exit 0, nothing changes, the differences are named
  const again = cli(['topics', 'create', t]);
  assert.deepEqual([again.status, again.stdout, again.stderr], [0, `${t} (log, fsync) exists, unchanged\n`, '']);
  const other = cli(['topics', 'create', t, '--durability', 'disk']);
  assert.equal(other.status, 0);
  oneLine(other, /cli\.cfg exists and was left unchanged: durability is "fsync" \(given "disk"\)/);
  assert.deepEqual([(await config()).durability, (await config()).cap_records], ['fsync', 50]);
  const kind = cli(['topics', 'create', t, '--type', 'queue']);
  assert.equal(kind.status, 3);
  oneLine(kind, /exists as a log, not a queue/);
  // set: the named fields change, the others stay (the old put turned fsync into disk here)
  const ttl = cli(['topics', 'set', t, '--ttl-ms', '60000']);
  assert.deepEqual([ttl.status, ttl.stdout], [0, `configured ${t} (log, fsync): ttl_ms 0 → 60000\n`], ttl.stderr);
  assert.deepEqual([(await config()).durability, (await config()).cap_records, (await config()).ttl_ms], ['fsync', 50, 60000]);
  const same = JSON.parse(cli(['topics', 'set', t, '--cap-records', '50', '--json']).stdout);
  assert.deepEqual([same.created, same.changed, same.config.durability], [false, [], 'fsync']);
  const durable = cli(['topics', 'set', t, '--config', '{"durable":false}']);
  assert.match(durable.stdout, /durability "fsync" → "disk"/, 'durable alone changes the class');
  const absent = cli(['topics', 'set', 'cli.cfg-absent', '--cap-records', '1']);
  assert.equal(absent.status, 4);
  oneLine(absent, /does not exist/);
  assert.equal(cli(['topics', 'get', 'cli.cfg-absent']).status, 4, 'set never creates');
  assert.equal(cli(['topics', 'set', t]).status, 2, 'set with no field is a usage error');
  // put: the wire's full replacement, and what it reset is printed
  const put = cli(['topics', 'put', t, '--durability', 'fsync']);
  assert.equal(put.status, 0, put.stderr);
  assert.match(put.stdout, /^configured cli\.cfg \(log, fsync\): .*ttl_ms 60000 → 0/);
  assert.match(put.stdout, /cap_records 50 → 0/);
  assert.deepEqual([(await config()).cap_records, (await config()).ttl_ms], [0, 0]);
});

test("topics ls shows each topic's type and durability class; --brief only the list route's fields", async () => {
  await spool.append('cli.ls.disk', [{ data: 1 }]);
  await spool.putTopic('cli.ls.fsync', { durability: 'fsync' });
  await spool.putTopic('cli.ls.queue', { type: 'queue', durability: 'memory' });
  const r = cli(['topics', 'ls', '--prefix', 'cli.ls.']);
  assert.equal(r.status, 0, r.stderr);
  const rows = r.stdout
    .trimEnd()
    .split('\n')
    .map((l) => l.split(/\s+/));
  assert.deepEqual(rows, [
    ['TOPIC', 'TYPE', 'DURABILITY', 'HEAD', 'EARLIEST', 'COUNT', 'BYTES'],
    ['cli.ls.disk', 'log', 'disk', '1', '1', '1', '1'],
    ['cli.ls.fsync', 'log', 'fsync', '0', '1', '0', '0'],
    ['cli.ls.queue', 'queue', 'memory', '0', '1', '0', '0'],
  ]);
  const json = JSON.parse(cli(['topics', 'ls', '--prefix', 'cli.ls.', '--json']).stdout);
  assert.deepEqual(
    json.map((t: { topic: string; type: string; durability: string }) => [t.topic, t.type, t.durability]),
    [
      ['cli.ls.disk', 'log', 'disk'],
      ['cli.ls.fsync', 'log', 'fsync'],
      ['cli.ls.queue', 'queue', 'memory'],
    ],
  );
  const brief = cli(['topics', 'ls', '--prefix', 'cli.ls.', '--brief'])
    .stdout.trimEnd()
    .split('\n')
    .map((l) => l.split(/\s+/));
  assert.deepEqual(
    brief.map((row) => [row[0], row[5]]),
    [
      ['TOPIC', 'FSYNC'],
      ['cli.ls.disk', 'no'],
      ['cli.ls.fsync', 'yes'],
      ['cli.ls.queue', 'no'],
    ],
  );
});

test('NDJSON round trip: 100k lines appended from stdin read back byte for byte', { timeout: 120_000 }, () => {
  const tricky = [
    '{"big":12345678901234567890,"e":1e400,"f":1.50,"z":-0}',
    '"\\u00e9 \\" \\\\ \\n"',
    'null',
    '[1,[2,{"a":[]}]]',
    '{"k":"v","k":"dup"}',
    '"😀"',
    'true',
    '-1.5e-7',
  ];
  const lines: string[] = [];
  for (let i = 0; i < 100_000; i++)
    lines.push(i % 1000 < tricky.length ? tricky[i % 1000]! : `{"n":${i},"s":"line ${i}","a":[${i},${i * 2}]}`);
  const input = lines.join('\n') + '\n';
  const a = cli(['append', 'cli.round', '--json', '--batch', '7000'], { input });
  assert.equal(a.status, 0, a.stderr);
  const sum = JSON.parse(a.stdout);
  assert.deepEqual([sum.count, sum.first_seq, sum.last_seq, sum.batches], [100_000, 1, 100_000, 15]);
  const r = cli(['read', 'cli.round', '--data']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, input, 'identical');
  // full records: seqs in order, and --from / --limit
  const some = cli(['read', 'cli.round', '--from', '99997', '--limit', '2'])
    .stdout.trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    some.map((x) => x.$seq),
    [99_998, 99_999],
  );
  assert.deepEqual(some[0].data, JSON.parse(lines[99_997]!));
});

test('read/tail --from above the head: exit 3 saying so and printing nothing; --restart reads from the start', async () => {
  const t = 'cli.above';
  await spool.append(t, [{ data: 1 }, { data: 2 }, { data: 3 }, { data: 4 }]);
  await spool.deleteTopic(t);
  await spool.append(t, [{ data: 'a' }, { data: 'b' }]); // recreated: head 2, a reader's cursor 4 is above it
  await spool.append(
    'cli.above.other',
    [1, 2, 3, 4].map((n) => ({ data: n })),
  ); // head 4: at it, not above
  for (const cmd of [
    ['read', t],
    ['tail', t, 'cli.above.other'],
  ]) {
    const r = cli([...cmd, '--from', '4', '--data']);
    assert.equal(r.status, 3, `${cmd[0]}: ${r.stderr}`);
    assert.equal(r.stdout, '', `${cmd[0]} prints nothing`);
    oneLine(r, new RegExp(`^spool ${cmd[0]}: cli\\.above: --from 4 is above the head \\(2\\): .*--restart`));
    const j = cli([...cmd, '--from', '4', '--json']);
    assert.equal(j.status, 3);
    assert.deepEqual(
      [JSON.parse(j.stderr).error.code, JSON.parse(j.stderr).error.detail],
      ['from_above_head', { topic: t, from_seq: 4, head_seq: 2 }],
    );
    const again = cli([...cmd, '--from', '4', '--data', '--restart']);
    assert.equal(again.status, 0, again.stderr);
    assert.equal(again.stdout, '"a"\n"b"\n', `${cmd[0]} --restart: the new topic from its start`);
    oneLine(again, /--from 4 is above the head \(2\); reading it from its start \(--restart\)/);
  }
  // at the head is not above it: nothing to print, exit 0
  const at = cli(['read', t, '--from', '2']);
  assert.deepEqual([at.status, at.stdout, at.stderr], [0, '', '']);
});

test('a reader that goes away (`spool read t | head -1`) ends the command quietly with exit 0', async () => {
  for (let k = 0; k < 2; k++)
    await spool.append(
      'cli.pipe',
      Array.from({ length: 10_000 }, (_, i) => ({ data: { i, pad: 'x'.repeat(100) } })),
    );
  const p = spawn(process.execPath, [CLI, 'read', 'cli.pipe'], {
    env: { ...process.env, SPOOL_URL: srv.url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((r) => p.once('exit', (c) => r(c)));
  await new Promise<void>((r) => p.stdout!.once('data', () => r()));
  p.stdout!.destroy(); // like `head -1` exiting after its line
  assert.equal(await exit, 0, err);
  assert.equal(err, '');
});

/** A long-running CLI process whose output is collected. */
function start(args: string[], env: Record<string, string> = {}) {
  const p = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, SPOOL_URL: srv.url, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const io = { stdout: '', stderr: '' };
  p.stdout!.on('data', (d: Buffer) => (io.stdout += d.toString()));
  p.stderr!.on('data', (d: Buffer) => (io.stderr += d.toString()));
  const exit = new Promise<number | null>((r) => p.once('exit', (code) => r(code)));
  return { p, io, exit };
}

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

test('append: SIGINT part-way appends what was read, says how far it got, and exits 130', { timeout: 60_000 }, async () => {
  const topic = 'cli.append.int';
  const p = spawn(process.execPath, [CLI, 'append', topic], {
    env: { ...process.env, SPOOL_URL: srv.url },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  p.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<[number | null, string | null]>((r) => p.once('exit', (code, sig) => r([code, sig])));
  // One whole batch (10,000 lines) goes at once; two lines more wait in the next one.
  p.stdin!.write(Array.from({ length: 10_002 }, (_, i) => `{"i":${i}}\n`).join(''));
  for (let i = 0; i < 400; i++) {
    const st = await spool.getTopic(topic).catch(() => undefined);
    if (st && st.count >= 10_000) break;
    await sleep(25);
  }
  await sleep(300);
  p.kill('SIGINT');
  const [code, sig] = await exit;
  assert.deepEqual([code, sig], [130, null], stderr);
  const n = (await spool.getTopic(topic)).count;
  assert.equal(n, 10_002, 'the lines read were appended');
  assert.match(
    stderr,
    new RegExp(`interrupted by SIGINT: ${n} records through stdin line ${n} were appended \\(seqs 1\\.\\.${n}\\), none after`),
  );
  p.stdin!.destroy();
});

test(
  'tail -f follows several topics across a server restart: every record once, in order; SIGTERM exits 0',
  { timeout: 90_000 },
  async () => {
    const own = await startServer({ env: { SERVICE_WORKERS: '1' } });
    const api = new Spool({ url: own.url });
    await api.append('tail.a', [{ data: 'a1' }, { data: 'a2' }]);
    await api.append('tail.b', [{ data: 'b1' }]);
    const tail = start(['tail', 'tail.a', 'tail.b', '-f', '-n', '1'], { SPOOL_URL: own.url });
    let second: Server | undefined;
    try {
      const lines = () =>
        tail.io.stdout
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { topic: string; $seq: number; data: string });
      await until('the last record of each topic', () => lines().length >= 2);
      await api.append('tail.a', [{ data: 'a3' }]);
      await until('a live record', () => lines().length >= 3);
      assert.equal(await own.stop(), 0);
      second = await startServer({ dataDir: own.dataDir, env: { SERVICE_WORKERS: '1', SERVICE_PORT: String(own.port) } });
      const api2 = new Spool({ url: second.url });
      await api2.append('tail.a', [{ data: 'a4' }, { data: 'a5' }]);
      await api2.append('tail.b', [{ data: 'b2' }]);
      await until('records appended after the restart', () => lines().length >= 6, 30_000);
      await sleep(300);
      tail.p.kill('SIGTERM');
      assert.equal(await tail.exit, 0, tail.io.stderr);
      const got = lines().map((l) => `${l.topic}:${l.$seq}:${l.data}`);
      assert.deepEqual(
        got.filter((x) => x.startsWith('tail.a')),
        ['tail.a:2:a2', 'tail.a:3:a3', 'tail.a:4:a4', 'tail.a:5:a5'],
      );
      assert.deepEqual(
        got.filter((x) => x.startsWith('tail.b')),
        ['tail.b:1:b1', 'tail.b:2:b2'],
      );
      assert.match(tail.io.stderr, /reconnecting/);
    } finally {
      tail.p.kill('SIGKILL');
      await second?.stop();
    }
  },
);

test('tail without -f prints up to the heads and exits 0', async () => {
  await spool.append(
    'tail.c',
    [1, 2, 3, 4, 5].map((n) => ({ data: n })),
  );
  const r = cli(['tail', 'tail.c', '-n', '2', '--data']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '4\n5\n');
});

test('tail -n counts records, not seqs: it reads back past gaps before the head', async () => {
  // Seqs 8 and 9 are deleted: the last three records are 6, 7 and 10, not what seqs 8-10 hold.
  await spool.append(
    'tail.gap',
    [1, 2, 3, 4, 5, 6, 7].map((n) => ({ data: n })),
  );
  await spool.append('tail.gap', [
    { data: 8, tag: 'gone' },
    { data: 9, tag: 'gone' },
  ]);
  await spool.append('tail.gap', [{ data: 10 }]);
  assert.equal((await spool.deleteRecords('tail.gap', { match: 'gone' })).deleted, 2);
  const r = cli(['tail', 'tail.gap', '-n', '3', '--data']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '6\n7\n10\n');
  assert.equal(cli(['tail', 'tail.gap', '-n', '50', '--data']).stdout, '1\n2\n3\n4\n5\n6\n7\n10\n', 'fewer than -n: all');
  assert.equal(cli(['tail', 'tail.gap', '-n', '0', '--data']).stdout, '', '-n 0: nothing before the head');
});

test('tail -n after a SIGKILL: the seqs reserved before the crash are skipped, the last records printed', { timeout: 60_000 }, async () => {
  const own = await startServer({ env: { SERVICE_WORKERS: '1' } });
  let second: Server | undefined;
  try {
    await new Spool({ url: own.url }).append(
      'tail.crash',
      [1, 2, 3, 4, 5].map((n) => ({ data: n })),
    ); // a `disk` topic: acknowledged once written, so the kill keeps it
    await own.kill();
    second = await startServer({ dataDir: own.dataDir, env: { SERVICE_WORKERS: '1' } });
    const api = new Spool({ url: second.url });
    await api.append('tail.crash', [{ data: 6 }]);
    const head = (await api.getTopic('tail.crash')).head_seq;
    assert.ok(head > 9, `the restart skipped reserved seqs (head ${head})`);
    const r = cli(['tail', 'tail.crash', '-n', '3', '--data'], { env: { SPOOL_URL: second.url } });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '4\n5\n6\n');
  } finally {
    await second?.stop();
    await own.kill().catch(() => {});
  }
});

/** A job script: prints seq:deliveries:n, fails (exit 3) while deliveries <= data.fails (Infinity: always). */
function jobScript(sleepMs = 0): string {
  const script = path.join(tempDir('spool-cli-work-'), 'job.mjs');
  fs.writeFileSync(
    script,
    `let s=''; process.stdin.on('data', d => s += d); process.stdin.on('end', () => setTimeout(() => {
       const job = JSON.parse(s);
       const deliveries = Number(process.env.SPOOL_JOB_DELIVERIES);
       process.stdout.write(process.env.SPOOL_JOB_SEQ + ':' + deliveries + ':' + job.n + '\\n');
       process.exit(deliveries <= (job.fails === 'always' ? Infinity : job.fails ?? 0) ? 3 : 0);
     }, ${sleepMs}));`,
  );
  return script;
}

/** Runs `spool work` to its end; the summary (--json, last stdout line) and the command's lines. */
async function work(args: string[], script: string) {
  const w = start(['work', ...args, '--json', '--node', 'cli-worker', '--', process.execPath, script]);
  const code = await w.exit;
  assert.equal(code, 0, w.io.stderr);
  const lines = w.io.stdout.trim().split('\n');
  return { summary: JSON.parse(lines.pop()!), lines: lines.sort(), stderr: w.io.stderr };
}

test(
  'work runs the command per job with the data on stdin: exit 0 acks, anything else nacks; --max-jobs counts jobs finished, not runs',
  { timeout: 60_000 },
  async () => {
    const q = 'cli.work';
    await spool.putTopic(q, { type: 'queue' });
    await spool.append(q, [{ data: { n: 1 } }, { data: { n: 2, fails: 1 } }, { data: { n: 3 } }]);
    const w = await work([q, '--max-jobs', '3'], jobScript());
    // job 2 failed once and ran again: 3 jobs finished in 4 runs (before, --max-jobs 3 stopped after 3 runs with job 2 undone)
    assert.deepEqual(w.summary, {
      queue: q,
      node: 'cli-worker',
      started: 4,
      finished: 3,
      acked: 3,
      nacked: 1,
      terminated: 0,
      lost: 0,
      stopped: 'max-jobs',
    });
    assert.deepEqual(w.lines, ['1:1:1', '2:1:2', '2:2:2', '3:1:3'], 'each run once, seq and deliveries in the environment');
    assert.match(w.stderr, /job 2: .*exited with status 3/);
    assert.equal((await spool.getTopic(q)).count, 0, 'every job done');

    // no such queue: exit 4
    const missing = start(['work', 'cli.noqueue', '--', 'true']);
    assert.equal(await missing.exit, 4, missing.io.stderr);
    assert.match(missing.io.stderr, /topic_not_found/);
  },
);

test(
  'work --max-jobs with -c: never more jobs finish than asked; jobs pushed beyond it are given back unrun',
  { timeout: 60_000 },
  async () => {
    const q = 'cli.work.c';
    await spool.putTopic(q, { type: 'queue' });
    await spool.append(
      q,
      [1, 2, 3, 4, 5, 6].map((n) => ({ data: { n } })),
    );
    const w = await work([q, '-c', '3', '--max-jobs', '2'], jobScript(300));
    assert.deepEqual(w.summary, {
      queue: q,
      node: 'cli-worker',
      started: 2,
      finished: 2,
      acked: 2,
      nacked: 0,
      terminated: 0,
      lost: 0,
      stopped: 'max-jobs',
    });
    assert.equal(w.lines.length, 2);
    const st = await spool.getTopic(q);
    assert.deepEqual([st.count, st.queue!.in_flight], [4, 0], 'the other four are back in the queue');
    // A job pushed to the worker and given back unrun spent one delivery at most (this claim is
    // the next): the stream asked for no more jobs than --max-jobs lets run.
    await new Promise((r) => setTimeout(r, 1200)); // a job given back unrun is ready again after 1 s
    const back = (await spool.claim(q, { node: 'check', max: 10 })).claimed;
    assert.equal(back.length, 4);
    for (const j of back) assert.ok(j.deliveries <= 2, `job ${j.$seq} delivered ${j.deliveries} times`);
  },
);

test('work --until-empty drains the queue, retries and dead-letters included, and exits 0', { timeout: 60_000 }, async () => {
  const q = 'cli.work.drain';
  await spool.putTopic(q, { type: 'queue', max_deliveries: 2, dead_letter: `${q}.dlq` });
  await spool.append(q, [
    { data: { n: 1 } },
    { data: { n: 2, fails: 1 } },
    { data: { n: 3, fails: 'always' } },
    { data: { n: 4 } },
    { data: { n: 5 } },
  ]);
  const w = await work([q, '-c', '2', '--until-empty'], jobScript());
  // job 3 failed on both of its deliveries: finished (for good), and dead-lettered by the server
  assert.deepEqual(w.summary, {
    queue: q,
    node: 'cli-worker',
    started: 7,
    finished: 5,
    acked: 4,
    nacked: 3,
    terminated: 0,
    lost: 0,
    stopped: 'empty',
  });
  assert.deepEqual(w.lines, ['1:1:1', '2:1:2', '2:2:2', '3:1:3', '3:2:3', '4:1:4', '5:1:5']);
  assert.equal((await spool.getTopic(q)).count, 0);
  assert.deepEqual(
    (await spool.diff(`${q}.dlq`)).records.map((r) => r.data),
    [{ n: 3, fails: 'always' }],
  );
  // an empty queue: done at once
  const empty = await work([q, '--until-empty', '--poll'], jobScript());
  assert.deepEqual([empty.summary.started, empty.summary.stopped], [0, 'empty']);
});

test(
  'work --term-exit-code: a command exiting with that status fails its job for good (termed, dead-lettered at once)',
  { timeout: 60_000 },
  async () => {
    const q = 'cli.work.term';
    await spool.putTopic(q, { type: 'queue', max_deliveries: 5, dead_letter: `${q}.dlq` });
    await spool.append(q, [{ data: { n: 1 } }, { data: { n: 2, fails: 'always' } }, { data: { n: 3 } }]);
    const w = await work([q, '--until-empty', '--term-exit-code', '3'], jobScript());
    // job 2 ran once: its exit status 3 termed it, with 4 deliveries left
    assert.deepEqual(w.summary, {
      queue: q,
      node: 'cli-worker',
      started: 3,
      finished: 3,
      acked: 2,
      nacked: 0,
      terminated: 1,
      lost: 0,
      stopped: 'empty',
    });
    assert.deepEqual(w.lines, ['1:1:1', '2:1:2', '3:1:3']);
    const dead = (await spool.diff(`${q}.dlq`)).records;
    assert.deepEqual(
      dead.map((r) => r.data),
      [{ n: 2, fails: 'always' }],
    );
    assert.match(String((dead[0]!.meta as Record<string, unknown>).$dead_letter_reason), /exited with status 3 \(--term-exit-code\)/);
    // a status that is not one: usage error
    const bad = start(['work', q, '--term-exit-code', '0', '--', 'true']);
    assert.equal(await bad.exit, 2, bad.io.stderr);
    assert.match(bad.io.stderr, /--term-exit-code/);
  },
);

test(
  'work fails at once, exit 2, when the command cannot be started: no job is taken, an empty queue is no excuse',
  { timeout: 60_000 },
  async () => {
    const q = 'cli.work.bad';
    await spool.putTopic(q, { type: 'queue' });
    const noExec = path.join(tempDir('spool-cli-work-'), 'handler.sh');
    fs.writeFileSync(noExec, '#!/bin/sh\nexit 0\n', { mode: 0o644 });
    const cases: [string, RegExp][] = [
      ['/nonexistent/handler', /^spool work: cannot run \/nonexistent\/handler: command not found$/],
      ['no-such-command-for-spool-tests', /cannot run no-such-command-for-spool-tests: command not found/],
      [noExec, /cannot run .*handler\.sh: permission denied/],
    ];
    for (const [command, re] of cases) {
      const bad = start(['work', q, '--', command]);
      const timer = setTimeout(() => bad.p.kill('SIGKILL'), 10_000); // before: it waited on the empty queue forever
      const code = await bad.exit;
      clearTimeout(timer);
      assert.equal(code, 2, `${command}: ${bad.io.stderr}`);
      assert.match(bad.io.stderr.trim(), re);
    }
    // with a job waiting: it is not taken (its first claim is still its first delivery)
    await spool.append(q, [{ data: 1 }]);
    const bad = start(['work', q, '--', '/nonexistent/handler']);
    assert.equal(await bad.exit, 2);
    const claimed = await spool.claim(q, { node: 'checker' });
    assert.deepEqual(
      claimed.claimed.map((j) => j.deliveries),
      [1],
    );
  },
);
