// Admission helpers (docs/API.md "Authentication"; docs/ARCHITECTURE.md "Admission"): the route table covers every route the server knows,
// the disable_backpressure byte search, and that a `?token=` value never reaches a log line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROUTE_RULES, ruleFor, setsDisableBackpressure } from '../../src/http/admission.js';
import { redactUrl } from '../../src/http/errorHandlers.js';

test('docs/API.md "Authentication" scopes per route, HEAD as GET, unknown routes have no rule', () => {
  assert.deepEqual(ruleFor('POST', '/v0/topics/:topic/claim')?.scopes, ['read', 'write']);
  assert.deepEqual(ruleFor('GET', '/v0/topics/:topic/work')?.scopes, ['read', 'write']);
  assert.deepEqual(ruleFor('HEAD', '/v0/topics/:topic')?.scopes, ['read']);
  assert.deepEqual(ruleFor('PUT', '/v0/routers/:router')?.scopes, ['admin']);
  assert.deepEqual(ruleFor('DELETE', '/v0/routers/:router')?.scopes, ['delete']);
  assert.deepEqual(ruleFor('GET', '/v0/routers')?.scopes, ['read']);
  assert.equal(ruleFor('GET', undefined), undefined);
  assert.equal(ruleFor('PATCH', '/v0/topics/:topic'), undefined);
  for (const [k, r] of Object.entries(ROUTE_RULES)) {
    if (r.kind === 'stream') assert.ok(k.startsWith('GET '), `${k}: only GETs stream`);
    if (r.gate) assert.equal(r.pathName, 'topic', `${k}: the gate orders by the path topic`);
  }
});

test('disable_backpressure: true found with JSON whitespace; false, strings and absence are not', () => {
  const t = (s: string) => setsDisableBackpressure(Buffer.from(s));
  assert.equal(t('{"records":[],"disable_backpressure":true}'), true);
  assert.equal(t('{"disable_backpressure" :\n\t true,"records":[]}'), true);
  assert.equal(t('{"disable_backpressure":false}'), false);
  assert.equal(t('{"disable_backpressure":"true"}'), false);
  assert.equal(t('{"records":[{"data":"disable_backpressure"}]}'), false);
  assert.equal(t('{"records":[{"data":{"disable_backpressure":false}}],"disable_backpressure":true}'), true);
  assert.equal(t(''), false);
});

test('redactUrl hides a ?token= value wherever it is in the query', () => {
  assert.equal(redactUrl('/v0/watch/w1?token=sekret'), '/v0/watch/w1?token=<redacted>');
  assert.equal(redactUrl('/v0/topics/q/work?node=n&token=sekret&max=2'), '/v0/topics/q/work?node=n&token=<redacted>&max=2');
  assert.equal(redactUrl('/v0/topics?TOKEN=x'), '/v0/topics?TOKEN=<redacted>');
  assert.equal(redactUrl('/v0/topics/a'), '/v0/topics/a');
});
