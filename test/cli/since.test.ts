// `spool read --since` and `spool tail --since` (docs/CLI.md): the time forms parseSince takes
// (ms since the epoch, ISO-8601, a duration ago) and the ones it refuses; then the built binary
// against a spawned server with records appended 50 ms apart: read and tail (once, and -f with a
// live record) from a time between them print from the first record at or after it; a bad time,
// or --since with --from (or tail's -n), is a one-line usage error with exit 2.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { InvalidArgumentError } from 'commander';
import { CLI, type Server } from '../helpers/server.js';
import { useSpoolServer } from '../helpers/spoolServer.js';
import { Spool } from '../../src/client/index.js';
import { parseSince } from '../../src/cli/since.js';

let srv: Server;
let spool: Spool;
useSpoolServer((s, c) => ((srv = s), (spool = c)));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, SPOOL_URL: srv.url }, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('parseSince: ms since the epoch, ISO-8601, a duration ago; anything else is a usage error', () => {
  const now = Date.parse('2026-11-28T12:00:00Z');
  for (const [v, want] of [
    ['1795860000000', 1795860000000],
    ['0', 0],
    ['2026-11-28T10:00:00Z', Date.parse('2026-11-28T10:00:00Z')],
    ['2026-11-28T10:00:00.250Z', Date.parse('2026-11-28T10:00:00.250Z')],
    ['2026-11-28T11:00:00+01:00', Date.parse('2026-11-28T10:00:00Z')],
    ['2026-11-28', Date.parse('2026-11-28T00:00:00Z')],
    ['2026-11-28T10:00:00', Date.parse('2026-11-28T10:00:00')], // no offset: local time, as JavaScript reads it
    ['90s', now - 90_000],
    ['5m', now - 300_000],
    ['-5m', now - 300_000],
    ['1h30m', now - 5_400_000],
    ['2d', now - 2 * 86_400_000],
    ['500ms', now - 500],
  ] as const) {
    assert.equal(parseSince(v, now), want, v);
  }
  for (const bad of [
    'yesterday',
    '',
    '-5',
    '1e3',
    '5 m',
    '5w',
    '2026-13-45',
    '2026-11-28T25:00:00Z',
    '1969-12-31T23:59:59Z',
    '99999999999999999999',
    '100000d',
  ]) {
    assert.throws(() => parseSince(bad, now), InvalidArgumentError, JSON.stringify(bad));
  }
});

/** a1 a2, then 50 ms later b1 b2; the client's clock between them. */
async function timed(t: string): Promise<number> {
  await spool.append(t, [{ data: 'a1' }, { data: 'a2' }]);
  await sleep(25);
  const between = Date.now();
  await sleep(25);
  await spool.append(t, [{ data: 'b1' }, { data: 'b2' }]);
  return between;
}

test('read --since: from the first record at or after the time, in every form', async () => {
  const t = 'since.read';
  const between = await timed(t);
  const data = (args: string[]) => {
    const r = cli(['read', t, '--data', ...args]);
    assert.equal(r.status, 0, `read ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.split('\n').filter(Boolean);
  };
  assert.deepEqual(data(['--since', String(between)]), ['"b1"', '"b2"']);
  assert.deepEqual(data(['--since', new Date(between).toISOString()]), ['"b1"', '"b2"']);
  assert.deepEqual(data(['--since', '10m']), ['"a1"', '"a2"', '"b1"', '"b2"']);
  assert.deepEqual(data(['--since=-10m', '--limit', '1']), ['"a1"']);
  assert.deepEqual(data(['--since', '0', '--page', '1']), ['"a1"', '"a2"', '"b1"', '"b2"'], 'paged: later pages go on by seq');
  assert.deepEqual(data(['--since', String(Date.now() + 60_000)]), [], 'a time past the newest record: nothing, exit 0');
  const full = cli(['read', t, '--since', String(between)]);
  assert.deepEqual(
    full.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l).$seq),
    [3, 4],
  );
});

test('tail --since: several topics from a time; -f then follows live records', { timeout: 60_000 }, async () => {
  const x = 'since.tail.x';
  const y = 'since.tail.y';
  const bx = await timed(x);
  await timed(y);
  const once = cli(['tail', x, y, '--since', String(bx), '--data']);
  assert.equal(once.status, 0, once.stderr);
  assert.deepEqual(
    once.stdout.split('\n').filter(Boolean).sort(),
    ['"a1"', '"a2"', '"b1"', '"b1"', '"b2"', '"b2"'],
    `${x} from b1, ${y} (written later) whole`,
  );

  const p = spawn(process.execPath, [CLI, 'tail', x, '-f', '--since', String(bx)], { env: { ...process.env, SPOOL_URL: srv.url } });
  let stdout = '';
  p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  const exit = new Promise<number | null>((r) => p.on('exit', (code) => r(code)));
  try {
    const lines = () =>
      stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).data as string);
    const deadline = Date.now() + 20_000;
    while (lines().length < 2) {
      assert.ok(Date.now() < deadline, `tail -f printed ${stdout}`);
      await sleep(50);
    }
    await spool.append(x, [{ data: 'c1' }]);
    while (lines().length < 3) {
      assert.ok(Date.now() < deadline, `tail -f printed ${stdout}`);
      await sleep(50);
    }
    p.kill('SIGTERM');
    assert.equal(await exit, 0);
    assert.deepEqual(lines(), ['b1', 'b2', 'c1']);
  } finally {
    p.kill('SIGKILL');
  }
});

test('a bad --since, or --since with --from (or tail -n), is a usage error: one line, exit 2', () => {
  for (const [args, re] of [
    [['read', 'since.read', '--since', 'yesterday'], /--since <time>.*invalid.*expected a time/],
    [['read', 'since.read', '--since', '5m', '--from', '1'], /--since <time>' cannot be used with option '--from/],
    [['tail', 'since.read', '--since', '5m', '--from', '1'], /cannot be used with option '--from/],
    [['tail', 'since.read', '--since', '5m', '-n', '3'], /cannot be used with option '-n, --lines/],
  ] as const) {
    const r = cli([...args]);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, re);
  }
  const help = cli(['tail', '--help']);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /--since <time>/);
});
