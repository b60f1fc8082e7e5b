// Reading from a time through the client (docs/CLIENT.md; docs/API.md "Reading from a time"),
// against a real spawned server with records appended 50 ms apart: `diff({from_ts})`,
// `follow(t, {from_ts})` (the first diff resolves the time, later ones go on by seq, live
// records follow), `watch({topics: {t: {from_ts}}})` (the session starts at the resolved seq),
// bigint seqs, and two starts as a SpoolError 400.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from '../helpers/server.js';
import { useSpoolServer, spoolError } from '../helpers/spoolServer.js';
import { Spool, SpoolError } from '../../src/client/index.js';

let srv: Server;
let spool: Spool;
useSpoolServer((s, c) => ((srv = s), (spool = c)));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** a1 a2, then 50 ms later b1 b2; returns the client's clock between the two. */
async function timed(t: string): Promise<number> {
  await spool.append(t, [{ data: 'a1' }, { data: 'a2' }], { create: true });
  await sleep(25);
  const between = Date.now();
  await sleep(25);
  await spool.append(t, [{ data: 'b1' }, { data: 'b2' }]);
  return between;
}

test('diff from a time, in number and bigint modes; with from_seq it is a 400', async () => {
  const t = 'rft.diff';
  const between = await timed(t);
  const page = await spool.diff(t, { from_ts: between });
  assert.deepEqual(
    page.records.map((r) => r.data),
    ['b1', 'b2'],
  );
  assert.deepEqual([page.next_from_seq, page.caught_up], [4, true]);
  const big = new Spool({ url: srv.url, int64: 'bigint' });
  const bp = await big.diff(t, { from_ts: between, raw: true });
  assert.deepEqual(
    bp.records.map((r) => r.$seq),
    [3n, 4n],
  );
  const both = await spoolError(() => spool.diff(t, { from_ts: between, from_seq: 0 }));
  assert.deepEqual([both.status, both.code, both.detail], [400, 'invalid_request', { field: 'from_ts' }]);
});

test('follow from a time: the records from then on, caught-up, then live ones by seq', async () => {
  const t = 'rft.follow';
  const between = await timed(t);
  const ctl = new AbortController();
  const got: unknown[] = [];
  await assert.rejects(
    (async () => {
      for await (const ev of spool.follow(t, { from_ts: between, wait_ms: 2000, signal: ctl.signal })) {
        got.push(ev.type === 'record' ? ev.record.data : ev.type);
        if (ev.type === 'caught-up') setTimeout(() => void spool.append(t, [{ data: 'c1' }]), 100);
        if (ev.type === 'record' && ev.record.data === 'c1') ctl.abort();
      }
    })(),
    (e: unknown) => e instanceof SpoolError && e.code === 'aborted',
  );
  assert.deepEqual(got, ['b1', 'b2', 'caught-up', 'c1']);
  // Both starts: the server's 400 ends the iteration.
  const bad = await spoolError(async () => {
    for await (const _ of spool.follow(t, { from_ts: between, from_seq: 1 })) break;
  });
  assert.equal(bad.code, 'invalid_request');
});

test('watch from a time: starts at the resolved seq, then live records by seq', async () => {
  const t = 'rft.watch';
  const between = await timed(t);
  const w = spool.watch({ topics: { [t]: { from_ts: between } } });
  const got: unknown[] = [];
  for await (const ev of w) {
    got.push(ev.type === 'record' ? ev.record.data : ev.type);
    if (ev.type === 'caught-up') await spool.append(t, [{ data: 'c1' }]);
    if (ev.type === 'record' && ev.record.data === 'c1') break;
  }
  assert.deepEqual(got, ['b1', 'b2', 'caught-up', 'c1']);
  assert.equal(Buffer.from(w.cursor, 'base64url').toString(), `{"${t}":5}`);
  const bad = await spoolError(async () => {
    for await (const _ of spool.watch({ topics: { [t]: { from_ts: between, tail: true } } })) break;
  });
  assert.deepEqual([bad.code, bad.detail], ['invalid_request', { field: `topics.${t}.from_ts` }]);
});
