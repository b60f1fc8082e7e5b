// Traces and replay (docs/ARCHITECTURE.md "Traces and replay"): a scripted scenario recorded by the real server replays
// byte for byte in-process; a tampered input is reported as the first divergence. The second
// test does the same for a queue workload (docs/QUEUES.md; docs/ARCHITECTURE.md "Queues", "Traces and replay"): claims with a short
// lease_ms and a reclaim after expiry, nacks with and without delay_ms, extend, ack with
// lease_ids, a `/work` stream (open, job, ack, close) and a dead-letter move to a second traced
// actor; a tampered claim time is reported at that claim's step. A run with compaction (its
// `seal` input, and a restart that loads a compacted segment file) replays too, and a trace
// without the seal diverges at the next append.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startServer, client, tempDir, CLI } from '../helpers/server.js';
import { openWork } from '../helpers/workStream.js';
import { replayTrace } from '../../src/replay/replayer.js';
import { ack, appendJobs, claim, counters, eventually, extend, mkQueue, nack, seqsOf, sleepPast } from './queueUtil.js';

test('a recorded trace replays identically, and a changed input diverges', async () => {
  const traceDir = tempDir('spool-trace-');
  const srv = await startServer({ env: { SERVICE_TRACE_DIR: traceDir, SERVICE_TRACE_OUTPUTS: '1', SERVICE_TRACE_TOPICS: 'tr.' } });
  const c = client(srv.url);
  try {
    assert.equal((await c.put('/v0/topics/tr.a', { durability: 'fsync' })).status, 201);
    for (let i = 0; i < 5; i++)
      assert.equal(
        (await c.post('/v0/topics/tr.a', { records: [{ data: { i }, tag: `t${i}` }], idempotency_key: `k${i % 3}` })).status,
        200,
      );
    await c.post('/v0/topics/tr.b', { records: [{ data: 1 }, { data: [null] }] });
    const poll = c.post('/v0/topics/tr.b/diff', { from_seq: 2, wait_ms: 5000 });
    await new Promise((r) => setTimeout(r, 50));
    await c.post('/v0/topics/tr.b', { records: [{ data: 'wake' }] });
    assert.equal((await poll).body.records.length, 1);
    await c.post('/v0/topics/other', { records: [{ data: 'not traced' }] });
    assert.equal((await c.del('/v0/topics/tr.a')).status, 200);
    // Many topics (docs/ARCHITECTURE.md): absent names and the deleted topic leave no actor; replay drops them after the
    // same steps, so a recreated tr.a starts from a fresh actor there too (frame numbers and all).
    for (let i = 0; i < 3; i++) assert.equal((await c.get('/v0/topics/tr.absent')).status, 404);
    assert.equal((await c.post('/v0/topics/tr.absent/diff', { from_seq: 0 })).status, 404);
    assert.equal((await c.put('/v0/topics/tr.a', { durability: 'fsync' })).status, 201);
    assert.equal((await c.post('/v0/topics/tr.a', { records: [{ data: 'again' }] })).status, 200);
    assert.equal((await c.del('/v0/topics/tr.a')).status, 200);
    assert.equal((await c.post('/v0/topics/tr.a', { records: [{ data: 'lazily' }] })).status, 201);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  const [file] = fs.readdirSync(traceDir).map((f) => path.join(traceDir, f));
  assert.ok(file);
  const report = replayTrace(file);
  assert.equal(report.divergence, undefined, JSON.stringify(report.divergence));
  assert.ok(report.steps >= 10, `steps ${report.steps}`);
  assert.ok(report.compared >= 10);
  assert.equal(report.actors, 3, 'only topics under the trace prefix (tr.a, tr.b, tr.absent)');

  // The CLI agrees, and a tampered clock on one append shows up as that step's divergence.
  const ok = spawnSync(process.execPath, [CLI, 'replay', file], { encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const i = lines.findIndex((l) => l.includes('"k":"req"') && l.includes('"op":"append"'));
  const line = JSON.parse(lines[i]!);
  line.at += 1;
  lines[i] = JSON.stringify(line);
  fs.writeFileSync(file, lines.join('\n'));
  const bad = replayTrace(file);
  assert.equal(bad.divergence?.step, line.n);
  const cli = spawnSync(process.execPath, [CLI, 'replay', file], { encoding: 'utf8' });
  assert.equal(cli.status, 1);
  assert.match(cli.stdout, /divergence at step/);
});

test('a recorded queue workload replays identically, and a changed claim time diverges at that claim', async () => {
  const traceDir = tempDir('spool-trace-q-');
  const srv = await startServer({
    env: { SERVICE_WORKERS: '1', SERVICE_TRACE_DIR: traceDir, SERVICE_TRACE_OUTPUTS: '1', SERVICE_TRACE_TOPICS: 'trq.' },
  });
  const c = client(srv.url);
  const q = 'trq.q';
  const dlq = 'trq.dlq';
  try {
    await mkQueue(c, q, { lease_ms: 60_000, max_deliveries: 2, dead_letter: dlq });
    assert.deepEqual(
      await appendJobs(c, q, [
        { data: { j: 1 }, tag: 'a', meta: { m: 1 } },
        { data: { j: 2 } },
        { data: { j: 3 }, node: 'prod' },
        { data: { j: 4 } },
        { data: { j: 5 } },
      ]),
      [1, 2, 3, 4, 5],
    );
    // a short lease, expired and reclaimed
    const first = await claim(c, q, { node: 'w-a', max: 2, lease_ms: 100 });
    assert.deepEqual(seqsOf(first.body.claimed), [1, 2]);
    await sleepPast(Math.max(...first.body.claimed.map((j: any) => j.deadline)));
    const again = await claim(c, q, { node: 'w-b', max: 1, lease_ms: 100 });
    assert.deepEqual(seqsOf(again.body.claimed), [1], 'the expired job is reclaimed first');
    assert.equal(again.body.claimed[0].deliveries, 2);
    // nack without delay: job 1 is due for its third delivery, so the next claim moves it
    assert.equal((await nack(c, q, { node: 'w-b', seqs: [1], lease_ids: [again.body.claimed[0].lease_id] })).nacked, 1);
    const third = await claim(c, q, { node: 'w-c', max: 1 });
    assert.deepEqual(seqsOf(third.body.claimed), [2], 'job 1 goes to the dead-letter topic; expired job 2 comes instead');
    await eventually(async () => (await counters(c, q)).dead_lettered === 1, 5000, 'the dead-letter move');
    // nack with a delay, extend, ack with lease_ids
    assert.equal((await nack(c, q, { node: 'w-c', seqs: [2], delay_ms: 150 })).nacked, 1);
    const nackedAt = Date.now();
    const fresh = await claim(c, q, { node: 'w-a', max: 2 });
    assert.deepEqual(seqsOf(fresh.body.claimed), [3, 4]);
    assert.equal(
      (await extend(c, q, { node: 'w-a', seqs: [3, 4], lease_ms: 5000, lease_ids: fresh.body.claimed.map((j: any) => j.lease_id) })).body
        .extended,
      2,
    );
    const acked = await ack(c, q, { node: 'w-a', seqs: [3, 4], lease_ids: fresh.body.claimed.map((j: any) => j.lease_id) });
    assert.equal(acked.acked, 2);
    // a /work stream: open, one job, ack it, close
    const s = await openWork(srv.url, q, { query: { node: 'w-work', max: '1' } });
    assert.equal(s.status, 200, s.text);
    const job = (await s.nextJob(5000)).data as any;
    assert.equal(job.$seq, 5);
    assert.equal((await ack(c, q, { node: 'w-work', seqs: [5], lease_ids: [job.lease_id] })).acked, 1);
    await s.close();
    // the delayed job comes back (its third delivery would be over max_deliveries 2: moved too)
    await sleepPast(nackedAt + 150);
    const late = await claim(c, q, { node: 'w-d', max: 1 });
    assert.equal(late.body.count, 0, 'job 2 is never delivered a third time');
    await eventually(
      async () => (await counters(c, q)).dead_lettered === 2 || JSON.stringify(await counters(c, q)),
      5000,
      'the second dead-letter move',
    );
    assert.deepEqual(await counters(c, q), { ready: 0, in_flight: 0, dead_lettered: 2 });
    assert.equal((await c.get(`/v0/topics/${dlq}?touch=false`)).body.count, 2);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  const files = fs.readdirSync(traceDir).map((f) => path.join(traceDir, f));
  assert.equal(files.length, 1, 'one worker, one trace');
  const file = files[0]!;
  const report = replayTrace(file);
  assert.equal(report.divergence, undefined, JSON.stringify(report.divergence));
  assert.equal(report.actors, 2, 'the queue and its dead-letter topic');
  assert.ok(report.steps >= 30, `steps ${report.steps}`);
  assert.ok(report.compared >= 30, `compared ${report.compared}`);
  const ok = spawnSync(process.execPath, [CLI, 'replay', file], { encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);

  // Tamper with the time of the claim that leased jobs 3 and 4: its deadlines change.
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const i = lines.findIndex(
    (l) =>
      l.includes('"k":"req"') &&
      l.includes('"op":"claim"') &&
      l.includes('"node":"w-a"') &&
      l.includes('"max":2') &&
      !l.includes('"leaseMs":100'),
  );
  assert.ok(i > 0, 'the claim of jobs 3 and 4 is in the trace');
  const line = JSON.parse(lines[i]!);
  line.at += 1;
  lines[i] = JSON.stringify(line);
  fs.writeFileSync(file, lines.join('\n'));
  const bad = replayTrace(file);
  assert.ok(bad.divergence, 'the tampered trace diverges');
  assert.equal(bad.divergence.step, line.n, `divergence at the tampered claim: ${JSON.stringify(bad.divergence).slice(0, 500)}`);
  assert.equal(bad.divergence.actor, q);
  const cli = spawnSync(process.execPath, [CLI, 'replay', file], { encoding: 'utf8' });
  assert.equal(cli.status, 1);
  assert.match(cli.stdout, new RegExp(`divergence at step ${line.n}\\b`));
});

test('spool wal-dump lists the frames of a data directory', async () => {
  const srv = await startServer();
  const c = client(srv.url);
  await c.put('/v0/topics/dump.a', { durability: 'fsync' });
  await c.post('/v0/topics/dump.a', { records: [{ data: 1 }, { data: 2 }], idempotency_key: 'k1' });
  assert.equal(await srv.stop(), 0);
  const out = spawnSync(process.execPath, [CLI, 'wal-dump', srv.dataDir], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  assert.match(out.stdout, /BOOT/);
  assert.match(out.stdout, /TOPIC_CREATE .*"name":"dump\.a"/);
  assert.match(out.stdout, /APPEND .*seqs 1\.\.2 .*key "k1"/);
});

test('a trace of topics going to sleep and waking again replays identically (dormant topics)', async () => {
  const traceDir = tempDir('spool-trace-sleep-');
  const srv = await startServer({
    env: { SERVICE_TRACE_DIR: traceDir, SERVICE_TRACE_OUTPUTS: '1', SERVICE_TRACE_TOPICS: 'tz.', SERVICE_TOPIC_SLEEP_MS: '100' },
  });
  const c = client(srv.url);
  const asleep = async (n: number) => {
    await eventually(
      async () => {
        const m = /^spool_topics_sleeping (\d+)$/m.exec((await c.get('/v0/metrics')).text);
        return m !== null && Number(m[1]) >= n ? true : `asleep: ${m?.[1]}`;
      },
      10_000,
      `${n} topics asleep`,
    );
  };
  try {
    assert.equal((await c.put('/v0/topics/tz.a', { durability: 'fsync', auto_priority: true })).status, 201);
    assert.equal(
      (await c.post('/v0/topics/tz.a', { records: [{ data: 1, tag: 'red', node: 'n1' }, { data: 2 }], idempotency_key: 'k1' })).status,
      200,
    );
    assert.equal((await c.post('/v0/topics/tz.b', { records: [{ data: 'b' }] })).status, 201);
    await asleep(2);
    // Each request wakes its topic: a read, an append, a record delete; sleeps in between.
    assert.equal((await c.post('/v0/topics/tz.a/diff', { from_seq: 0, node: 'n1' })).body.records.length, 1);
    await asleep(2);
    assert.deepEqual((await c.post('/v0/topics/tz.a', { records: [{ data: 3 }], idempotency_key: 'k1' })).body.seqs, [1, 2]);
    assert.deepEqual((await c.post('/v0/topics/tz.a', { records: [{ data: 3 }] })).body.seqs, [3]);
    await asleep(2);
    assert.equal((await c.post('/v0/topics/tz.a/delete', { match: ['tag', 'Eq', 'red'] })).body.deleted, 1);
    await asleep(2);
    assert.equal((await c.get('/v0/topics/tz.a')).body.count, 2);
    assert.equal((await c.del('/v0/topics/tz.b')).status, 200);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  const [file] = fs.readdirSync(traceDir).map((f) => path.join(traceDir, f));
  assert.ok(file);
  const text = fs.readFileSync(file, 'utf8');
  assert.ok((text.match(/"k":"sleep"/g) ?? []).length >= 4, 'the trace holds the sleeps');
  assert.ok((text.match(/"k":"wake"/g) ?? []).length >= 4, 'the trace holds the wakes');
  const report = replayTrace(file);
  assert.equal(report.divergence, undefined, JSON.stringify(report.divergence));
  assert.ok(report.compared >= 10, `compared ${report.compared}`);
});

test('a trace with compaction replays identically: the `seal` input, and a restart that loads a compacted segment', async () => {
  // Compaction seals the topic's mostly dead active segment (a `seal` actor input, traced), so
  // the next append starts a new segment; the copy is swapped in at a checkpoint. A second run on
  // the same data dir loads the compacted file (a `segment` input with its EXTENT ranges).
  const traceDir = tempDir('spool-trace-compact-');
  const env = {
    SERVICE_WORKERS: '1',
    SERVICE_TRACE_DIR: traceDir,
    SERVICE_TRACE_OUTPUTS: '1',
    SERVICE_TRACE_TOPICS: 'tc.',
    SERVICE_PACK_BYTES: '0',
    SERVICE_SEGMENT_BYTES: String(64 * 1024),
    SERVICE_CHECKPOINT_MS: '500',
  };
  let srv = await startServer({ env });
  let c = client(srv.url);
  const records = async () =>
    ((await c.post('/v0/topics/tc.a/diff', { cursor: 0 })).body.records as { $seq: number; data: unknown }[]).map((r) => [r.$seq, r.data]);
  const pad = 'p'.repeat(1000);
  try {
    assert.equal((await c.put('/v0/topics/tc.a', { durability: 'fsync' })).status, 201);
    assert.equal((await c.post('/v0/topics/tc.a', { records: [{ data: 'keep' }] })).status, 200);
    assert.equal(
      (await c.post('/v0/topics/tc.a', { records: Array.from({ length: 30 }, (_, i) => ({ data: { i, pad }, tag: 'x' })) })).status,
      200,
    );
    assert.equal((await c.post('/v0/topics/tc.a/delete', { match: 'x' })).body.deleted, 30);
    await eventually(
      async () => ((await c.get('/v0/metrics', { accept: 'application/json' })).body.compaction.segments_rewritten >= 1 ? true : 'not yet'),
      30_000, // a plan, a paced copy and a checkpoint: seconds on a loaded 2-core machine
      'the sealed segment swapped',
    );
    assert.equal((await c.post('/v0/topics/tc.a', { records: [{ data: 'after' }] })).status, 200);
    assert.deepEqual(await records(), [
      [1, 'keep'],
      [32, 'after'],
    ]);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  srv = await startServer({ env, dataDir: srv.dataDir });
  c = client(srv.url);
  try {
    assert.deepEqual(
      await records(),
      [
        [1, 'keep'],
        [32, 'after'],
      ],
      'read back cold from the compacted file',
    );
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  const files = fs
    .readdirSync(traceDir)
    .map((f) => path.join(traceDir, f))
    .sort();
  assert.equal(files.length, 2, 'one trace per run');
  const [first, second] = files as [string, string];
  const lines = fs.readFileSync(first, 'utf8').split('\n');
  const sealAt = lines.findIndex((l) => l.includes('"k":"seal"'));
  assert.ok(sealAt > 0, 'the seal input is traced');
  assert.ok(fs.readFileSync(second, 'utf8').includes('"k":"segment"'), 'the restart loads a segment');
  for (const file of files) assert.equal(replayTrace(file).divergence, undefined, file);
  // Without the seal the append after it lands in the old segment: the replay says so there.
  const appendAfter = lines.findIndex((l, i) => i > sealAt && l.includes('"k":"req"') && l.includes('"op":"append"'));
  assert.ok(appendAfter > sealAt);
  fs.writeFileSync(first, lines.filter((_, i) => i !== sealAt).join('\n'));
  const bad = replayTrace(first);
  assert.equal(bad.divergence?.step, JSON.parse(lines[appendAfter]!).n, JSON.stringify(bad.divergence).slice(0, 300));
});

test('a trace of a router source replays identically: its copy batches carry no leftover memory', async () => {
  const traceDir = tempDir('spool-trace-');
  const srv = await startServer({ env: { SERVICE_TRACE_DIR: traceDir, SERVICE_TRACE_OUTPUTS: '1', SERVICE_TRACE_TOPICS: 'tr.' } });
  const c = client(srv.url);
  try {
    assert.equal((await c.put('/v0/topics/tr.src')).status, 201);
    assert.equal((await c.put('/v0/topics/tr.dst')).status, 201);
    assert.equal((await c.put('/v0/routers/tr.r', { source: 'tr.src', dest: 'tr.dst', guarantee: 'exactly_once' })).status, 201);
    for (let i = 0; i < 4; i++)
      assert.equal((await c.post('/v0/topics/tr.src', { records: [{ data: { i } }, { data: 'x'.repeat(i) }] })).status, 200);
    await eventually(async () => (await c.get('/v0/topics/tr.dst')).body.count === 8, 10_000, 'forwarded');
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  const files = fs.readdirSync(traceDir).map((f) => path.join(traceDir, f));
  for (const file of files) {
    const report = replayTrace(file);
    assert.equal(report.divergence, undefined, JSON.stringify(report.divergence));
  }
  // A trace whose last line was cut (its server killed mid-write) replays up to that line.
  const file = files.find((f) => fs.readFileSync(f, 'utf8').includes('tr.src'))!;
  const whole = fs.readFileSync(file, 'utf8');
  const cutFile = `${file}.cut`;
  fs.writeFileSync(cutFile, whole.slice(0, whole.length - 20));
  const cut = spawnSync(process.execPath, [CLI, 'replay', cutFile], { encoding: 'utf8' });
  assert.equal(cut.status, 0, cut.stdout + cut.stderr);
  assert.match(cut.stderr, /line \d+ of .* was cut short; replayed the lines before it/);
  assert.match(cut.stdout, /^replayed \d+ steps/);
  // --topic naming no actor of the trace is not found, not "0 steps replayed".
  const none = spawnSync(process.execPath, [CLI, 'replay', file, '--topic', 'tr.nope'], { encoding: 'utf8' });
  assert.equal(none.status, 4, none.stdout + none.stderr);
  assert.match(none.stderr, /no step of topic tr\.nope/);
});
