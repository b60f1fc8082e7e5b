// Deleting a router's dest on a full disk (docs/ARCHITECTURE.md "Deleting on a full disk"), on a
// real small tmpfs filled to the last byte by a filler file: a DELETE of the router itself is
// refused (429 disk_space: the file is its only record) and the router stays; the topic delete
// answers 200 with the router in `routers_removed` though meta/routers.json cannot be written,
// the router is gone (GET 404, no forwarder left in the source: no router metrics), and appends
// to the source bring no dest back. Once the filler goes the file is written again without the
// router, and a SIGKILL and restart on the same data dir keep the router and the dest gone.
// Needs root (mount, unshare, nsenter); skipped with a message elsewhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { client, killServersAfterFile } from '../helpers/server.js';
import { fill, tmpfsServer, tmpfsSkip } from '../helpers/tmpfs.js';
import { decodeRouterFile } from '../../src/storage/routerStore.js';

killServersAfterFile();

const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Client = ReturnType<typeof client>;

/** An append to `src` answered 200 within `ms` (the server may still hold writes back after space returned). */
async function appendSrc(c: Client, i: number, ms = 5000): Promise<void> {
  for (const t0 = Date.now(); ; await sleep(100)) {
    const r = await c.post('/v0/topics/src', { records: [{ data: { i } }] });
    if (r.status === 200) return;
    assert.ok(Date.now() - t0 < ms, `append to src: ${r.status} ${r.text}`);
  }
}

/** The dest is absent, the router too, and no forwarder of it runs anywhere (its metrics). */
async function goneForGood(c: Client, what: string): Promise<void> {
  assert.equal((await c.get('/v0/topics/dst')).status, 404, `${what}: the dest stays deleted`);
  assert.equal((await c.get('/v0/routers/r')).status, 404, `${what}: the router`);
  assert.deepEqual((await c.get('/v0/routers')).body.routers, [], what);
  const prom = (await c.get('/v0/metrics')).text;
  assert.doesNotMatch(prom, /spool_router_\w+\{router="r"/, `${what}: no forwarder of r left`);
}

test(
  "a router's dest deleted on a full disk: 200, forwarding stops, the routers file is written again once space returns",
  { skip: tmpfsSkip, timeout: 120_000 },
  async () => {
    const { inside, start } = await tmpfsServer(32 * MiB, { SERVICE_WAL_FILE_BYTES: String(4 * MiB) });
    let srv = await start();
    let c = client(srv.url);
    assert.equal((await c.put('/v0/topics/src', {})).status, 201);
    assert.equal((await c.put('/v0/topics/dst', {})).status, 201);
    assert.equal((await c.put('/v0/routers/r', { source: 'src', dest: 'dst' })).status, 201);
    await appendSrc(c, 0);
    assert.equal((await c.get('/v0/topics/dst')).body.count, 1, 'the router forwards');
    assert.match((await c.get('/v0/metrics')).text, /spool_router_forwarded_total\{router="r"\} 1/);

    const filler = fill(inside, 'filler');
    // The router's own delete has no record but the file: refused while it cannot be written.
    const refused = await c.del('/v0/routers/r');
    assert.equal(refused.status, 429, `router delete on a full disk: ${refused.text}`);
    assert.deepEqual(refused.body.error.detail, { limit: 'disk_space' });
    assert.equal((await c.get('/v0/routers/r')).status, 200, 'the router stays');
    const del = await c.del('/v0/topics/dst');
    assert.equal(del.status, 200, `delete on a full disk: ${del.text}`);
    assert.equal(del.body.deleted, true);
    assert.deepEqual(del.body.routers_removed, ['r']);
    assert.match(srv.stderr(), /topic dst deleted with router\(s\) r, but meta\/routers\.json could not be written \(ENOSPC/);
    await goneForGood(c, 'after the delete');

    // Space back: the file is written again without the router; appends to the source go on alone.
    const routersFile = inside('data/meta/routers.json');
    const stored = () => {
      const f = decodeRouterFile(fs.readFileSync(routersFile, 'utf8'));
      return typeof f === 'string' ? f : f.routers.map((r) => r.name);
    };
    assert.deepEqual(stored(), ['r'], 'stale while the disk is full');
    fs.rmSync(filler);
    for (const t0 = Date.now(); stored().length > 0; await sleep(100)) {
      assert.ok(Date.now() - t0 < 5000, `the routers file written again (${JSON.stringify(stored())}; log: ${srv.stderr().slice(-2000)})`);
    }
    await appendSrc(c, 1);
    await sleep(300); // a forwarder left behind would have tried by now
    await goneForGood(c, 'after appends to the source');

    await srv.kill();
    srv = await start();
    c = client(srv.url);
    await appendSrc(c, 2);
    await goneForGood(c, 'after SIGKILL and restart');
    assert.equal((await c.get('/v0/topics/src')).body.count, 3, 'the source kept its records');
    assert.equal(await srv.stop(), 0);
  },
);
