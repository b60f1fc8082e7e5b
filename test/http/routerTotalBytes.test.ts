// docs/API.md "Limits" max_total_bytes and routers: "every append (router forwards wait and retry)". A forward
// that meets the cap is refused before its dest actor (429 throttled, limit max_total_bytes), the
// router backs off with its cursor kept, and once live bytes drop below the cap the records are
// forwarded, none lost and none twice. Source and dest on the same and on different workers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { routerSuite } from '../support/routerSuite.js';
import { assertOk, sleep } from './util.js';

const CAP = 20_000;
const { c, pair, route } = routerSuite({ env: { SERVICE_MAX_TOTAL_BYTES: String(CAP) } });

async function routerStats(r: string): Promise<{ forwarded_total: number; lag: number; last_error: string | null }> {
  const m = await c.get('/v0/metrics', { accept: 'application/json' });
  return m.body.router_stats.find((x: { router: string }) => x.router === r);
}

async function until(what: string, ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

for (const same of [false, true]) {
  test(`a forward waits while live bytes are at max_total_bytes, then goes through (${same ? 'same worker' : 'two workers'})`, async () => {
    const [s, d] = pair(same, `tb.${same ? 'same' : 'two'}.src`);
    const ballast = `tb.${same ? 'same' : 'two'}.ballast`;
    const r = `${s}->${d}`;
    // The dest refuses for now (a full reject topic), so the records wait in the forwarder.
    assertOk(await c.put(`/v0/topics/${d}`, { discard: 'reject', cap_records: 1 }), 201);
    assertOk(await c.post(`/v0/topics/${d}`, { records: [{ data: 'first' }] }), 200);
    assertOk(await route(s, d, { guarantee: 'exactly_once' }), 201);
    assertOk(await c.post(`/v0/topics/${s}`, { records: [{ data: 1 }, { data: 2 }] }), 200); // the router created the source
    // Live bytes reach the cap (the ballast is admitted: the total was below it).
    assertOk(await c.post(`/v0/topics/${ballast}`, { records: [{ data: 'x'.repeat(CAP) }] }), 201);
    await until(
      'the sampled total to reach the cap',
      async () => (await c.post(`/v0/topics/${s}.probe`, { records: [{ data: 'p' }] })).status === 429,
    );
    // The dest takes records again; the forward now meets the byte cap instead.
    assertOk(await c.put(`/v0/topics/${d}`, { discard: 'reject' }), 200);
    await until('the refusal to be the byte cap', async () => (await routerStats(r))?.last_error === 'throttled');
    await sleep(300);
    const held = await routerStats(r);
    assert.equal(held.forwarded_total, 0, 'nothing forwarded while at the cap');
    assert.equal(held.lag, 2);
    // Room again: the waiting records are forwarded, once each, in order.
    assertOk(await c.del(`/v0/topics/${ballast}`), 200);
    assertOk(await c.del(`/v0/topics/${s}.probe`), 200);
    await until('the forward to go through', async () => (await routerStats(r)).forwarded_total === 2);
    const got = assertOk(await c.post(`/v0/topics/${d}/diff`, { from_seq: 0 }), 200).records.map((x: { data: unknown }) => x.data);
    assert.deepEqual(got, ['first', 1, 2]);
    assert.equal((await routerStats(r)).last_error, null);
  });
}
