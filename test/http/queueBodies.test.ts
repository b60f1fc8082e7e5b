// Claim and ack bodies over HTTP, parsed on the topic worker (docs/API.md "Queues", "Which error
// wins"; docs/ARCHITECTURE.md "Thread crossings"): a bad body gets the same 400 as before the
// HTTP thread stopped parsing it, and the same 400 a nack (still parsed on the HTTP thread) gets
// for the same seqs body; 415 and a bad topic name still come first, the body's 400 before 404
// and 409; unknown fields give the Warning header on successes and errors alike; a claim and its
// ack by lease_ids work end to end with several workers; a gzipped body and a body too big for the
// batch's shared buffer (it crosses whole) are parsed alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { assertOk, namer } from './util.js';
import { appendJobs, mkQueue } from './queueUtil.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('qb');
const { c } = httpSuite({ SERVICE_WORKERS: '2' });

/** Status, Warning header and error body (without `performance`) of a raw POST. */
async function refusal(path: string, body: string, headers: Record<string, string> = {}) {
  const r = await c.post(path, body, headers);
  return { status: r.status, warning: r.headers.get('warning'), error: r.body?.error };
}

const invalid = (message: string, field?: string) => ({ code: 'invalid_request', message, ...(field ? { detail: { field } } : {}) });

test('bad claim bodies: each 400 as documented, in the documented order', async () => {
  const q = name('claim');
  await mkQueue(c, q);
  const cases: [string, object][] = [
    ['', invalid('request body is required')],
    ['nope', invalid('body is not valid JSON')],
    ['{"node":"w"} x', invalid('body is not valid JSON')],
    ['[]', invalid('body must be a JSON object')],
    ['"x"', invalid('body must be a JSON object')],
    ['{}', invalid('node is required', 'node')],
    ['{"node":1}', invalid('invalid node: must be string', 'node')],
    ['{"node":"w","max":1.5}', invalid('invalid max: must be integer', 'max')],
    ['{"node":"w","lease_ms":1e300}', invalid('invalid lease_ms: must be <= 9007199254740991', 'lease_ms')],
    ['{"node":"w","wait_ms":true}', invalid('invalid wait_ms: must be integer', 'wait_ms')],
    ['{"node":""}', invalid('node is required', 'node')],
    [`{"node":"${'n'.repeat(129)}"}`, invalid('node is longer than 128 bytes', 'node')],
    ['{"node":"\\ud800"}', invalid('node is not well-formed Unicode', 'node')],
  ];
  for (const [body, error] of cases) {
    const r = await refusal(`/v0/topics/${q}/claim`, body);
    assert.deepEqual(r, { status: 400, warning: null, error }, `claim ${body.slice(0, 40)}`);
  }
});

test('bad ack bodies: the same 400 as a nack of the same seqs body', async () => {
  const q = name('ack');
  await mkQueue(c, q);
  const bodies = [
    'nope',
    '[]',
    'null',
    '{}',
    '{"node":1}',
    '{"seqs":[1]}',
    '{"node":"","seqs":[1]}',
    '{"node":"w","seqs":[]}',
    '{"node":"w","seqs":[1.5]}',
    '{"node":"w","seqs":"1"}',
    '{"node":"w","seqs":[-1]}',
    '{"node":"w","seqs":[1],"lease_ids":[]}',
    '{"node":"w","seqs":[1],"lease_ids":["x"]}',
    '{"node":"w","seqs":[1],"lease_ids":[1]}',
    `{"node":"w","seqs":[${Array(1001).fill(1)}]}`,
    '{"node":"w","foo":1,"bar":[2]}',
  ];
  for (const body of bodies) {
    const acked = await refusal(`/v0/topics/${q}/ack`, body);
    const nacked = await refusal(`/v0/topics/${q}/nack`, body);
    assert.ok(acked.status === 400 && acked.error, `ack ${body.slice(0, 40)}: ${JSON.stringify(acked)}`);
    assert.deepEqual(acked, nacked, `ack and nack of ${body.slice(0, 40)}`);
  }
  assert.deepEqual(await refusal(`/v0/topics/${q}/ack`, `{"node":"w","seqs":[${Array(1001).fill(1)}]}`), {
    status: 400,
    warning: null,
    error: { code: 'batch_too_large', message: 'at most 1000 seqs per request', detail: { seqs: 1001, max: 1000 } },
  });
});

test('which error wins: 415, then the topic name, then the body, then 404 and 409', async () => {
  const plain = name('plain');
  assertOk(await c.put(`/v0/topics/${plain}`, {}), 201);
  for (const op of ['claim', 'ack']) {
    const good = op === 'claim' ? '{"node":"w"}' : '{"node":"w","seqs":[1]}';
    const media = await refusal(`/v0/topics/bad..name!/${op}`, 'nope', { 'content-type': 'text/plain' });
    assert.deepEqual([media.status, media.error.code], [415, 'unsupported_media_type'], `${op}: 415 first`);
    const badName = await refusal(`/v0/topics/bad..name!/${op}`, 'nope');
    assert.deepEqual([badName.status, badName.error.message], [400, 'invalid topic name'], `${op}: the name before the body`);
    const missing = name('missing');
    assert.deepEqual((await refusal(`/v0/topics/${missing}/${op}`, '{}')).error.code, 'invalid_request', `${op}: the body before 404`);
    assert.deepEqual((await refusal(`/v0/topics/${plain}/${op}`, '{}')).error.code, 'invalid_request', `${op}: the body before 409`);
    assert.equal((await refusal(`/v0/topics/${missing}/${op}`, good)).status, 404, `${op}: a good body on no topic`);
    assert.deepEqual((await refusal(`/v0/topics/${plain}/${op}`, good)).error.code, 'not_a_queue', `${op}: a good body on a plain topic`);
  }
});

test('unknown fields: a Warning on the 200, the 400 and the 404', async () => {
  const q = name('warn');
  await mkQueue(c, q);
  await appendJobs(c, q, 1);
  const claimed = await c.post(`/v0/topics/${q}/claim`, { node: 'w', max: 1, ttl: 5 });
  assertOk(claimed, 200, 'claim with an unknown field');
  assert.equal(claimed.headers.get('warning'), '299 - "unknown field \\"ttl\\""');
  const job = claimed.body.claimed[0];
  const acked = await c.post(`/v0/topics/${q}/ack`, { node: 'w', seqs: [job.$seq], lease_ids: [job.lease_id], max: 1 });
  assert.equal(assertOk(acked, 200, 'ack with an unknown field').acked, 1);
  assert.equal(acked.headers.get('warning'), '299 - "unknown field \\"max\\""');
  assert.deepEqual(await refusal(`/v0/topics/${q}/ack`, '{"node":"w","ttl":1}'), {
    status: 400,
    warning: '299 - "unknown field \\"ttl\\""',
    error: invalid('seqs is required', 'seqs'),
  });
  const missing = await refusal(`/v0/topics/${name('missing')}/claim`, '{"node":"w","x":1}');
  assert.deepEqual([missing.status, missing.warning], [404, '299 - "unknown field \\"x\\""']);
});

test('claim and ack by lease_ids through the worker parse, many requests in flight', async () => {
  const q = name('flow');
  await mkQueue(c, q, { durability: 'disk' });
  await appendJobs(c, q, 200);
  let acked = 0;
  await Promise.all(
    Array.from({ length: 8 }, async (_, w) => {
      for (;;) {
        const r = assertOk(await c.post(`/v0/topics/${q}/claim`, { node: `w${w}`, max: 7 }), 200, 'claim');
        if (r.claimed.length === 0) return;
        const seqs = r.claimed.map((j: { $seq: number }) => j.$seq);
        const leaseIds = r.claimed.map((j: { lease_id: string }) => j.lease_id);
        const a = assertOk(await c.post(`/v0/topics/${q}/ack`, { node: `w${w}`, seqs, lease_ids: leaseIds }), 200, 'ack');
        assert.deepEqual(a.skipped, []);
        acked += a.acked;
      }
    }),
  );
  assert.equal(acked, 200);
  const s = assertOk(await c.get(`/v0/topics/${q}`), 200);
  assert.deepEqual([s.queue.ready, s.queue.in_flight], [0, 0]);
});

test('a gzipped ack body, and one too big for the shared body buffer, are parsed alike', async () => {
  const q = name('big');
  await mkQueue(c, q);
  await appendJobs(c, q, 3);
  const r = assertOk(await c.post(`/v0/topics/${q}/claim`, { node: 'w', max: 3 }), 200, 'claim');
  const [j1, j2, j3] = r.claimed as { $seq: number; lease_id: string }[];
  const zipped = gzipSync(Buffer.from(JSON.stringify({ node: 'w', seqs: [j1!.$seq], lease_ids: [j1!.lease_id] })));
  const z = await c.post(`/v0/topics/${q}/ack`, new Uint8Array(zipped), {
    'content-type': 'application/json',
    'content-encoding': 'gzip',
  });
  assert.equal(assertOk(z, 200, 'gzipped ack').acked, 1);
  // 1000 seqs with their lease ids: ~38 KB, over the 16 KiB a batch's shared buffer takes.
  const seqs = [j2!.$seq, j3!.$seq, ...Array.from({ length: 998 }, (_, i) => 1_000_000 + i)];
  const leaseIds = [j2!.lease_id, j3!.lease_id, ...Array.from({ length: 998 }, () => 'lease_' + 'f'.repeat(24))];
  const body = JSON.stringify({ node: 'w', seqs, lease_ids: leaseIds });
  assert.ok(body.length > 16 * 1024);
  const big = assertOk(await c.post(`/v0/topics/${q}/ack`, body), 200, 'big ack');
  assert.deepEqual([big.acked, big.skipped.length, big.in_flight], [2, 998, 0]);
  const bad = await refusal(`/v0/topics/${q}/ack`, body.replace('"node":"w"', '"node":""'));
  assert.deepEqual(bad, { status: 400, warning: null, error: invalid('node is required', 'node') }, 'a big bad body');
});
