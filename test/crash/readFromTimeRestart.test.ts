// Reading from a time across restarts (docs/API.md `from_ts`; docs/ARCHITECTURE.md "Reading from
// a time"): records appended 50 ms apart on `fsync` and `disk` topics, then SIGKILL and a restart
// on the same data directory: the records keep their `$ts`, a diff and a watch from a time
// between the batches start at the same record as before, and records appended after the
// restart (after the padded seq gap a crash leaves on a `disk` topic) are found by time too,
// `$ts` still never going down in seq order. Then a clean restart with topics asleep (restored
// asleep from the final checkpoint): the lookup wakes them and finds the same records.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, killServersAfterFile, startServer, tempDir } from '../helpers/server.js';

killServersAfterFile();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Api = ReturnType<typeof client>;

async function ok(p: Promise<any>, what: string): Promise<any> {
  const r = await p;
  assert.ok(r.status === 200 || r.status === 201, `${what}: ${r.status} ${r.text.slice(0, 400)}`);
  return r.body;
}

async function all(c: Api, t: string): Promise<any[]> {
  return (await ok(c.post(`/v0/topics/${t}/diff`, { limit: 1000 }), `read ${t}`)).records;
}

const fromTime = async (c: Api, t: string, ts: number) =>
  (await ok(c.post(`/v0/topics/${t}/diff`, { from_ts: ts, limit: 1000 }), `diff ${t} from_ts ${ts}`)).records;
const watchStart = async (c: Api, t: string, ts: number) =>
  (await ok(c.post('/v0/watch', { topics: { [t]: { from_ts: ts } } }), `watch ${t} from_ts ${ts}`)).topics[t].from_seq;

test('timestamps survive SIGKILL and a clean restart; the lookup finds the same records', { timeout: 180_000 }, async () => {
  const dataDir = tempDir('spool-rft-');
  const env = { SERVICE_WORKERS: '1', SERVICE_TOPIC_SLEEP_MS: '300' };
  let srv = await startServer({ dataDir, env });
  let c = client(srv.url);
  const topics = { fsync: 'rft.fsync', disk: 'rft.disk' };
  const between: Record<string, number> = {};
  for (const [cls, t] of Object.entries(topics)) {
    await ok(c.put(`/v0/topics/${t}`, { durability: cls }), `PUT ${t}`);
    await ok(c.post(`/v0/topics/${t}`, { records: [{ data: 'a1' }, { data: 'a2' }] }), 'append a');
    await sleep(25);
    between[t] = Date.now();
    await sleep(25);
    await ok(c.post(`/v0/topics/${t}`, { records: [{ data: 'b1' }] }), 'append b');
  }
  // A disk topic is acked once written; give the WAL a moment before the kill.
  await sleep(300);
  const before = new Map<string, any[]>();
  for (const t of Object.values(topics)) {
    before.set(t, await all(c, t));
    assert.deepEqual(
      (await fromTime(c, t, between[t]!)).map((r: any) => r.data),
      ['b1'],
    );
  }

  await srv.kill();
  srv = await startServer({ dataDir, env });
  c = client(srv.url);
  for (const t of Object.values(topics)) {
    assert.deepEqual(await all(c, t), before.get(t), `${t}: records and their $ts survive SIGKILL`);
    const recs = await fromTime(c, t, between[t]!);
    assert.deepEqual(
      recs.map((r: any) => r.$seq),
      [3],
      `${t}: a diff from the time between the batches after the restart`,
    );
    assert.equal(await watchStart(c, t, between[t]!), 2, `${t}: a watch from that time`);
  }

  // After the restart: new records (past the padded gap of a disk topic), found by time too.
  const after: Record<string, number> = {};
  for (const t of Object.values(topics)) {
    await sleep(10);
    after[t] = Date.now();
    await sleep(10);
    await ok(c.post(`/v0/topics/${t}`, { records: [{ data: 'c1' }] }), 'append c');
  }
  await sleep(300);
  for (const t of Object.values(topics)) {
    const recs = await all(c, t);
    for (let i = 1; i < recs.length; i++) assert.ok(recs[i].$ts >= recs[i - 1].$ts, `${t}: $ts never goes down in seq order`);
    const c1 = recs.at(-1);
    assert.equal(c1.data, 'c1');
    assert.deepEqual(
      (await fromTime(c, t, after[t]!)).map((r: any) => r.$seq),
      [c1.$seq],
      `${t}: the record written after the restart, by time`,
    );
    assert.deepEqual(
      (await fromTime(c, t, between[t]!)).map((r: any) => r.data),
      ['b1', 'c1'],
    );
  }

  // Asleep, then a clean restart restores them asleep: the lookup wakes them.
  const sleepingCount = async () => Number(/^spool_topics_sleeping (\d+)$/m.exec((await c.get('/v0/metrics')).text)?.[1]);
  const deadline = Date.now() + 20_000;
  while ((await sleepingCount()) < 2) {
    assert.ok(Date.now() < deadline, 'both topics went to sleep');
    await sleep(100);
  }
  assert.equal(await srv.stop(), 0);
  srv = await startServer({ dataDir, env });
  c = client(srv.url);
  assert.equal(await sleepingCount(), 2, 'restored asleep');
  for (const t of Object.values(topics)) {
    assert.deepEqual(
      (await fromTime(c, t, between[t]!)).map((r: any) => r.data),
      ['b1', 'c1'],
      `${t}: from a sleeping topic`,
    );
  }
  await srv.stop();
});
