// Router ids are never handed out again for a dest that holds progress under them
// (docs/ARCHITECTURE.md "Routers", the id floor; docs/FORMAT.md "Router definitions"). A dest
// keys how far it applied each router by router id alone, and the ids come from the `nextId` of
// meta/routers.json. With that file lost (deleted, a partial restore) or older than the data (put
// back from an older backup), a new router used to get the id of an old one that fed the same
// dest: the dest took its first records for duplicates of the old router's and silently dropped
// every one below the old router's progress. Now recovery gathers the highest router id any
// topic holds progress of, the registry hands out ids above it, and the start logs a warn line
// that router definitions were lost. Real server processes on two workers, restarted on the
// same data directory: once after SIGTERM (the progress comes from the final snapshot's
// `routers_applied`), once after SIGKILL (from the forward headers of replayed WAL frames).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { workerOf } from '../../src/core/names.js';
import { client, killServersAfterFile, startServer, tempDir } from '../helpers/server.js';
import { loadRouters } from '../../src/storage/routerStore.js';
import { nodeFs } from '../../src/storage/fs.js';

killServersAfterFile();

const env = { SERVICE_WORKERS: '2' };
type Api = ReturnType<typeof client>;

/** A topic name from `prefix` placed on worker `w` of two. */
function onWorker(prefix: string, w: number): string {
  for (let i = 0; ; i++) if (workerOf(`${prefix}${i}`, 2) === w) return `${prefix}${i}`;
}

const records = (tag: string, n: number) => ({ records: Array.from({ length: n }, (_, i) => ({ data: `${tag}${i + 1}` })) });

/** Every record of `topic`, as its data; a read of a dest first drains the routers into it. */
async function datas(c: Api, topic: string): Promise<string[]> {
  const r = await c.post(`/v0/topics/${topic}/diff`, { from_seq: 0, limit: 1000 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.caught_up, true);
  return (r.body.records as { data: string }[]).map((x) => x.data);
}

const aThenB = [...records('a', 5).records, ...records('b', 7).records].map((r) => r.data);

test(
  'a lost meta/routers.json: a new router into a dest an old one fed gets a new id and skips nothing',
  { timeout: 120_000 },
  async () => {
    const dataDir = tempDir();
    const [A, B, D] = [onWorker('rid.a', 0), onWorker('rid.b', 0), onWorker('rid.d', 1)];
    let srv = await startServer({ dataDir, env });
    let c = client(srv.url);
    assert.equal((await c.put('/v0/routers/r1', { source: A, dest: D })).status, 201);
    assert.equal((await c.post(`/v0/topics/${A}`, records('a', 5))).status, 200);
    assert.deepEqual(
      await datas(c, D),
      records('a', 5).records.map((r) => r.data),
      'r1 forwards',
    );
    assert.equal((await c.del('/v0/routers/r1')).status, 200);
    assert.equal(await srv.stop(), 0);
    fs.rmSync(path.join(dataDir, 'meta', 'routers.json')); // the router definitions are lost

    srv = await startServer({ dataDir, env });
    c = client(srv.url);
    assert.equal((await c.put('/v0/routers/r2', { source: B, dest: D })).status, 201);
    assert.equal((await c.post(`/v0/topics/${B}`, records('b', 7))).status, 200);
    assert.deepEqual(await datas(c, D), aThenB, 'every record of B reaches D, none taken for one of r1');
    const r2 = await c.get('/v0/routers/r2');
    assert.equal(r2.body.forwarded_total, 7, `r2 counts its own copies only: ${r2.text}`);
    assert.equal(loadRouters(nodeFs, dataDir).routers[0]!.id, 2, 'r2 does not get the id r1 had');
    assert.match(
      srv.stderr(),
      new RegExp(
        `meta/routers\\.json is missing, but topic ${D.replace(/\./g, '\\.')} holds the progress of router id 1: .*new router ids start at 2`,
      ),
    );
    assert.equal(await srv.stop(), 0);

    // A clean restart with a file that lists r2: no warning, r2 goes on.
    srv = await startServer({ dataDir, env });
    c = client(srv.url);
    assert.doesNotMatch(srv.stderr(), /routers\.json is (missing|older)/);
    assert.equal((await c.post(`/v0/topics/${B}`, records('c', 1))).status, 200);
    assert.deepEqual(await datas(c, D), [...aThenB, 'c1']);
    assert.equal(await srv.stop(), 0);
  },
);

test(
  'a routers file older than the data (put back after a crash): new router ids start above every id in progress',
  { timeout: 120_000 },
  async () => {
    const dataDir = tempDir();
    const [X, Y] = [onWorker('rio.x', 1), onWorker('rio.y', 1)];
    const [A, B, D] = [onWorker('rio.a', 1), onWorker('rio.b', 1), onWorker('rio.d', 0)];
    const file = path.join(dataDir, 'meta', 'routers.json');
    let srv = await startServer({ dataDir, env });
    let c = client(srv.url);
    assert.equal((await c.put('/v0/routers/r0', { source: X, dest: Y })).status, 201);
    const older = fs.readFileSync(file); // nextId 2: only r0
    assert.equal((await c.put('/v0/routers/r1', { source: A, dest: D })).status, 201);
    assert.equal((await c.post(`/v0/topics/${A}`, records('a', 5))).status, 200);
    assert.equal((await c.post(`/v0/topics/${X}`, records('x', 2))).status, 200);
    assert.equal((await c.get(`/v0/topics/${D}`)).body.count, 5, 'r1 forwards');
    assert.equal((await c.get(`/v0/topics/${Y}`)).body.count, 2, 'r0 forwards');
    await srv.kill(); // no final checkpoint: the restart replays the copies' WAL frames
    fs.writeFileSync(file, older);

    srv = await startServer({ dataDir, env });
    c = client(srv.url);
    assert.deepEqual(
      (await c.get('/v0/routers')).body.routers.map((x: { router: string }) => x.router),
      ['r0'],
      'r0, which the file lists, comes back',
    );
    assert.equal((await c.put('/v0/routers/r2', { source: B, dest: D })).status, 201);
    assert.equal((await c.post(`/v0/topics/${B}`, records('b', 7))).status, 200);
    assert.equal((await c.post(`/v0/topics/${X}`, records('y', 1))).status, 200);
    assert.deepEqual(await datas(c, D), aThenB, 'every record of B reaches D');
    assert.equal((await c.get(`/v0/topics/${Y}`)).body.count, 3, 'r0 resumes after its progress');
    assert.deepEqual(
      loadRouters(nodeFs, dataDir).routers.map((r) => [r.name, r.id]),
      [
        ['r0', 1],
        ['r2', 3],
      ],
    );
    assert.match(
      srv.stderr(),
      new RegExp(
        `meta/routers\\.json is older than the data \\(its nextId is 2, but topic ${D.replace(/\./g, '\\.')} holds the progress of router id 2\\): ` +
          'routers created after it was written are not reinstalled.*new router ids start at 3',
      ),
    );
    assert.equal(await srv.stop(), 0);
  },
);
