// Routers seen through watch streams (docs/API.md "Routers", "Diff", "Watch frames"; docs/WATCH.md): a stream
// tailing a dest gets forwarded records as `record` frames without any read of its own, a
// stream opened from an old cursor pulls (draining pending forwards first) and gets the copies,
// and records lost at the source before forwarding reach the stream as a `tombstone` frame
// with reason `source_trim` between the records around it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStream } from '../helpers/sse.js';
import { routerSuite } from '../support/routerSuite.js';
import { assertOk, namer } from './util.js';

const name = namer('rw');
const { srv, c, route } = routerSuite();

test('a tailing stream on the dest gets forwarded records as they are copied', async () => {
  const [s, d] = [name('s'), name('d')];
  assertOk(await route(s, d), 201);
  const w = assertOk(await c.post('/v0/watch', { topics: { [d]: { tail: true } } }), 200);
  const st = await openStream(srv.url, w.wid);
  try {
    await st.nextEvent('caught-up');
    assertOk(await c.post(`/v0/topics/${s}`, { records: [{ data: 'a' }, { data: 'b' }] }), 200);
    const seen: string[] = [];
    while (seen.length < 2) {
      const f = await st.nextEvent('record', 5000);
      seen.push(...f.data.records.map((r: any) => r.data));
    }
    assert.deepEqual(seen, ['a', 'b']);
  } finally {
    await st.close();
  }
});

test('a stream from an old cursor gets a source_trim tombstone between the records around the loss', async () => {
  const [s, d] = [name('s'), name('d')];
  assertOk(await c.put(`/v0/topics/${s}`, { cap_records: 2 }), 201);
  assertOk(await c.put(`/v0/topics/${d}`, { discard: 'reject', cap_records: 1 }), 201);
  assertOk(await route(s, d), 201);
  assertOk(await c.post(`/v0/topics/${s}`, { records: [{ data: 1 }] }), 200);
  for (const v of [2, 3, 4, 5]) assertOk(await c.post(`/v0/topics/${s}`, { records: [{ data: v }] }), 200);
  assertOk(await c.put(`/v0/topics/${d}`, { discard: 'reject', cap_records: 100 }), 200);
  const w = assertOk(await c.post('/v0/watch', { topics: { [d]: { from_seq: 0 } } }), 200);
  const st = await openStream(srv.url, w.wid);
  try {
    const events: string[] = [];
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && !events.includes('4')) {
      const f = await st.next((x) => x.event === 'record' || x.event === 'tombstone', 10_000);
      if (f.event === 'tombstone') {
        assert.equal(f.data.reason, 'source_trim');
        events.push(`trim:${f.data.gap_from}-${f.data.gap_to}`);
      } else events.push(...f.data.records.map((r: any) => String(r.data)));
      if (events.includes('5')) break;
    }
    assert.deepEqual(events, ['1', 'trim:2-2', '4', '5']);
  } finally {
    await st.close();
  }
});
