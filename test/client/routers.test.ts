// The client library's router calls (src/client/spool.ts putRouter/getRouter/deleteRouter/
// listRouters/routers(), docs/CLIENT.md) against a real spawned server: create, identical and
// changed PUT, GET with forwarded_total after records flowed, listing every page through the
// generator with filters, delete twice, and errors as SpoolError with code and detail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSpoolServer, spoolError } from '../helpers/spoolServer.js';
import type { Spool } from '../../src/client/index.js';

let spool: Spool;
useSpoolServer((_s, c) => (spool = c), { SERVICE_WORKERS: '2' });

test('put, get, list and delete routers through the client', async () => {
  const created = await spool.putRouter('cr.a->cr.b', {
    source: 'cr.a',
    dest: 'cr.b',
    filter: ['tag', 'Glob', 'k*'],
    guarantee: 'exactly_once',
  });
  assert.equal(created.created, true);
  assert.deepEqual(created.filter, ['tag', 'Glob', 'k*']);
  assert.equal(
    (await spool.putRouter('cr.a->cr.b', { source: 'cr.a', dest: 'cr.b', filter: ['tag', 'Glob', 'k*'], guarantee: 'exactly_once' }))
      .created,
    false,
  );
  await spool.append('cr.a', [
    { data: 1, tag: 'k1' },
    { data: 2, tag: 'z' },
  ]);
  const info = await spool.getRouter('cr.a->cr.b');
  assert.equal(info.forwarded_total, 1);
  assert.equal(info.guarantee, 'exactly_once');
  for (let i = 0; i < 5; i++) await spool.putRouter(`cr.list.${i}`, { source: 'cr.src', dest: `cr.list.d${i}` });
  const names: string[] = [];
  for await (const r of spool.routers({ prefix: 'cr.list.', page_size: 2 })) names.push(r.router);
  assert.deepEqual(
    names,
    [0, 1, 2, 3, 4].map((i) => `cr.list.${i}`),
  );
  const page = await spool.listRouters({ source: 'cr.a' });
  assert.deepEqual(page.routers, [{ router: 'cr.a->cr.b', source: 'cr.a', dest: 'cr.b', guarantee: 'exactly_once', forwarded_total: 1 }]);
  assert.equal((await spool.deleteRouter('cr.a->cr.b')).deleted, true);
  assert.equal((await spool.deleteRouter('cr.a->cr.b')).deleted, false);
});

test('router errors arrive as SpoolError with code and detail', async () => {
  const missing = await spoolError(() => spool.getRouter('cr.none'));
  assert.equal(missing.code, 'router_not_found');
  assert.deepEqual(missing.detail, { router: 'cr.none' });
  await spool.putRouter('cr.c1', { source: 'cr.x', dest: 'cr.y' });
  const cycle = await spoolError(() => spool.putRouter('cr.c2', { source: 'cr.y', dest: 'cr.x' }));
  assert.equal(cycle.code, 'router_cycle');
  assert.deepEqual(cycle.detail, { cycle: ['cr.y', 'cr.x', 'cr.y'] });
  const noDest = await spoolError(() => spool.putRouter('cr.c3', { source: 'cr.x', dest: 'cr.nowhere', create_dest: false }));
  assert.equal(noDest.status, 404);
  assert.equal(noDest.code, 'topic_not_found');
});
