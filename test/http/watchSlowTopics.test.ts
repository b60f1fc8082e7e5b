// A slow watch stream over many topics (docs/WATCH.md "Slow consumers"): a client that opens a
// stream on many topics with big backlogs and reads nothing costs the server about one stream's
// high water plus one read, not a read per topic; and when it reads again it gets every record
// of every topic once, in order per topic.
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { openRawStream, CursorTracker, type RawSseStream } from '../helpers/sse.js';
import { assertOk, namer, sleep } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('wslowmany');
const { srv, c } = httpSuite({ SERVICE_WORKERS: '2' });

const streams: RawSseStream[] = [];
afterEach(() => {
  for (const s of streams.splice(0)) s.close();
});

const MiB = 1024 * 1024;
const TOPICS = 24;
const REC_BYTES = 8_000;
const RECORDS_PER_TOPIC = 500; // 4 MB per topic
const APPEND_RECORDS = 125; // 1 MB per append
const MAX_BATCH_BYTES = 4 * MiB;
/** The stream's high water (docs/WATCH.md "Slow consumers"), and one read on top of it. */
const HIGH_WATER_BYTES = Math.max(MiB, 4 * MAX_BATCH_BYTES);
const BOUND_BYTES = HIGH_WATER_BYTES + MAX_BATCH_BYTES;

const rec = (i: number) => ({ data: `${String(i).padStart(8, '0')}${'x'.repeat(REC_BYTES - 10)}` });

/** The main thread's external memory (Buffers, and the read replies the workers hand over), bytes. */
async function externalBytes(): Promise<number> {
  const r = await c.get('/v0/metrics');
  assert.equal(r.status, 200, 'metrics');
  const m = /^nodejs_external_memory_bytes (\d+)/m.exec(r.text);
  assert.ok(m, 'nodejs_external_memory_bytes in /v0/metrics');
  return Number(m[1]);
}

async function seeded(t: string): Promise<void> {
  assertOk(await c.put(`/v0/topics/${t}`, { durability: 'memory' }), 201);
  for (let first = 1; first <= RECORDS_PER_TOPIC; first += APPEND_RECORDS) {
    const records = Array.from({ length: APPEND_RECORDS }, (_, i) => rec(first + i));
    assertOk(await c.post(`/v0/topics/${t}`, { records }), 200, `append to ${t} from ${first}`);
  }
}

test('a stalled stream over many topics holds about one high water plus one read, then delivers every record once', async (ctx) => {
  const topics = Array.from({ length: TOPICS }, (_, i) => name(String(i)));
  for (const t of topics) await seeded(t);
  const w = assertOk(
    await c.post('/v0/watch', {
      topics: Object.fromEntries(topics.map((t) => [t, {}])),
      max_batch_bytes: MAX_BATCH_BYTES,
      limit: 1000,
    }),
    200,
  );

  // The baseline: the lowest of a few samples, once the appends' buffers could be collected.
  let base = Infinity;
  for (let i = 0; i < 6; i++) {
    await sleep(50);
    base = Math.min(base, await externalBytes());
  }
  const s = await openRawStream(srv.url, w.wid);
  streams.push(s);
  s.pause(); // read nothing until the end
  assert.equal(s.status, 200, s.headerText);

  let peak = base;
  const until = Date.now() + 3000;
  while (Date.now() < until) {
    peak = Math.max(peak, await externalBytes());
    await sleep(50);
  }
  const grownMiB = Math.round((peak - base) / MiB);
  ctx.diagnostic(
    `external memory ${Math.round(base / MiB)} -> peak ${Math.round(peak / MiB)} MiB (+${grownMiB}) with one stalled stream over ${TOPICS} topics (bound ${BOUND_BYTES / MiB} MiB)`,
  );
  // A read's reply and its frame are two copies until the reply is collected, and frames the
  // kernel took are garbage not yet collected: up to about three times the bound. When every
  // topic read at once this was about 24 x 4 MiB held, 2 x 24 x 4 MiB at the peak.
  assert.ok(
    peak - base < 3 * BOUND_BYTES,
    `the server holds +${grownMiB} MiB for one stalled stream over ${TOPICS} topics; bound about ${BOUND_BYTES / MiB} MiB`,
  );

  // Read everything: every record of every topic, once, in order.
  const tr = new CursorTracker(Object.fromEntries(topics.map((t) => [t, 0])));
  s.resume();
  await tr.untilCaughtUp(s.queue, topics, 15_000);
  for (const t of topics) {
    const seqs = tr.seqs(t);
    assert.deepEqual(
      seqs,
      Array.from({ length: RECORDS_PER_TOPIC }, (_, i) => i + 1),
      `${t}: every record once, in order`,
    );
    for (const r of tr.records[t]!) assert.equal(r.data.slice(0, 8), String(r.$seq).padStart(8, '0'));
  }
  assert.deepEqual(
    tr.events.filter((f) => f.event === 'tombstone'),
    [],
    'nothing was evicted: no tombstone',
  );
});
