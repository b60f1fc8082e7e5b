// Traces and replay (DESIGN 7): a scripted scenario recorded by the real server replays
// byte for byte in-process; a tampered input is reported as the first divergence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startServer, client, tempDir, CLI } from '../helpers/server.js';
import { replayTrace } from '../../src/replay/replayer.js';

test('a recorded trace replays identically, and a changed input diverges', async () => {
  const traceDir = tempDir('spool-trace-');
  const srv = await startServer({ env: { SERVICE_TRACE_DIR: traceDir, SERVICE_TRACE_OUTPUTS: '1', SERVICE_TRACE_TOPICS: 'tr.' } });
  const c = client(srv.url);
  try {
    assert.equal((await c.put('/v0/topics/tr.a', { durability: 'fsync' })).status, 201);
    for (let i = 0; i < 5; i++) assert.equal((await c.post('/v0/topics/tr.a', { records: [{ data: { i }, tag: `t${i}` }], idempotency_key: `k${i % 3}` })).status, 200);
    await c.post('/v0/topics/tr.b', { records: [{ data: 1 }, { data: [1e400] }] });
    const poll = c.post('/v0/topics/tr.b/diff', { from_seq: 2, wait_ms: 5000 });
    await new Promise((r) => setTimeout(r, 50));
    await c.post('/v0/topics/tr.b', { records: [{ data: 'wake' }] });
    assert.equal((await poll).body.records.length, 1);
    await c.post('/v0/topics/other', { records: [{ data: 'not traced' }] });
    assert.equal((await c.del('/v0/topics/tr.a')).status, 200);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  const [file] = fs.readdirSync(traceDir).map((f) => path.join(traceDir, f));
  assert.ok(file);
  const report = replayTrace(file);
  assert.equal(report.divergence, undefined, JSON.stringify(report.divergence));
  assert.ok(report.steps >= 10, `steps ${report.steps}`);
  assert.ok(report.compared >= 10);
  assert.equal(report.actors, 2, 'only topics under the trace prefix');

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
