// Many topics (docs/ARCHITECTURE.md): requests naming topics that do not exist leave no topic actor behind on the worker
// (a client could otherwise grow a worker's memory without bound), nor does a deleted topic
// once its delete is durable. The count is `spool_topic_actors` on /v0/metrics. Delete and
// recreate of a name, long-polls and watches still work after their actor was dropped.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { namer, raw, JSON_CT } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('actors');
// Topics never sleep here: this file counts actors, and a sleeping topic holds none.
const { srv, c } = httpSuite({ SERVICE_WORKERS: '2', SERVICE_TOPIC_SLEEP_MS: '0' });

async function actorCount(): Promise<number> {
  const r = await raw(srv.url, 'GET', '/v0/metrics');
  const m = /^spool_topic_actors (\d+)$/m.exec(r.text);
  assert.ok(m, 'spool_topic_actors is reported');
  return Number(m[1]);
}

async function liveTopics(): Promise<number> {
  return (await c.get('/v0/ready')).body.topics as number;
}

describe('topic actors are dropped when nothing holds them', () => {
  test('404s, diffs, states, deletes, watches and refused appends on random absent names add no actor', async () => {
    const t = name('live');
    assert.equal((await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] })).status, 201);
    const base = await actorCount();
    assert.equal(base, await liveTopics());
    for (let i = 0; i < 300; i++) {
      const absent = `absent.${i}.${Math.random().toString(36).slice(2)}`;
      assert.equal((await c.get(`/v0/topics/${absent}`)).status, 404);
      assert.equal((await c.post(`/v0/topics/${absent}/diff`, { from_seq: 0 })).status, 404);
      if (i % 10 === 0) {
        const del = await c.del(`/v0/topics/${absent}`);
        assert.equal(del.body.deleted, false, 'a delete of an absent topic deletes nothing');
        // An append refused before it creates anything: a record that is not an object.
        assert.equal((await raw(srv.url, 'POST', `/v0/topics/${absent}`, { body: '{"records":[1]}', headers: JSON_CT })).status, 400);
        const w = await raw(srv.url, 'POST', '/v0/watch', {
          body: JSON.stringify({ topics: { [absent]: { tail: true } } }),
          headers: JSON_CT,
        });
        assert.ok(w.status < 500, `watch on an absent topic: ${w.status}`);
      }
    }
    assert.equal(await actorCount(), base, 'no actor left behind');
  });

  test('a deleted topic leaves no actor; the name can be created again, and long-polls still answer', async () => {
    const base = await actorCount();
    const t = name('cycle');
    for (let round = 1; round <= 3; round++) {
      assert.equal((await c.put(`/v0/topics/${t}`, { durability: round === 2 ? 'fsync' : 'disk' })).status, 201);
      assert.equal((await c.post(`/v0/topics/${t}`, { records: [{ data: round }, { data: round }] })).status, 200);
      assert.equal(await actorCount(), base + 1);
      // A long-poll at the head answers when a record arrives.
      const waiting = c.post(`/v0/topics/${t}/diff`, { from_seq: 2, wait_ms: 5000 });
      await new Promise((r) => setTimeout(r, 50));
      assert.equal((await c.post(`/v0/topics/${t}`, { records: [{ data: 'late' }] })).status, 200);
      const polled = await waiting;
      assert.equal(polled.status, 200);
      assert.equal(polled.body.records.length, 1);
      assert.equal(polled.body.records[0].data, 'late');
      assert.equal(polled.body.head_seq, 3, 'a recreated topic starts again at seq 1');
      assert.equal((await c.del(`/v0/topics/${t}`)).status, 200);
      assert.equal((await c.get(`/v0/topics/${t}`)).status, 404);
      assert.equal(await actorCount(), base, `round ${round}: the deleted topic's actor is gone`);
    }
    // A long-poll that times out on a topic deleted meanwhile.
    assert.equal((await c.post(`/v0/topics/${t}`, { records: [{ data: 'x' }] })).status, 201);
    const timed = await c.post(`/v0/topics/${t}/diff`, { from_seq: 1, wait_ms: 100 });
    assert.equal(timed.status, 200);
    assert.equal((await c.del(`/v0/topics/${t}`)).status, 200);
    assert.equal(await actorCount(), base);
  });
});
