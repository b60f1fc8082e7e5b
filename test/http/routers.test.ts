// Router definitions over HTTP (docs/API.md "Routers", "Conventions", "Topic lifecycle", "DELETE /v0/topics/:topic", "Errors", "Limits"):
// PUT upsert (201 / 200 identical / 200 diff, defaults echoed), every 400 with its detail,
// re-point 409, fan-in 409, cycle 409 with its `detail.cycle` path (docs/API.md "Routers"), create_dest false 404, the router cap
// (429 before any auto-create), GET with forwarded_total and router_not_found, list filters
// and paging with an opaque cursor (400 when corrupt), idempotent DELETE, the topic-delete
// cascade with routers_removed, no resurrection on recreate, and routers surviving restarts.
// The 400s, 404s, 405, 409s and the router cap run in the fast tier: test/inject/routerRules.test.ts.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, client } from '../helpers/server.js';
import { assertError, assertInvalid, assertOk, namer } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('rt');
const enc = encodeURIComponent;

const { c } = httpSuite();

const put = (r: string, body: unknown) => c.put(`/v0/routers/${enc(r)}`, body);

describe('PUT /v0/routers/:router', () => {
  test('creates (201) with every default echoed, then identical is 200 created false, a change 200', async () => {
    const [s, d] = [name('s'), name('d')];
    const r = `${s}->${d}`;
    const b = assertOk(await put(r, { source: s, dest: d }), 201);
    assert.deepEqual(
      { ...b, performance: undefined },
      {
        router: r,
        created: true,
        source: s,
        dest: d,
        preserve_node: true,
        preserve_tag: true,
        filter: null,
        allow_cycle: false,
        guarantee: 'at_least_once',
        performance: undefined,
      },
    );
    // The auto-created topics exist with the default config.
    assertOk(await c.get(`/v0/topics/${s}`), 200);
    assertOk(await c.get(`/v0/topics/${d}`), 200);
    const same = assertOk(await put(r, { source: s, dest: d, create_dest: false }), 200);
    assert.equal(same.created, false);
    const diff = assertOk(
      await put(r, { source: s, dest: d, preserve_node: false, filter: ['tag', 'Glob', 'a*'], guarantee: 'exactly_once' }),
      200,
    );
    assert.equal(diff.created, false);
    assert.equal(diff.preserve_node, false);
    assert.deepEqual(diff.filter, ['tag', 'Glob', 'a*']);
    assert.equal(diff.guarantee, 'exactly_once');
    const got = assertOk(await c.get(`/v0/routers/${enc(r)}`), 200);
    assert.deepEqual(got.filter, ['tag', 'Glob', 'a*']);
    assert.equal(got.forwarded_total, 0);
    // A bare string filter is the Eq shorthand of the delete language.
    assert.deepEqual(assertOk(await put(r, { source: s, dest: d, filter: 'x' }), 200).filter, ['tag', 'Eq', 'x']);
  });

  test('an existing topic keeps its config when a router names it', async () => {
    const [s, d] = [name('s'), name('d')];
    assertOk(await c.put(`/v0/topics/${d}`, { durability: 'fsync', cap_records: 5 }), 201);
    assertOk(await put(name('r'), { source: s, dest: d }), 201);
    const st = assertOk(await c.get(`/v0/topics/${d}`), 200);
    assert.equal(st.config.durability, 'fsync');
    assert.equal(st.config.cap_records, 5);
  });
});

describe('GET, list and DELETE', () => {
  test('list filters by prefix, source and dest, pages with an opaque cursor, 400 on a corrupt one', async () => {
    const p = name('L');
    const [s1, s2] = [name('s'), name('s')];
    for (let i = 0; i < 5; i++)
      assertOk(
        await put(`${p}-${i}`, { source: i < 3 ? s1 : s2, dest: `${p}.d${i}`, guarantee: i === 0 ? 'exactly_once' : 'at_least_once' }),
        201,
      );
    const all = assertOk(await c.get(`/v0/routers?prefix=${enc(p)}`), 200);
    assert.deepEqual(
      all.routers.map((r: any) => r.router),
      [0, 1, 2, 3, 4].map((i) => `${p}-${i}`),
    );
    assert.deepEqual(all.routers[0], { router: `${p}-0`, source: s1, dest: `${p}.d0`, guarantee: 'exactly_once', forwarded_total: 0 });
    assert.equal(all.next_cursor, undefined);
    assert.equal(assertOk(await c.get(`/v0/routers?prefix=${enc(p)}&source=${s2}`), 200).routers.length, 2);
    assert.deepEqual(
      assertOk(await c.get(`/v0/routers?dest=${enc(`${p}.d1`)}`), 200).routers.map((r: any) => r.router),
      [`${p}-1`],
    );
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = assertOk(await c.get(`/v0/routers?prefix=${enc(p)}&page_size=2${cursor ? `&cursor=${cursor}` : ''}`), 200);
      seen.push(...page.routers.map((r: any) => r.router));
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    assert.deepEqual(
      seen,
      all.routers.map((r: any) => r.router),
    );
    assertInvalid(await c.get('/v0/routers?cursor=%%%'), 'cursor');
    assertInvalid(await c.get(`/v0/routers?cursor=${Buffer.from('{"x":1}').toString('base64url')}`), 'cursor');
    assertInvalid(await c.get('/v0/routers?page_size=abc'));
  });

  test('DELETE is idempotent: deleted true, then false', async () => {
    const r = name('r');
    assertOk(await put(r, { source: name('s'), dest: name('d') }), 201);
    assert.deepEqual({ ...assertOk(await c.del(`/v0/routers/${r}`), 200), performance: 0 }, { router: r, deleted: true, performance: 0 });
    assert.equal(assertOk(await c.del(`/v0/routers/${r}`), 200).deleted, false);
    assertError(await c.get(`/v0/routers/${r}`), 404, 'router_not_found');
  });

  test('after DELETE answers, no copy lands in the dest any more, with appends to the source racing it', async () => {
    for (let round = 0; round < 8; round++) {
      const [s, d] = [name('s'), name('d')];
      const r = `${s}->${d}`;
      assertOk(await put(r, { source: s, dest: d }), 201);
      let writing = true;
      const writer = (async () => {
        for (let i = 0; writing; i++) assertOk(await c.post(`/v0/topics/${s}`, { records: [{ data: { i } }] }), 200);
      })();
      await new Promise((res) => setTimeout(res, 20 + round * 5));
      assertOk(await c.del(`/v0/routers/${enc(r)}`), 200);
      const head = assertOk(await c.get(`/v0/topics/${d}`), 200).head_seq;
      writing = false;
      await writer;
      await new Promise((res) => setTimeout(res, 150));
      assert.equal(assertOk(await c.get(`/v0/topics/${d}`), 200).head_seq, head, `round ${round}: a copy landed after the delete`);
    }
  });
});

describe('topic delete cascade', () => {
  test('deleting a source or a dest removes every router naming it (ascending); recreating does not resurrect them', async () => {
    const [s, d1, d2] = [name('s'), name('d'), name('d')];
    const [r1, r2] = [`${s}->${d1}`, `${s}->${d2}`];
    assertOk(await put(r2, { source: s, dest: d2 }), 201);
    assertOk(await put(r1, { source: s, dest: d1 }), 201);
    const del = assertOk(await c.del(`/v0/topics/${d1}`), 200);
    assert.deepEqual(del.routers_removed, [r1]);
    const delS = assertOk(await c.del(`/v0/topics/${s}`), 200);
    assert.deepEqual(delS.routers_removed, [r2]);
    assert.deepEqual(assertOk(await c.del(`/v0/topics/${s}`), 200).routers_removed, []);
    assertError(await c.get(`/v0/routers/${enc(r1)}`), 404, 'router_not_found');
    // Recreated: no router comes back, nothing is forwarded.
    assertOk(await c.post(`/v0/topics/${s}`, { records: [{ data: 1 }] }), 201);
    const d2state = assertOk(await c.get(`/v0/topics/${d2}`), 200);
    assert.equal(d2state.count, 0);
    assert.equal(assertOk(await c.get(`/v0/routers?source=${s}`), 200).routers.length, 0);
  });

  test('a router PUT racing the delete of its source or dest never leaves a router with a deleted end', async () => {
    for (let i = 0; i < 8; i++) {
      const [s, d] = [name('s'), name('d')];
      const r = `${s}->${d}`;
      assertOk(await c.put(`/v0/topics/${s}`, {}), 201);
      assertOk(await c.put(`/v0/topics/${d}`, {}), 201);
      const victim = i % 2 === 0 ? d : s;
      const [pr, dr] = await Promise.all([
        put(r, { source: s, dest: d }),
        new Promise((w) => setTimeout(w, i % 4)).then(() => c.del(`/v0/topics/${victim}`)),
      ]);
      // Either order is fine; a mix of both is not: a 201 router whose end is gone.
      assert.equal(pr.status, 201, pr.text);
      assert.equal(dr.status, 200, dr.text);
      const listed = (await c.get(`/v0/routers/${enc(r)}`)).status === 200;
      const victimLives = (await c.get(`/v0/topics/${victim}`)).status === 200;
      if (dr.body.routers_removed.length === 0) assert.ok(listed && victimLives, `round ${i}: the delete came first`);
      else assert.ok(!listed && !victimLives, `round ${i}: the delete took the router along`);
    }
  });
});

describe('limits and restarts', () => {
  test('routers survive a clean restart and a SIGKILL, and keep forwarding', async () => {
    const s2 = await startServer();
    try {
      const c2 = client(s2.url);
      assertOk(await c2.put('/v0/routers/keep', { source: 'a', dest: 'b', filter: ['tag', 'Eq', 'k'], guarantee: 'exactly_once' }), 201);
      assertOk(await c2.post('/v0/topics/a', { records: [{ data: 1, tag: 'k' }] }), 200);
      await s2.stop();
      const s3 = await startServer({ dataDir: s2.dataDir });
      const c3 = client(s3.url);
      const got = assertOk(await c3.get('/v0/routers/keep'), 200);
      assert.deepEqual(got.filter, ['tag', 'Eq', 'k']);
      assert.equal(got.forwarded_total, 1);
      assertOk(await c3.post('/v0/topics/a', { records: [{ data: 2, tag: 'k' }] }), 200);
      await s3.kill();
      const s4 = await startServer({ dataDir: s2.dataDir });
      const c4 = client(s4.url);
      assertOk(
        await c4.post('/v0/topics/a', {
          records: [
            { data: 3, tag: 'k' },
            { data: 4, tag: 'z' },
          ],
        }),
        200,
      );
      const diff = assertOk(await c4.post('/v0/topics/b/diff', {}), 200);
      assert.deepEqual(
        diff.records.map((r: any) => r.data),
        [1, 2, 3],
      );
      assert.equal(assertOk(await c4.get('/v0/routers/keep'), 200).forwarded_total, 3);
      await s4.stop();
    } finally {
      await s2.stop();
    }
  });

  test('an ephemeral source after a clean stop and after a SIGKILL: its router keeps forwarding new records', async () => {
    const s2 = await startServer();
    try {
      const c2 = client(s2.url);
      assertOk(await c2.put('/v0/topics/eph', { durability: 'ephemeral' }), 201);
      assertOk(await c2.put('/v0/routers/eph-%3Ekeep', { source: 'eph', dest: 'keep', guarantee: 'exactly_once' }), 201);
      assertOk(await c2.post('/v0/topics/eph', { records: [{ data: 1 }, { data: 2 }, { data: 3 }] }), 200);
      assert.equal(assertOk(await c2.get('/v0/topics/keep'), 200).count, 3);
      await s2.stop();
      const s3 = await startServer({ dataDir: s2.dataDir });
      const c3 = client(s3.url);
      assertOk(await c3.post('/v0/topics/eph', { records: [{ data: 4 }, { data: 5 }] }), 200);
      const diff = assertOk(await c3.post('/v0/topics/keep/diff', {}), 200);
      assert.deepEqual(
        diff.records.map((r: any) => r.data),
        [1, 2, 3, 4, 5],
      );
      assert.equal(assertOk(await c3.get('/v0/routers/eph-%3Ekeep'), 200).forwarded_total, 5);
      await s3.kill(); // its seqs may start again at 1: the router goes on under a new id
      const s4 = await startServer({ dataDir: s2.dataDir });
      const c4 = client(s4.url);
      assertOk(await c4.post('/v0/topics/eph', { records: [{ data: 6 }] }), 200);
      const after = assertOk(await c4.post('/v0/topics/keep/diff', {}), 200);
      assert.deepEqual(
        after.records.map((r: any) => r.data),
        [1, 2, 3, 4, 5, 6],
      );
      await s4.stop();
    } finally {
      await s2.stop();
    }
  });

  test('an ephemeral dest keeps its router progress across a SIGKILL (ROUTER_PROGRESS): nothing is copied again', async () => {
    const s2 = await startServer();
    try {
      const c2 = client(s2.url);
      assertOk(await c2.put('/v0/topics/mem', { durability: 'ephemeral' }), 201);
      assertOk(await c2.put('/v0/routers/src-%3Emem', { source: 'src', dest: 'mem' }), 201);
      assertOk(await c2.post('/v0/topics/src', { records: [{ data: 1 }, { data: 2 }, { data: 3 }] }), 200);
      assert.equal(assertOk(await c2.get('/v0/topics/mem'), 200).count, 3);
      await new Promise((r) => setTimeout(r, 300)); // the progress frame is written, not fsynced
      await s2.kill();
      const s3 = await startServer({ dataDir: s2.dataDir });
      const c3 = client(s3.url);
      assertOk(await c3.post('/v0/topics/src', { records: [{ data: 4 }] }), 200);
      const diff = assertOk(await c3.post('/v0/topics/mem/diff', {}), 200);
      assert.deepEqual(
        diff.records.map((r: any) => r.data),
        [4],
      );
      await s3.stop();
    } finally {
      await s2.stop();
    }
  });
});
