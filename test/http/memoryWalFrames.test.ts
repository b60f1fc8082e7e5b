// A `memory` topic's appends (docs/API.md "PUT /v0/topics/:topic", durability classes): acked at
// once, before the WAL has them, so nothing waits for their frames. A frame of theirs rides with
// the worker's next WAL write or leaves a few ms later, instead of waking the WAL thread for
// each append; and they are still in the WAL within those few ms, so a SIGKILL well after the
// last append loses none of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, killServersAfterFile, startServer, tempDir } from '../helpers/server.js';
import { assertOk, sleep, walBatches } from './util.js';
import { LAZY_FLUSH_MS } from '../../src/topicThread/walLink.js';

killServersAfterFile();

test('serial appends to a memory topic share WAL writes', async (t) => {
  const srv = await startServer();
  try {
    const c = client(srv.url);
    assertOk(await c.put('/v0/topics/m', { durability: 'memory' }), 201, 'create');
    assertOk(await c.post('/v0/topics/m', { records: [{ data: 0 }] }), 200, 'first append'); // its reservation
    await sleep(50);
    const appends = 40;
    // One write per append without the hold (40 and more); with it, one per LAZY_FLUSH_MS of
    // appends. Appends slower than that (a loaded machine) cannot share one: such a round says
    // nothing, and the test takes the best of three.
    const rounds: { writes: number; ms: number }[] = [];
    for (let round = 0; round < 3; round++) {
      const before = await walBatches(c);
      const t0 = Date.now();
      for (let i = 1; i <= appends; i++) assertOk(await c.post('/v0/topics/m', { records: [{ data: i }] }), 200, `append ${i}`);
      const ms = Date.now() - t0;
      await sleep(50); // the last held frames leave within a few ms
      const writes = (await walBatches(c)) - before;
      assert.ok(writes >= 1, `${writes} WAL writes: the appends were written`);
      rounds.push({ writes, ms });
      if (writes <= appends * 0.75) return;
    }
    const couldShare = rounds.filter((r) => r.ms < appends * LAZY_FLUSH_MS * 0.75);
    if (couldShare.length === 0) return t.skip(`appends too slow to share a write here: ${JSON.stringify(rounds)}`);
    assert.fail(`WAL writes for ${appends} serial memory appends, per round: ${JSON.stringify(rounds)}`);
  } finally {
    await srv.stop();
  }
});

test('memory appends are in the WAL within a few ms: a SIGKILL 300 ms later loses none', async () => {
  const dataDir = tempDir();
  let srv = await startServer({ dataDir });
  try {
    let c = client(srv.url);
    assertOk(await c.put('/v0/topics/m', { durability: 'memory' }), 201, 'create');
    const seqs: number[] = [];
    for (let i = 1; i <= 20; i++) seqs.push(...assertOk(await c.post('/v0/topics/m', { records: [{ data: i }] }), 200, `append ${i}`).seqs);
    await sleep(300); // well past the few ms a held frame waits; nothing else is written meanwhile
    await srv.kill();
    srv = await startServer({ dataDir });
    c = client(srv.url);
    const page = assertOk(await c.post('/v0/topics/m/diff', { from_seq: 0 }), 200, 'diff after restart');
    assert.deepEqual(
      page.records.map((r: any) => [r.$seq, r.data]),
      seqs.map((s, i) => [s, i + 1]),
    );
  } finally {
    await srv.stop();
  }
});
