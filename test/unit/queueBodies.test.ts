// Claim and ack bodies parsed on the topic worker (src/protocol/queueBodies.ts): a good body makes
// the ClaimRequest or AckRequest the HTTP thread used to build (defaults and clamps included), a
// bad one the same 400 in the same order (JSON, object, schema, node, seqs, lease_ids), and the
// names of unknown fields are collected whether the body passes or not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { queueRequestOf } from '../../src/protocol/queueBodies.js';
import type { QueueBodyRequest } from '../../src/protocol/messages/rpc.js';

function parse(op: QueueBodyRequest['op'], text: string) {
  const unknown: string[] = [];
  const body = new Uint8Array(Buffer.from(` ${text}`)).subarray(1); // a view at an offset, as the channel gives
  return { r: queueRequestOf({ op, topic: 'q', body }, unknown), unknown };
}

test('a claim body: defaults, clamps and the request fields in order', () => {
  assert.deepEqual(parse('claimBody', '{"node":"w"}').r, { op: 'claim', topic: 'q', node: 'w', max: 1, leaseMs: null, waitMs: 0 });
  const { r } = parse('claimBody', '{"node":"ü","max":5000,"lease_ms":5,"wait_ms":99999}');
  assert.deepEqual(r, { op: 'claim', topic: 'q', node: 'ü', max: 1000, leaseMs: 100, waitMs: 30000 });
  assert.deepEqual(Object.keys(r), ['op', 'topic', 'node', 'max', 'leaseMs', 'waitMs']);
  assert.equal((parse('claimBody', '{"node":"w","max":0,"lease_ms":1e9}').r as { max: number }).max, 1);
  assert.equal((parse('claimBody', '{"node":"w","lease_ms":1e9}').r as { leaseMs: number }).leaseMs, 86_400_000);
});

test('an ack body: seqs and lease_ids as sent, null without lease_ids', () => {
  assert.deepEqual(parse('ackBody', '{"node":"w","seqs":[3,1]}').r, { op: 'ack', topic: 'q', node: 'w', seqs: [3, 1], leaseIds: null });
  const ids = ['lease_' + 'a'.repeat(24), ''];
  assert.deepEqual(parse('ackBody', JSON.stringify({ node: 'w', seqs: [1, 2], lease_ids: ids })).r, {
    op: 'ack',
    topic: 'q',
    node: 'w',
    seqs: [1, 2],
    leaseIds: ids,
  });
});

test('bad bodies get the 400 the HTTP thread gives, first failure wins', () => {
  const err = (op: QueueBodyRequest['op'], text: string) => {
    const { r } = parse(op, text);
    assert.ok('ok' in r && !r.ok, `${text} is refused`);
    return { code: r.code, message: r.message, ...(r.detail ? { detail: r.detail } : {}) };
  };
  const invalid = (message: string, field?: string) => ({ code: 'invalid_request', message, ...(field ? { detail: { field } } : {}) });
  assert.deepEqual(err('claimBody', 'nope'), invalid('body is not valid JSON'));
  assert.deepEqual(err('claimBody', '\ufeff{"node":"w"}'), invalid('body is not valid JSON'));
  assert.deepEqual(err('ackBody', '[1]'), invalid('body must be a JSON object'));
  assert.deepEqual(err('ackBody', 'null'), invalid('body must be a JSON object'));
  assert.deepEqual(err('claimBody', '{}'), invalid('node is required', 'node'));
  assert.deepEqual(err('claimBody', '{"node":"w","max":-1}'), invalid('invalid max: must be >= 0', 'max'));
  assert.deepEqual(err('claimBody', '{"node":"w","max":"3"}'), invalid('invalid max: must be integer', 'max'));
  assert.deepEqual(err('claimBody', '{"node":""}'), invalid('node is required', 'node'));
  assert.deepEqual(err('claimBody', `{"node":"${'n'.repeat(129)}"}`), invalid('node is longer than 128 bytes', 'node'));
  assert.deepEqual(err('claimBody', '{"node":"\\ud800"}'), invalid('node is not well-formed Unicode', 'node'));
  // The schema comes before node: a missing seqs wins over a bad node.
  assert.deepEqual(err('ackBody', '{"node":""}'), invalid('seqs is required', 'seqs'));
  assert.deepEqual(err('ackBody', '{"node":"","seqs":[]}'), invalid('node is required', 'node'));
  assert.deepEqual(err('ackBody', '{"node":"w","seqs":[]}'), invalid('seqs must name at least one seq', 'seqs'));
  assert.deepEqual(err('ackBody', '{"node":"w","seqs":[1.5]}'), invalid('invalid seqs: must be integer', 'seqs'));
  assert.deepEqual(err('ackBody', `{"node":"w","seqs":[${Array(1001).fill(1)}]}`), {
    code: 'batch_too_large',
    message: 'at most 1000 seqs per request',
    detail: { seqs: 1001, max: 1000 },
  });
  assert.deepEqual(err('ackBody', '{"node":"w","seqs":[1],"lease_ids":[]}'), invalid('lease_ids must have one entry per seq', 'lease_ids'));
  assert.deepEqual(
    err('ackBody', '{"node":"w","seqs":[1],"lease_ids":["lease_X"]}'),
    invalid('lease_ids entries are "lease_" and lowercase hex, or ""', 'lease_ids'),
  );
});

test('unknown fields are named, on good and bad bodies, per route', () => {
  assert.deepEqual(parse('claimBody', '{"node":"w","seqs":[1],"ttl":2}').unknown, ['seqs', 'ttl']);
  assert.deepEqual(parse('ackBody', '{"node":"w","seqs":[1],"max":2}').unknown, ['max']);
  const bad = parse('ackBody', '{"node":"w","foo":1}');
  assert.ok('ok' in bad.r);
  assert.deepEqual(bad.unknown, ['foo']);
  assert.deepEqual(parse('claimBody', '{"node":"w"}').unknown, []);
});

test('node: 128 bytes of UTF-8 at most, ASCII or not, well-formed', () => {
  const claimOf = (node: string) => parse('claimBody', JSON.stringify({ node })).r;
  const tooLong = { code: 'invalid_request', message: 'node is longer than 128 bytes', detail: { field: 'node' } };
  const refusal = (r: ReturnType<typeof claimOf>) => ('ok' in r ? { code: r.code, message: r.message, detail: r.detail } : r);
  assert.equal((claimOf('n'.repeat(128)) as { node: string }).node.length, 128);
  assert.deepEqual(refusal(claimOf('n'.repeat(129))), tooLong);
  assert.equal((claimOf('é'.repeat(64)) as { node: string }).node, 'é'.repeat(64), '128 bytes in 64 characters');
  assert.deepEqual(refusal(claimOf('é'.repeat(65))), tooLong, '130 bytes in 65 characters');
  assert.deepEqual(refusal(claimOf('a'.repeat(100) + 'é'.repeat(15))), tooLong, '130 bytes in 115 characters');
  assert.deepEqual(refusal(claimOf('w\ud800')), {
    code: 'invalid_request',
    message: 'node is not well-formed Unicode',
    detail: { field: 'node' },
  });
  assert.equal((claimOf('\u{1f600}') as { node: string }).node, '\u{1f600}', 'a surrogate pair is well-formed');
});
