// `spool routers ls|get|put|rm` run as the built binary against a spawned server (docs/CLI.md):
// output, --json, the filter argument (a tag or a JSON tuple), and the exit codes of a refused
// PUT (cycle: 3), an absent router or dest (4) and a usage error (2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { CLI, type Server } from '../helpers/server.js';
import { useSpoolServer } from '../helpers/spoolServer.js';
import type { Spool } from '../../src/client/index.js';

let srv: Server;
let spool: Spool;
useSpoolServer((s, c) => ((srv = s), (spool = c)), { SERVICE_WORKERS: '2' });

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, SPOOL_URL: srv.url }, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('CLI: routers put, get, ls, rm with --json and exit codes', async () => {
  const put = cli(['routers', 'put', 'k.r1', '--source', 'k.a', '--dest', 'k.b', '--filter', 'blue', '--guarantee', 'exactly_once']);
  assert.equal(put.status, 0, put.stderr);
  assert.match(put.stdout, /^created k\.r1 \(k\.a -> k\.b, exactly_once\)$/m);
  const again = cli(['routers', 'put', 'k.r1', '--source', 'k.a', '--dest', 'k.b', '--filter', '["tag","Glob","bl*"]', '--json']);
  assert.equal(again.status, 0, again.stderr);
  const body = JSON.parse(again.stdout);
  assert.equal(body.created, false);
  assert.equal(body.guarantee, 'at_least_once', 'a PUT is the whole config: fields left out take their defaults');
  assert.deepEqual(body.filter, ['tag', 'Glob', 'bl*']);

  await spool.append('k.a', [{ data: 'x', tag: 'blue' }]);
  await spool.diff('k.b', { from_seq: 0 });
  const get = cli(['routers', 'get', 'k.r1']);
  assert.equal(get.status, 0, get.stderr);
  assert.match(get.stdout, /route\s+k\.a -> k\.b/);
  assert.match(get.stdout, /forwarded\s+1/);

  const ls = cli(['routers', 'ls', '--prefix', 'k.', '--json']);
  assert.equal(ls.status, 0, ls.stderr);
  assert.deepEqual(
    JSON.parse(ls.stdout).map((r: any) => r.router),
    ['k.r1'],
  );
  const table = cli(['routers', 'ls', '--prefix', 'k.']);
  assert.match(table.stdout, /^ROUTER\s+SOURCE\s+DEST\s+GUARANTEE\s+FORWARDED\nk\.r1\s+k\.a\s+k\.b\s+at_least_once\s+1\n$/);

  const absent = cli(['routers', 'get', 'k.none']);
  assert.equal(absent.status, 4);
  const cycle = cli(['routers', 'put', 'k.r2', '--source', 'k.b', '--dest', 'k.a']);
  assert.equal(cycle.status, 3);
  assert.match(cycle.stderr, /router_cycle/);
  const noDest = cli(['routers', 'put', 'k.r3', '--source', 'k.a', '--dest', 'k.none', '--no-create-dest']);
  assert.equal(noDest.status, 4);
  const usage = cli(['routers', 'put', 'k.r4', '--source', 'k.a']);
  assert.equal(usage.status, 2);

  const rm = cli(['routers', 'rm', 'k.r1']);
  assert.equal(rm.status, 0);
  assert.match(rm.stdout, /^deleted k\.r1$/m);
  const rmAgain = cli(['routers', 'rm', 'k.r1']);
  assert.equal(rmAgain.status, 0);
  assert.match(rmAgain.stdout, /did not exist/);
});
