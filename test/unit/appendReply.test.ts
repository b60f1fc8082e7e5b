// The append reply written straight into bytes (src/actors/topic/appendReply.ts): the same text as
// the template it replaced, for small and large seqs, many seqs, non-ASCII topic names, a change
// of topic between replies, and values the byte writer hands to the template.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendReplyBytes, replyText } from '../../src/actors/topic/appendReply.js';

const cases: [string, number, number, number, boolean, boolean, boolean][] = [
  ['d', 1, 1, 1, true, false, false],
  ['d', 9, 2, 10, true, true, false],
  ['orders', 99, 1, 120, false, false, true],
  ['orders', 2 ** 31 - 1, 3, 2 ** 31 + 5, true, false, false],
  ['big', 2 ** 53 - 10, 5, 2 ** 53 - 2, true, false, true],
  ['tópico-ü', 1_000_000, 12, 1_000_011, true, true, false],
  ['q"x', 7, 1, 7, true, false, false],
  ['d', 123_456_789, 1, 987_654_321, true, false, false],
];

test('appendReplyBytes writes the same text as the template', () => {
  for (const c of cases) {
    const bytes = appendReplyBytes(...c);
    const want = replyText(...c);
    assert.equal(bytes.toString('utf8'), want, `case ${JSON.stringify(c)}`);
    assert.equal(bytes.length, Buffer.byteLength(want), 'no slack at the end');
  }
});

test('the reply parses to the documented fields once main closes it', () => {
  const r = JSON.parse(`${appendReplyBytes('tópico', 41, 3, 43, true, true, false).toString('utf8')}}`) as Record<string, unknown>;
  assert.deepEqual(r, {
    topic: 'tópico',
    first_seq: 41,
    last_seq: 43,
    seqs: [41, 42, 43],
    head_seq: 43,
    count: 3,
    created: true,
    deduped: false,
  });
});

test('values the byte writer does not take go through the template', () => {
  assert.equal(appendReplyBytes('d', 0, 0, 0, true, false, false).toString('utf8'), replyText('d', 0, 0, 0, true, false, false));
  assert.match(replyText('d', 0, 0, 0, true, false, false), /"last_seq":-1,"seqs":\[\]/);
});
