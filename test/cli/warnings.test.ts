// The client library and the CLI surface the server's unknown-field warnings (Warning: 299):
// `spool topics put t --config '{"ttl":5}'` succeeds and says on stderr that `ttl` was ignored.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startServer, killServersAfterFile, CLI, type Server } from '../helpers/server.js';
import { Spool } from '../../src/client/index.js';

killServersAfterFile();
let srv: Server | undefined;
after(async () => {
  await srv?.stop();
});

test('the CLI and the client library report fields the server ignored', async () => {
  srv = await startServer();
  const r = spawnSync(
    process.execPath,
    [CLI, 'topics', 'put', 'w.cli', '--config', '{"ttl":5000,"durability":"memory"}', '--url', srv.url],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /^spool: warning: unknown field "ttl"$/m);
  const warnings: string[] = [];
  const spool = new Spool({ url: srv.url, onWarning: (w) => warnings.push(w) });
  await spool.append('w.cli', [{ data: 1, $tag: 'x' } as never]);
  assert.deepEqual(warnings, ['unknown field "records[0].$tag"']);
});
