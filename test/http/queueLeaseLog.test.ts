// The lease log of a queue without `leases_durable` (docs/QUEUES.md "Durability and restarts"):
// nothing waits for a claim's LEASES frame, so it rides with the worker's next WAL write (the
// ack's DELETE frame, typically) instead of waking the WAL thread on its own, and a claim that
// no write follows is still logged within a few ms: its lease holds across a SIGKILL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, killServersAfterFile, startServer, tempDir } from '../helpers/server.js';
import { assertOk, sleep, walBatches } from './util.js';
import { appendJobs, mkQueue } from './queueUtil.js';

killServersAfterFile();

test('claim 1 + ack pairs cost one WAL write each, not two', async () => {
  const srv = await startServer();
  try {
    const c = client(srv.url);
    await mkQueue(c, 'jobs', { durability: 'disk', lease_ms: 60_000 });
    const pairs = 40;
    const rounds = 3;
    await appendJobs(c, 'jobs', pairs * rounds);
    // A claim's frame submitted on its own made it 2 × pairs; riding with the ack, ~pairs. The
    // slack covers acks that reach a loaded machine's worker more than a few ms after their
    // claim, and so do the rounds: the best of up to three (a claim always written alone fails
    // every one).
    let writes = Infinity;
    for (let round = 0; round < rounds && writes > pairs * 1.5; round++) {
      const before = await walBatches(c);
      for (let i = 0; i < pairs; i++) {
        const got = assertOk(await c.post('/v0/topics/jobs/claim', { node: 'w', max: 1 }), 200, 'claim').claimed;
        assert.equal(got.length, 1);
        const acked = assertOk(
          await c.post('/v0/topics/jobs/ack', { node: 'w', seqs: [got[0].$seq], lease_ids: [got[0].lease_id] }),
          200,
          'ack',
        );
        assert.equal(acked.acked, 1);
      }
      writes = (await walBatches(c)) - before;
      assert.ok(writes >= pairs, `${writes} WAL writes: every ack is written`);
    }
    assert.ok(writes <= pairs * 1.5, `${writes} WAL writes for ${pairs} claim+ack pairs (the best of ${rounds} rounds)`);
  } finally {
    await srv.stop();
  }
});

test('a lone claim is logged without a later write: its lease holds across a SIGKILL', async () => {
  const dataDir = tempDir();
  let srv = await startServer({ dataDir });
  try {
    let c = client(srv.url);
    await mkQueue(c, 'lone', { durability: 'disk', lease_ms: 60_000 });
    await appendJobs(c, 'lone', 2);
    const got = assertOk(await c.post('/v0/topics/lone/claim', { node: 'holder', max: 1 }), 200, 'claim').claimed;
    await sleep(300); // well past the few ms a held frame waits; nothing else is written meanwhile
    await srv.kill();
    srv = await startServer({ dataDir });
    c = client(srv.url);
    const leases = assertOk(await c.get('/v0/topics/lone/leases'), 200, 'leases').leases;
    assert.deepEqual(
      leases.map((l: any) => [l.$seq, l.node, l.deadline]),
      [[got[0].$seq, 'holder', got[0].deadline]],
    );
    const next = assertOk(await c.post('/v0/topics/lone/claim', { node: 'other', max: 2 }), 200, 'claim after restart').claimed;
    assert.deepEqual(
      next.map((j: any) => j.$seq),
      [2],
      'the leased job is not handed out again',
    );
  } finally {
    await srv.stop();
  }
});
