// Router copies are the source's stored bytes (docs/API.md "Routers"; docs/ARCHITECTURE.md
// "Routers": copies travel as a record section the dest frames as is): over HTTP, on a server with
// two topic workers, source and dest on different workers and on the same one, both guarantees
// and both preserve_* settings. Data and meta come back from the dest byte for byte as the
// source stores them (whitespace removed, numbers and escapes as written), `$tag`/`$node` per
// preserve_*, `_spool_router` last in an exactly_once copy's meta; batches of several hundred
// records cross the forwarder's batch bound, and a second hop copies the copies. A batch larger
// than a `discard: reject` dest's cap is still halved until it fits, as with a JSON body.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { routerSuite } from '../support/routerSuite.js';
import { assertOk, namer } from './util.js';

const name = namer('cb');
const { c, pair, route } = routerSuite({ name });

/** One record as sent (raw JSON, maybe with whitespace) and as stored (compact texts). */
interface Rec {
  raw: string;
  data: string;
  meta?: string;
  tag?: string;
  node?: string;
}

const SPECIAL: Rec[] = [
  {
    raw: '{"data": {"b" : 1e400, "s":"\\u00e9\\"x"} , "meta": { "k" : [1, 2] }, "tag":"t\\u0041", "node":"n1"}',
    data: '{"b":1e400,"s":"\\u00e9\\"x"}',
    meta: '{"k":[1,2]}',
    tag: '"t\\u0041"',
    node: '"n1"',
  },
  { raw: '{"data": "plain"}', data: '"plain"' },
  { raw: '{ "meta": {}, "data": 12.50 }', data: '12.50', meta: '{}' },
  { raw: '{"data":"é ✓","node":"ñ"}', data: '"é ✓"', node: '"ñ"' },
];

function generated(i: number): Rec {
  const data = `{"i":${i},"pad":"${'x'.repeat(i % 300)}"}`;
  const meta = i % 3 === 0 ? undefined : i % 3 === 1 ? '{}' : `{"m":${i},"s":"v${i}"}`;
  const tag = i % 4 === 0 ? `"tag${i % 7}"` : undefined;
  const node = i % 5 === 0 ? `"node${i % 3}"` : undefined;
  const raw = `{"data":${data}${meta ? `,"meta":${meta}` : ''}${tag ? `,"tag":${tag}` : ''}${node ? `,"node":${node}` : ''}}`;
  return { raw, data, meta, tag, node };
}

interface Setup {
  guarantee: 'at_least_once' | 'exactly_once';
  preserveNode: boolean;
  preserveTag: boolean;
}

/** The dest's record as the read renders it (`$ts` zeroed), from the record as the source stores it. */
function expected(r: Rec, seq: number, srcSeq: number, s: Setup, stampHead: string): string {
  let meta = r.meta;
  if (s.guarantee === 'exactly_once') {
    const stamp = `${stampHead}${srcSeq}"`;
    meta = meta && meta.length > 2 ? `${meta.slice(0, -1)},${stamp}}` : `{${stamp}}`;
  }
  const node = s.preserveNode && r.node ? `,"$node":${r.node}` : '';
  const tag = s.preserveTag && r.tag ? `,"$tag":${r.tag}` : '';
  return `{"$seq":${seq},"$ts":0${node}${tag},"data":${r.data}${meta ? `,"meta":${meta}` : ''}}`;
}

/** Every record of a topic as the diff renders it, `$ts` zeroed, following next_from_seq. */
async function readAll(topic: string): Promise<string[]> {
  const out: string[] = [];
  let from = 0;
  for (;;) {
    const r = await c.post(`/v0/topics/${topic}/diff`, { from_seq: from, limit: 1000, include_tags: true });
    const body = assertOk(r, 200);
    const m = /"records":\[(.*)\],"next_from_seq"/s.exec(r.text);
    assert.ok(m, r.text.slice(0, 200));
    const page = m[1]!.replace(/"\$ts":\d+/g, '"$ts":0');
    if (page.length > 0) out.push(...page.split(/,(?=\{"\$seq":)/));
    if (body.caught_up) return out;
    from = body.next_from_seq;
  }
}

const SETUPS: Setup[] = [
  { guarantee: 'at_least_once', preserveNode: true, preserveTag: true },
  { guarantee: 'exactly_once', preserveNode: false, preserveTag: true },
  { guarantee: 'exactly_once', preserveNode: true, preserveTag: false },
];

for (const same of [false, true]) {
  for (const setup of SETUPS) {
    const label = `${same ? 'same worker' : 'different workers'}, ${setup.guarantee}, preserve_node ${setup.preserveNode}, preserve_tag ${setup.preserveTag}`;
    test(`copies are the stored bytes, byte for byte (${label})`, async () => {
      const [s, d] = pair(same);
      const router = `${s}->${d}`;
      const body = { guarantee: setup.guarantee, preserve_node: setup.preserveNode, preserve_tag: setup.preserveTag };
      assertOk(await route(s, d, body), 201);
      const recs: Rec[] = [...SPECIAL];
      assertOk(await c.post(`/v0/topics/${s}`, `{"records":[ ${SPECIAL.map((r) => r.raw).join(' , ')} ]}`), 200);
      for (let b = 0; b < 3; b++) {
        const batch = Array.from({ length: 700 }, (_, i) => generated(b * 700 + i));
        recs.push(...batch);
        assertOk(await c.post(`/v0/topics/${s}`, `{"records":[${batch.map((r) => r.raw).join(',')}]}`), 200);
      }
      const src = await readAll(s);
      assert.equal(src.length, recs.length);
      // The source stores what was sent, compacted: the oracle's view of a stored record.
      const asStored: Setup = { guarantee: 'at_least_once', preserveNode: true, preserveTag: true };
      src.forEach((text, i) => assert.equal(text, expected(recs[i]!, i + 1, i + 1, asStored, ''), `source record ${i + 1}`));
      const srcId = await sourceIdOf(d, setup);
      const stampHead = `"_spool_router":${JSON.stringify(`${router}:${srcId}:`).slice(0, -1)}`;
      const got = await readAll(d);
      assert.equal(got.length, recs.length);
      got.forEach((text, i) => assert.equal(text, expected(recs[i]!, i + 1, i + 1, setup, stampHead), `dest record ${i + 1}`));
    });
  }
}

/** The source topic id inside the first copy's `_spool_router` (0 for at_least_once). */
async function sourceIdOf(dest: string, s: Setup): Promise<number> {
  if (s.guarantee !== 'exactly_once') return 0;
  const r = assertOk(await c.post(`/v0/topics/${dest}/diff`, { from_seq: 0, limit: 1 }), 200);
  return Number(String(r.records[0].meta._spool_router).split(':').at(-2));
}

test('a second hop copies the copies: data as stored, one `_spool_router` per exactly_once hop, in hop order', async () => {
  const [a, b] = pair(false);
  const cName = `${b}.c`;
  const ab = `${a}->${b}`;
  const bc = `${b}->${cName}`;
  assertOk(await route(a, b, { guarantee: 'exactly_once' }), 201);
  assertOk(await route(b, cName, { guarantee: 'exactly_once' }), 201);
  const batch = Array.from({ length: 1500 }, (_, i) => generated(i));
  assertOk(await c.post(`/v0/topics/${a}`, `{"records":[${batch.map((r) => r.raw).join(',')}]}`), 200);
  const got = await readAll(cName);
  assert.equal(got.length, batch.length);
  got.forEach((text, i) => {
    assert.ok(text.includes(`"data":${batch[i]!.data}`), `record ${i + 1}: ${text.slice(0, 120)}`);
    const stamps = [...text.matchAll(/"_spool_router":"([^"]*):\d+:(\d+)"/g)].map((m) => `${m[1]}@${m[2]}`);
    assert.deepEqual(stamps, [`${ab}@${i + 1}`, `${bc}@${i + 1}`], `record ${i + 1}`);
  });
});

// 10 records, cap 3: 10 and 5 are refused as record_too_large, 2 go in, the doubled batch of 4 is
// refused and halved again, and the next 2 would pass the cap: topic_full, nothing over it.
// Halved on record_too_large (larger than the cap) and on topic_full (larger than the room left),
// down to one record: the dest fills up to its cap, the rest waits.
test('a copy batch larger than a reject dest cap is halved until it fits, then the dest is full', async () => {
  const [s, d] = pair(false);
  const router = `${s}->${d}`;
  assertOk(await c.put(`/v0/topics/${d}`, { discard: 'reject', cap_records: 3 }), 201);
  assertOk(await route(s, d, { guarantee: 'exactly_once' }), 201);
  assertOk(await c.post(`/v0/topics/${s}`, { records: Array.from({ length: 10 }, (_, i) => ({ data: i + 1 })) }), 200);
  const deadline = Date.now() + 10_000;
  let st: any;
  while (Date.now() < deadline) {
    const m = await c.get('/v0/metrics', { accept: 'application/json' });
    st = m.body.router_stats.find((x: any) => x.router === router);
    if (st?.last_error === 'topic_full' && st.forwarded_total === 3) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(st, { router, forwarded_total: 3, lag: 7, last_error: 'topic_full' });
  const got = assertOk(await c.post(`/v0/topics/${d}/diff`, { from_seq: 0 }), 200).records;
  assert.deepEqual(
    got.map((r: any) => r.data),
    [1, 2, 3],
  );
});
