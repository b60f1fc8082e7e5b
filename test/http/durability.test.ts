// Durability classes (docs/API.md "PUT /v0/topics/:topic", "Append"): every class appends and reads back at once
// (visibility at the ack point), with fsync_ms 0 on the non-fsync classes.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { assertOk, assertFullConfig, namer } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('dur');
const { c } = httpSuite();

const CLASSES = ['ephemeral', 'memory', 'disk', 'fsync'] as const;

describe('durability classes', () => {
  for (const cl of CLASSES) {
    test(`${cl}: append then immediate diff and state see the records`, async () => {
      const t = name(cl);
      const p = await c.put(`/v0/topics/${t}`, { durability: cl });
      assertOk(p, 201);
      assertFullConfig(p.body.config, { durability: cl, durable: cl === 'fsync' });
      for (let round = 0; round < 5; round++) {
        const a = await c.post(`/v0/topics/${t}`, { records: [{ data: { round, i: 0 } }, { data: { round, i: 1 }, meta: { cl } }] });
        const b = assertOk(a, 200, `${cl} append ${round}`);
        assert.deepEqual(b.seqs, [round * 2 + 1, round * 2 + 2]);
        if (cl === 'memory' || cl === 'disk') assert.equal(b.performance.fsync_ms, 0, `${cl}: fsync_ms is 0`);
        if (cl !== 'ephemeral') {
          assert.equal(typeof b.performance.wal_append_ms, 'number', `${cl}: wal_append_ms`);
          assert.equal(typeof b.performance.fsync_ms, 'number', `${cl}: fsync_ms`);
        }
        // visible at the ack point
        const d = await c.post(`/v0/topics/${t}/diff`, { from_seq: b.first_seq - 1 });
        assert.deepEqual(
          d.body.records.map((r: any) => r.data),
          [
            { round, i: 0 },
            { round, i: 1 },
          ],
          `${cl}: read back round ${round}`,
        );
        assert.deepEqual(d.body.records[1].meta, { cl });
        const st = await c.get(`/v0/topics/${t}?touch=false`);
        assert.equal(st.body.head_seq, b.last_seq);
        assert.equal(st.body.count, b.last_seq);
      }
    });

    test(`${cl}: concurrent appends are all readable after their acks`, async () => {
      const t = name(`${cl}c`);
      await c.put(`/v0/topics/${t}`, { durability: cl });
      const acks = await Promise.all(Array.from({ length: 25 }, (_, i) => c.post(`/v0/topics/${t}`, { records: [{ data: i }] })));
      for (const a of acks) assert.equal(a.status, 200, a.text);
      const d = await c.post(`/v0/topics/${t}/diff`, { limit: 1000 });
      assert.equal(d.body.records.length, 25);
      assert.deepEqual(
        d.body.records.map((r: any) => r.data).sort((x: number, y: number) => x - y),
        Array.from({ length: 25 }, (_, i) => i),
      );
      acks.forEach((a, i) => {
        const rec = d.body.records.find((r: any) => r.$seq === a.body.first_seq);
        assert.equal(rec?.data, i, `${cl}: seq ${a.body.first_seq} holds the data of request ${i}`);
      });
    });

    test(`${cl}: auto-create with config durability`, async () => {
      const t = name(`${cl}a`);
      const a = await c.post(`/v0/topics/${t}`, { records: [{ data: 'x' }], config: { durability: cl } });
      assertOk(a, 201);
      const d = await c.post(`/v0/topics/${t}/diff`, {});
      assert.deepEqual(
        d.body.records.map((r: any) => r.data),
        ['x'],
      );
      const st = await c.get(`/v0/topics/${t}`);
      assert.equal(st.body.config.durability, cl);
      assert.equal(st.body.config.durable, cl === 'fsync');
      const list = await c.get(`/v0/topics?prefix=${t}`);
      assert.equal(list.body.topics[0].durable, cl === 'fsync');
    });
  }

  test('durable:true in an append config creates an fsync topic', async () => {
    const t = name('durable');
    const a = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], config: { durable: true } });
    assertOk(a, 201);
    assert.equal(typeof a.body.performance.fsync_ms, 'number');
    const st = await c.get(`/v0/topics/${t}`);
    assertFullConfig(st.body.config, { durable: true, durability: 'fsync' });
  });
});
