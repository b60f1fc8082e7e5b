// A routers file that still lists a router of a deleted topic whose name was created again
// (docs/ARCHITECTURE.md "Deleting on a full disk"; docs/FORMAT.md "Router definitions"): the
// rewrite after the topic delete never happened (here: meta/routers.json copied aside while the
// router existed and put back after a SIGKILL, as a failed save or a crash before it leaves it).
// The restart must not bring the router back into the new, unrelated dest: it is dropped by its
// dest's instance id (logged), the file is rewritten without it, appends to the source stay in
// the source, and `spool verify` notes it beforehand. A router whose topics were not recreated
// comes back and forwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CLI, client, killServersAfterFile, startServer } from '../helpers/server.js';
import { loadRouters } from '../../src/storage/routerStore.js';
import { nodeFs } from '../../src/storage/fs.js';

killServersAfterFile();

const env = { SERVICE_WORKERS: '2' };

test('a stale routers file does not bring a router back into a dest created again under its name', { timeout: 120_000 }, async () => {
  let srv = await startServer({ env });
  let c = client(srv.url);
  const file = path.join(srv.dataDir, 'meta', 'routers.json');
  for (const t of ['src', 'dst', 'src2', 'dst2']) assert.equal((await c.put(`/v0/topics/${t}`, {})).status, 201, t);
  assert.equal((await c.put('/v0/routers/r', { source: 'src', dest: 'dst' })).status, 201);
  assert.equal((await c.put('/v0/routers/r2', { source: 'src2', dest: 'dst2' })).status, 201);
  assert.equal((await c.post('/v0/topics/src', { records: [{ data: { i: 0 } }] })).status, 200);
  assert.equal((await c.get('/v0/topics/dst')).body.count, 1, 'r forwards');
  const saved = fs.readFileSync(file);

  const del = await c.del('/v0/topics/dst');
  assert.equal(del.status, 200, del.text);
  assert.deepEqual(del.body.routers_removed, ['r']);
  assert.equal((await c.put('/v0/topics/dst', {})).status, 201, 'dst created again');
  await srv.kill();
  fs.writeFileSync(file, saved); // the rewrite after the delete never happened

  const v = spawnSync(process.execPath, [CLI, 'verify', srv.dataDir], { encoding: 'utf8' });
  assert.match(
    v.stdout,
    /note: meta\/routers\.json: router r names dst, deleted and created again since it was stored; the server drops the router at start/,
    v.stdout + v.stderr,
  );
  assert.doesNotMatch(v.stdout, /router r2/);

  srv = await startServer({ env, dataDir: srv.dataDir });
  c = client(srv.url);
  const r = await c.get('/v0/routers/r');
  assert.equal(r.status, 404, `r came back: ${r.text}`);
  assert.deepEqual(
    (await c.get('/v0/routers')).body.routers.map((x: { router: string }) => x.router),
    ['r2'],
  );
  assert.match(srv.stderr(), /router r dropped: dst was deleted and created again since it was stored/);
  assert.deepEqual(
    loadRouters(nodeFs, srv.dataDir).routers.map((x) => x.name),
    ['r2'],
    'the file is rewritten without r',
  );

  assert.equal((await c.post('/v0/topics/src', { records: [{ data: { i: 1 } }] })).status, 200);
  assert.equal((await c.post('/v0/topics/src2', { records: [{ data: { i: 2 } }] })).status, 200);
  assert.equal((await c.get('/v0/topics/dst2')).body.count, 1, 'r2 came back and forwards');
  await new Promise((res) => setTimeout(res, 300)); // a forwarder of r would have copied by now
  const dst = await c.get('/v0/topics/dst');
  assert.equal(dst.status, 200);
  assert.equal(dst.body.count, 0, `the new dst holds no copy from src: ${dst.text}`);
  assert.equal((await c.get('/v0/topics/src')).body.count, 2);
  await srv.kill();
});
