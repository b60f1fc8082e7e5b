// Slow watch consumers (docs/WATCH.md "Slow consumers"; docs/API.md "Watch frames"):
// a stream whose client stops reading is paused once its socket backs up: the server drops its
// pushes instead of buffering them, other streams on the same topic keep getting every record
// promptly, and when the client reads again the stream resumes from its cursor, so records
// evicted meanwhile arrive as one `cap` tombstone followed by contiguous records, never a
// duplicate seq.
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { openStream, openRawStream, RawSseStream, SseStream, CursorTracker } from '../helpers/sse.js';
import { assertOk, namer, sleep } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('wslow');
const { srv, c } = httpSuite({ SERVICE_WORKERS: '1' });

const streams: (SseStream | RawSseStream)[] = [];
afterEach(async () => {
  for (const s of streams.splice(0)) await s.close();
});

/** Resident set size of the server process, bytes (Linux). */
function rss(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

const REC_BYTES = 10_000;
const BATCH = 100; // 1 MB per append
const rec = (i: number) => ({ data: `${String(i).padStart(8, '0')}${'x'.repeat(REC_BYTES - 10)}` });

async function appendBatch(t: string, first: number): Promise<void> {
  const r = await c.post(`/v0/topics/${t}`, { records: Array.from({ length: BATCH }, (_, i) => rec(first + i)) });
  assertOk(r, 200, `append from ${first}`);
}

test('a stalled stream is paused, the fast one keeps up, and the stalled one resumes with a cap tombstone', async (ctx) => {
  const TOTAL = 2000; // 20 MB
  const t = name('cap');
  assertOk(await c.put(`/v0/topics/${t}`, { cap_records: 300 }), 201);
  const ws = assertOk(await c.post('/v0/watch', { topics: { [t]: {} } }), 200);
  const wf = assertOk(await c.post('/v0/watch', { topics: { [t]: {} } }), 200);

  const slow = await openRawStream(srv.url, ws.wid);
  streams.push(slow);
  assert.equal(slow.status, 200, slow.headerText);
  const slowTr = new CursorTracker({ [t]: 0 });
  await slowTr.until(slow.queue, (f) => f.event === 'caught-up', 3000, 'slow caught-up at connect');
  slow.pause(); // never read again until the end

  const fast = await openStream(srv.url, wf.wid);
  streams.push(fast);
  assert.equal(fast.status, 200);
  const fastTr = new CursorTracker({ [t]: 0 });
  await fastTr.untilCaughtUp(fast);

  const pid = srv.proc.pid!;
  const rss0 = rss(pid);
  let rssMax = rss0;
  let worst = 0;
  const started = Date.now();
  for (let first = 1; first <= TOTAL; first += BATCH) {
    const at = Date.now();
    await appendBatch(t, first);
    const last = first + BATCH - 1;
    await fastTr.until(fast, (f) => f.event === 'record' && f.data.to_seq >= last, 5000, `fast stream up to ${last}`);
    worst = Math.max(worst, Date.now() - at);
    rssMax = Math.max(rssMax, rss(pid));
  }
  const took = Date.now() - started;
  assert.deepEqual(
    fastTr.events.filter((f) => f.event === 'tombstone'),
    [],
    'the fast stream never falls behind the cap',
  );
  assert.equal(fastTr.seqs(t).length, TOTAL, 'the fast stream got every record');
  assert.ok(worst < 2000, `fast stream latency up to ${worst} ms per 1 MB batch (all ${TOTAL} in ${took} ms)`);
  const received = slow.bodyBytes();
  assert.ok(received < 12 * 1024 * 1024, `the stalled client already holds ${received} bytes: was it really stalled?`);
  assert.ok(
    rssMax - rss0 < 200 * 1024 * 1024,
    `server RSS grew by ${Math.round((rssMax - rss0) / 2 ** 20)} MiB while one stream was stalled`,
  );

  // read again: whatever sat in the socket buffers, then a cap tombstone, then the live tail
  slow.resume();
  await slowTr.until(slow.queue, () => slowTr.cursor[t] === TOTAL, 15000, 'slow stream at the head after resuming');
  const tombs = slowTr.events.filter((f) => f.event === 'tombstone');
  assert.equal(tombs.length, 1, `one tombstone for the evicted range, got ${tombs.map((f) => f.dataText).join(' ')}`);
  const tb = tombs[0]!.data;
  assert.equal(tb.reason, 'cap');
  assert.equal(tb.head_seq, TOTAL);
  assert.equal(tb.earliest_seq, TOTAL - 300 + 1, 'earliest after the cap');
  const seqs = slowTr.seqs(t);
  const beforeTomb = seqs.filter((s) => s < tb.gap_from);
  const afterTomb = seqs.filter((s) => s > tb.gap_to);
  assert.deepEqual(
    beforeTomb,
    Array.from({ length: beforeTomb.length }, (_, i) => i + 1),
    'contiguous from 1 up to the gap',
  );
  assert.deepEqual(
    afterTomb,
    Array.from({ length: TOTAL - tb.gap_to }, (_, i) => tb.gap_to + 1 + i),
    'contiguous after the gap up to the head',
  );
  assert.equal(beforeTomb.length + afterTomb.length, seqs.length);
  // the data survived intact
  for (const r of slowTr.records[t]!) assert.equal(r.data.slice(0, 8), String(r.$seq).padStart(8, '0'));
  const bytesBefore = beforeTomb.length * REC_BYTES;
  ctx.diagnostic(
    `fast: worst ${worst} ms per batch, ${took} ms total; stalled: ${beforeTomb.length} records before the gap [${tb.gap_from}, ${tb.gap_to}], ${afterTomb.length} after; RSS +${Math.round((rssMax - rss0) / 2 ** 20)} MiB`,
  );
  assert.ok(
    bytesBefore < 12 * 1024 * 1024,
    `${bytesBefore} bytes of records reached the stalled client before the gap: the server buffered far beyond its bound`,
  );
});

test('a stalled stream without eviction loses nothing: after resuming it gets every record once, no tombstone', async () => {
  const TOTAL = 800; // 8 MB
  const t = name('nocap');
  assertOk(await c.put(`/v0/topics/${t}`, {}), 201);
  const ws = assertOk(await c.post('/v0/watch', { topics: { [t]: {} } }), 200);
  const slow = await openRawStream(srv.url, ws.wid);
  streams.push(slow);
  const tr = new CursorTracker({ [t]: 0 });
  await tr.until(slow.queue, (f) => f.event === 'caught-up', 3000, 'caught-up at connect');
  slow.pause();
  for (let first = 1; first <= TOTAL; first += BATCH) await appendBatch(t, first);
  await sleep(200);
  slow.resume();
  await tr.until(slow.queue, () => tr.cursor[t] === TOTAL, 15000, 'at the head after resuming');
  assert.deepEqual(
    tr.events.filter((f) => f.event === 'tombstone'),
    [],
  );
  assert.deepEqual(
    tr.seqs(t),
    Array.from({ length: TOTAL }, (_, i) => i + 1),
  );
  // and it is live again
  await appendBatch(t, TOTAL + 1);
  await tr.until(slow.queue, (f) => f.event === 'record' && f.data.to_seq === TOTAL + BATCH, 5000, 'live after resuming');
});
