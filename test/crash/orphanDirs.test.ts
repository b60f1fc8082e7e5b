// Recovery step 6 through a real server (src/supervisor/orphans.ts): the entries of topics/ that
// are not the directory of a live topic go at boot, and the directories of live topics stay,
// whether recovery restored the topic asleep (quiet at the cut, its own file as it was) or loaded
// it (appended to after the cut). The workers tell which of the listed ids are theirs
// (WorkerRecovery.finish); this checks both of their answers and main's removal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { client, killServersAfterFile, startServer, tempDir, type Server } from '../helpers/server.js';
import { raw } from '../http/util.js';

killServersAfterFile();

// Every topic has its own segment files (no packs); quiet topics sleep after 200 ms.
const env = { SERVICE_WORKERS: '2', SERVICE_PACK_BYTES: '0', SERVICE_TOPIC_SLEEP_MS: '200' };

async function metric(srv: Server, m: string): Promise<number> {
  const hit = new RegExp(`^${m} (\\d+)$`, 'm').exec((await raw(srv.url, 'GET', '/v0/metrics')).text);
  assert.ok(hit, `${m} is reported`);
  return Number(hit[1]);
}

const entries = (dataDir: string) => fs.readdirSync(path.join(dataDir, 'topics')).sort();

test('boot removes topic directories of no live topic and keeps those of live ones, asleep or loaded', { timeout: 120_000 }, async () => {
  const dataDir = tempDir('spool-orphans-');
  let srv = await startServer({ dataDir, env });
  let c = client(srv.url);
  const topics = ['quiet.a', 'quiet.b', 'busy.a', 'busy.b'];
  for (const t of topics) {
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: { t, n: 1 } }, { data: { t, n: 2 } }] });
    assert.equal(r.status, 201, r.text);
  }
  const deadline = Date.now() + 20_000;
  while ((await metric(srv, 'spool_topics_sleeping')) < topics.length) {
    assert.ok(Date.now() < deadline, 'every topic went to sleep');
    await new Promise((r) => setTimeout(r, 100));
  }
  // A topic sleeps only once its frames are written: its segment file (and directory) is there.
  const live = entries(dataDir);
  assert.equal(live.length, topics.length, 'one directory per topic');
  // A clean stop: its final checkpoint has every topic asleep with its own file as it is.
  assert.equal(await srv.stop(), 0);

  srv = await startServer({ dataDir, env });
  c = client(srv.url);
  // Appended to after the cut: recovery loads these two (the others stay asleep).
  for (const t of ['busy.a', 'busy.b']) assert.equal((await c.post(`/v0/topics/${t}`, { records: [{ data: { t, n: 3 } }] })).status, 200);
  await srv.kill();

  // Not topics: a well-formed id no topic has, and a name that is no id.
  const stray = path.join(dataDir, 'topics', '00000000abcd');
  fs.mkdirSync(stray);
  fs.writeFileSync(path.join(stray, '00000000000000000001.seg'), 'not a segment');
  fs.mkdirSync(path.join(dataDir, 'topics', 'not-a-topic'));

  srv = await startServer({ dataDir, env });
  c = client(srv.url);
  assert.deepEqual(entries(dataDir), live, 'the strays went; every live topic kept its directory');
  for (const t of topics) {
    const d = (await c.post(`/v0/topics/${t}/diff`, { from_seq: 0 })).body;
    const want = t.startsWith('busy') ? [1, 2, 3] : [1, 2];
    assert.deepEqual(
      d.records.map((r: { data: { n: number } }) => r.data.n),
      want,
      `${t}: its records after the restart`,
    );
  }
  assert.equal(await metric(srv, 'spool_topics'), topics.length);
  assert.equal(await srv.stop(), 0);
});
