// The errors of record delete (docs/API.md "Record delete") on an in-process server through
// inject(): neither before_seq nor match, a malformed match tuple or a bad before_seq is 400 and
// deletes nothing; an unknown topic is 404 and is not created, though a bad body there is 400
// first; 415 without a JSON Content-Type, 400 for an empty or non-object body; a bad topic name
// is 400 with detail.topic. Deletes as such: test/http/recordDelete.test.ts.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { injectSuite } from '../support/injectSuite.js';
import { assertError, assertInvalid, assertOk, namer, JSON_CT } from '../http/util.js';
import { configuredTopicSeeder, tagged } from '../support/seed.js';

const { srv, c } = injectSuite();
const name = namer('rdel');

const seeded = configuredTopicSeeder(c, name);

async function state(t: string): Promise<any> {
  return assertOk(await c.get(`/v0/topics/${t}?touch=false`), 200);
}

describe('errors', () => {
  test('neither before_seq nor match: 400 invalid_request', async () => {
    const t = await seeded(tagged(['a']));
    assertInvalid(await c.post(`/v0/topics/${t}/delete`, {}), undefined, '{}');
    assertInvalid(await c.post(`/v0/topics/${t}/delete`, { other: 1 }), undefined, 'unknown fields only');
    assert.equal((await state(t)).count, 1, 'nothing deleted');
  });

  test('malformed match tuples: 400 invalid_request', async () => {
    const t = await seeded(tagged(['a', 'ab', 'p*q']));
    const bad: unknown[] = [
      ['tag', 'Eq'],
      ['tag', 'Eq', 'a', 'b'],
      [],
      ['tag'],
      ['tag', 'Eq', 5],
      ['tag', 'Eq', null],
      ['tag', 'Glob', ['a*']],
      ['tag', 5, 'a'],
      [5, 'Eq', 'a'],
      ['name', 'Eq', 'a'],
      ['tag', 'Like', 'a'],
      ['tag', 'eq', 'a'],
      ['tag', 'glob', 'a*'],
      ['tag', 'Prefix', 'a'],
      ['tag', 'Regex', 'a.*'],
      ['tag', 'Glob', 'a'],
      ['tag', 'Glob', ''],
      ['tag', 'Glob', 'a*b'],
      ['tag', 'Glob', '*a'],
      ['tag', 'Glob', 'p*q*'],
      ['tag', 'Glob', 'a**'],
      ['tag', 'Glob', '**'],
      5,
      true,
      {},
      { tag: 'a' },
      null,
    ];
    for (const m of bad) {
      assertInvalid(await c.post(`/v0/topics/${t}/delete`, { match: m }), undefined, `match ${JSON.stringify(m)}`);
      assertInvalid(
        await c.post(`/v0/topics/${t}/delete`, { before_seq: 10, match: m }),
        undefined,
        `before_seq + match ${JSON.stringify(m)}`,
      );
    }
    assert.equal((await state(t)).count, 3, 'nothing deleted by any malformed request');
  });

  test('bad before_seq values: 400 invalid_request', async () => {
    const t = await seeded(tagged(['a']));
    for (const b of [-1, 1.5, '3', null, true, [1], 2 ** 53]) {
      assertInvalid(await c.post(`/v0/topics/${t}/delete`, { before_seq: b }), undefined, `before_seq ${JSON.stringify(b)}`);
    }
    assert.equal((await state(t)).count, 1);
  });

  test('unknown topic: 404 topic_not_found, and the topic is not created', async () => {
    const t = name('absent');
    for (const body of [{ before_seq: 5 }, { match: 'a' }, { match: ['tag', 'Glob', 'a*'], before_seq: 2 }]) {
      const detail = assertError(await c.post(`/v0/topics/${t}/delete`, body), 404, 'topic_not_found', JSON.stringify(body));
      assert.deepEqual(detail, { topic: t });
    }
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found', 'never auto-creates');
  });

  test('a bad body on an unknown topic is 400 (the 400 family wins over 404)', async () => {
    const t = name('absent400');
    assertInvalid(await c.post(`/v0/topics/${t}/delete`, {}));
    assertInvalid(await c.post(`/v0/topics/${t}/delete`, { match: ['tag', 'Glob', 'x'] }));
  });

  test('body and media type rules: 415 without JSON content type, 400 for empty or non-object bodies', async () => {
    const t = await seeded(tagged(['a']));
    const noCt = await srv.raw('POST', `/v0/topics/${t}/delete`, { body: '{"before_seq":5}' });
    assertError(noCt, 415, 'unsupported_media_type');
    const textCt = await srv.raw('POST', `/v0/topics/${t}/delete`, { headers: { 'content-type': 'text/plain' }, body: '{"before_seq":5}' });
    assertError(textCt, 415, 'unsupported_media_type');
    assertInvalid(await srv.raw('POST', `/v0/topics/${t}/delete`, { headers: JSON_CT, body: '' }), undefined, 'empty body');
    assertInvalid(await srv.raw('POST', `/v0/topics/${t}/delete`, { headers: JSON_CT, body: '[1]' }), undefined, 'array body');
    assertInvalid(await srv.raw('POST', `/v0/topics/${t}/delete`, { headers: JSON_CT, body: '{"before_seq":' }), undefined, 'bad JSON');
    assert.equal((await state(t)).count, 1);
  });

  test('a bad topic name is 400 with detail.topic', async () => {
    const detail = assertInvalid(await c.post(`/v0/topics/${encodeURIComponent('-bad')}/delete`, { before_seq: 1 }));
    assert.deepEqual(detail, { topic: '-bad' });
  });
});
