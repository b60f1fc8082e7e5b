// The worker → main crossing over HTTP on a real server (docs/ARCHITECTURE.md "Thread crossings"):
// a worker turn that answers a request and produces watch or `/work` events wakes main once,
// with one message carrying both. Counted with the stage clock's `worker_messages`
// (GET /v0/debug/stages): an append to a watched `memory` topic (its reply and its watch push)
// and a `/work` ack (its reply and the refill's job frame) each cost one message, not two.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, startServer } from '../helpers/server.js';
import { openStream } from '../helpers/sse.js';
import { openWork } from '../helpers/workStream.js';
import { ack, appendJobs, mkQueue } from './queueUtil.js';

const ROUNDS = 20;

test('one message to main per worker turn: append + watch push, ack + refill', async () => {
  const srv = await startServer({ env: { SERVICE_STAGE_CLOCK: '1', SERVICE_WORKERS: '1' } });
  const c = client(srv.url);
  const messages = async (): Promise<number> => (await c.get('/v0/debug/stages')).body.worker_messages as number;
  try {
    assert.equal((await c.put('/v0/topics/m', { durability: 'memory' })).status, 201);
    const w = await c.post('/v0/watch', { topics: { m: { from_seq: 0 } } });
    assert.equal(w.status, 200);
    const s = await openStream(srv.url, w.body.wid);
    try {
      await s.nextEvent('caught-up');
      const before = await messages();
      for (let i = 1; i <= ROUNDS; i++) {
        const r = await c.post('/v0/topics/m', { records: [{ data: i }] });
        assert.equal(r.status, 200);
        const f = await s.nextEvent('record');
        assert.equal(f.data.records[0].$seq, i, 'the pushed record');
      }
      // The append's turn (its reply and the push) is all main hears from the worker per round
      // (the debug GET asks the worker over Comlink, not counted); it was two messages before.
      const perAppend = (await messages()) - before;
      assert.ok(perAppend >= ROUNDS && perAppend < ROUNDS * 1.5, `${perAppend} worker messages for ${ROUNDS} watched appends`);
    } finally {
      await s.close();
    }

    await mkQueue(c, 'q', { durability: 'memory', lease_ms: 60_000 });
    await appendJobs(c, 'q', ROUNDS + 1);
    const ws = await openWork(srv.url, 'q', { query: { node: 'w-a', max: '1' } });
    try {
      assert.equal(ws.status, 200);
      let job = (await ws.nextJob()).data;
      const before = await messages();
      for (let i = 1; i <= ROUNDS; i++) {
        await ack(c, 'q', { node: 'w-a', seqs: [job.$seq], lease_ids: [job.lease_id] });
        job = (await ws.nextJob()).data;
        assert.equal(job.$seq, i + 1, 'the refill pushed the next job');
      }
      const perAck = (await messages()) - before;
      assert.ok(perAck >= ROUNDS && perAck < ROUNDS * 1.5, `${perAck} worker messages for ${ROUNDS} acks with a refill`);
    } finally {
      await ws.close();
    }
  } finally {
    await srv.stop();
  }
});
