// API keys and the allowlist rule (docs/API.md "Authentication"; README.md "Settings"): entry syntax, scope tokens, the startup
// error for an unknown scope (naming the token, never the secret), bearer parsing, and that a
// token is compared with every digest, with no early exit; what a 403 says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { KeyRing, KeySyntaxError, bearerToken } from '../../src/auth/keys.js';
import { allowsName, firstRefused, listPrefixes, nameRefusal, scopeRefusal } from '../../src/auth/allowlist.js';
import { KeySlots } from '../../src/auth/keySlots.js';

const EXAMPLE_KEYS = 'ops-7Qk2, dash-9f1c:read:tenant42:|shared., ingest-x1:write:tenant42:, jobs-w3:rw, adm-44::tenant42:';

test('key entry syntax example: scopes and allowlists per entry', () => {
  const ring = KeyRing.parse(EXAMPLE_KEYS);
  assert.equal(ring.keys.length, 5);
  const get = (s: string) => ring.authenticate(s)!;
  assert.deepEqual([...get('ops-7Qk2').scopes].sort(), ['admin', 'delete', 'read', 'write']);
  assert.equal(get('ops-7Qk2').prefixes, null);
  assert.deepEqual([...get('dash-9f1c').scopes], ['read']);
  assert.deepEqual(get('dash-9f1c').prefixes, ['tenant42:', 'shared.']);
  assert.deepEqual([...get('ingest-x1').scopes], ['write']);
  assert.deepEqual(get('ingest-x1').prefixes, ['tenant42:']);
  assert.deepEqual([...get('jobs-w3').scopes].sort(), ['read', 'write']);
  assert.deepEqual([...get('adm-44').scopes].sort(), ['admin', 'delete', 'read', 'write']);
  assert.deepEqual(get('adm-44').prefixes, ['tenant42:']);
  assert.equal(ring.authenticate('ops-7Qk'), undefined);
  assert.equal(ring.authenticate(''), undefined);
  assert.equal(ring.authenticate(undefined), undefined);
  assert.equal(get('jobs-w3').label, 'key#4');
});

test('scope tokens: short forms, case, + separated, empty tokens skipped', () => {
  const ring = KeyRing.parse('a1: R + W ++ Del, a2:A, a3:d, a4: , ,  :read, a5:rw+admin');
  assert.equal(ring.keys.length, 5, 'an entry with an empty secret is skipped');
  assert.deepEqual([...ring.authenticate('a1')!.scopes].sort(), ['delete', 'read', 'write']);
  assert.deepEqual([...ring.authenticate('a2')!.scopes], ['admin']);
  assert.deepEqual([...ring.authenticate('a3')!.scopes], ['delete']);
  assert.equal(ring.authenticate('a4')!.scopes.size, 4, 'an empty scopes field means all four');
  assert.equal(ring.authenticate('a5')!.scopes.size, 3);
  assert.equal(KeyRing.parse('').enabled, false);
  assert.equal(KeyRing.parse(' , ').enabled, false);
});

test('prefixes keep further colons and drop empty items', () => {
  const k = KeyRing.parse('s1:r:a:b:| |c.').authenticate('s1')!;
  assert.deepEqual(k.prefixes, ['a:b:', 'c.']);
  assert.equal(KeyRing.parse('s2:r: | ').authenticate('s2')!.prefixes, null);
});

test('an unknown scope is a startup error naming the token, never the secret', () => {
  assert.throws(
    () => KeyRing.parse('k-secret-1:reed'),
    (e: Error) => e instanceof KeySyntaxError && /unknown scope "reed"/.test(e.message) && !e.message.includes('k-secret-1'),
  );
  assert.throws(() => KeyRing.parse('ok, other-secret:read+bogus'), /unknown scope "bogus"/);
});

test('a secret given twice is a startup error naming the entries, never the secret', () => {
  assert.throws(
    () => KeyRing.parse('k-secret-1:read, other:admin , k-secret-1:write'),
    (e: Error) =>
      e instanceof KeySyntaxError && /entries 1 and 3 have the same secret/.test(e.message) && !e.message.includes('k-secret-1'),
  );
  assert.equal(KeyRing.parse('k-secret-1:read+write,k-secret-2:read').keys.length, 2);
});

test('authenticate compares the token with every digest, whichever matches (no early exit)', () => {
  const ring = KeyRing.parse('first, second, third, fourth, fifth');
  for (const token of ['first', 'third', 'fifth', 'nobody']) {
    let calls = 0;
    const spy = (a: Buffer, b: Buffer) => {
      calls++;
      assert.equal(a.length, 32);
      assert.equal(b.length, 32);
      return crypto.timingSafeEqual(a, b);
    };
    const k = ring.authenticate(token, spy);
    assert.equal(calls, 5, `${token}: every digest compared`);
    assert.equal(k?.label, token === 'nobody' ? undefined : `key#${['first', 'second', 'third', 'fourth', 'fifth'].indexOf(token) + 1}`);
  }
});

test('the ring holds digests only, never a secret', () => {
  const ring = KeyRing.parse('plain-secret-xyz:rw:p.');
  const seen = JSON.stringify(ring, (_k, v) => (v instanceof Set ? [...v] : v));
  assert.ok(!seen.includes('plain-secret-xyz'));
  const digests = (ring as unknown as { digests: Buffer[] }).digests;
  assert.ok(digests[0]!.equals(crypto.createHash('sha256').update('plain-secret-xyz').digest()));
});

test('bearer parsing: scheme case-insensitive, token trimmed, empty never matches', () => {
  assert.equal(bearerToken('Bearer abc'), 'abc');
  assert.equal(bearerToken('bearer   abc  '), 'abc');
  assert.equal(bearerToken('BEARER abc'), 'abc');
  assert.equal(bearerToken('Bearer '), undefined);
  assert.equal(bearerToken('Bearer'), undefined);
  assert.equal(bearerToken('Basic abc'), undefined);
  assert.equal(bearerToken(undefined), undefined);
});

test('allowlist examples', () => {
  const p = ['tenant42:'];
  assert.equal(allowsName(p, 'tenant42:jobs'), true);
  assert.equal(allowsName(p, 'tenant42:'), true);
  assert.equal(allowsName(p, 'tenant4'), false);
  assert.equal(allowsName(p, 'x.tenant42:jobs'), false);
  assert.equal(allowsName(p, 'Tenant42:jobs'), false);
  assert.equal(allowsName(['a*'], 'abc'), false, '* has no special meaning');
  assert.equal(allowsName(null, 'anything'), true);
  assert.equal(firstRefused(p, ['tenant42:a', 'b', 'c']), 'b');
  assert.equal(firstRefused(null, ['b']), undefined);
});

test('listPrefixes: the prefix queries that list exactly the allowed names under a prefix', () => {
  assert.deepEqual(listPrefixes(null, 'x'), ['x']);
  assert.deepEqual(listPrefixes(['t42.', 'shared.'], '').sort(), ['shared.', 't42.']);
  assert.deepEqual(listPrefixes(['t42.', 'shared.'], 't42.a'), ['t42.a']);
  assert.deepEqual(listPrefixes(['t42.', 'shared.'], 't4'), ['t42.']);
  assert.deepEqual(listPrefixes(['t42.', 'shared.'], 'zz'), []);
  assert.deepEqual(listPrefixes(['a', 'ab', 'b'], ''), ['a', 'b'], 'a query inside another is dropped');
  // Model check: a name is listed exactly when it starts with the prefix and is allowed.
  const names = ['a', 'ab', 'abc', 'b', 'ba', 'c', 't42.x', 't4', 'shared', 'shared.z'];
  for (const allow of [['a'], ['ab', 'b'], ['t42.', 'shared.'], ['a', 'abc']]) {
    for (const prefix of ['', 'a', 'ab', 'abcd', 'b', 's', 't']) {
      const qs = listPrefixes(allow, prefix);
      const listed = names.filter((n) => qs.some((q) => n.startsWith(q)));
      const want = names.filter((n) => n.startsWith(prefix) && allowsName(allow, n));
      assert.deepEqual(listed, want, `${allow} ${prefix}`);
    }
  }
});

test('KeySlots: a cap per key, each release counted once', () => {
  const s = new KeySlots(2);
  assert.equal(s.acquire(1), true);
  const r1 = s.releaser(1);
  assert.equal(s.acquire(1), true);
  assert.equal(s.acquire(1), false, 'at the cap');
  assert.equal(s.acquire(2), true, 'another key has its own count');
  r1();
  r1();
  assert.equal(s.count(1), 1);
  assert.equal(s.acquire(1), true);
  assert.equal(new KeySlots(0).acquire(1), true, '0 = no cap');
});

test('a 403 names the missing scopes and the prefixes a name may start with', () => {
  assert.equal(scopeRefusal(['read', 'write'], new Set(['read', 'write'])), undefined);
  assert.deepEqual(scopeRefusal(['read', 'write'], new Set(['delete'])), {
    message: 'this key lacks the read and write scopes (the route needs read and write)',
    detail: { required: ['read', 'write'], missing: ['read', 'write'] },
  });
  assert.equal(
    scopeRefusal(['read', 'write'], new Set(['read']))!.message,
    'this key lacks the write scope (the route needs read and write)',
  );
  assert.deepEqual(nameRefusal('router', 'x.r', ['a.']), {
    message: 'this key may not name router "x.r": its names must start with "a."',
    detail: { router: 'x.r', allowed_prefixes: ['a.'] },
  });
  assert.equal(
    nameRefusal('topic', 'x', ['a.', 'b.', 'c:']).message,
    'this key may not name topic "x": its names must start with "a.", "b." or "c:"',
  );
});
