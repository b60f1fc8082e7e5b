// The direct send of JSON replies (src/http/rawReply.ts) against Fastify's own send path,
// through inject(): the same status, body and headers (the reply's own, the request id, the
// Warning for ignored fields, Connection: close while draining); replies from the compress
// threshold on left to Fastify, which gzips them for a client that accepts it, and sent directly
// to a client that accepts no encoding.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import compress from '@fastify/compress';
import { COMPRESS_THRESHOLD_BYTES, sendDirectJson } from '../../src/http/rawReply.js';
import { setCommonHeaders, watchDraining } from '../../src/http/responseHeaders.js';

let sentDirect: boolean[] = [];

async function app() {
  const a = Fastify({ genReqId: (req) => String(req.headers['x-request-id'] ?? 'none') });
  await a.register(compress, { global: true, encodings: ['gzip'], threshold: COMPRESS_THRESHOLD_BYTES });
  a.addHook('onSend', (req, reply, payload, done) => {
    setCommonHeaders(req, (k, v) => reply.header(k, v));
    done(null, payload);
  });
  const answer = (direct: boolean) => async (req: import('fastify').FastifyRequest, reply: import('fastify').FastifyReply) => {
    const size = Number((req.query as { size?: string }).size ?? 10);
    req.unknownFields = ['extra'];
    reply.header('retry-after', '1');
    const body = Buffer.from(JSON.stringify({ pad: 'x'.repeat(size) }));
    const sent = direct && sendDirectJson(req, reply, 201, body);
    sentDirect.push(sent);
    if (sent) return reply;
    return reply.code(201).header('content-type', 'application/json; charset=utf-8').send(body);
  };
  a.get('/direct', answer(true));
  a.get('/fastify', answer(false));
  return a;
}

const same = (h: Record<string, unknown>) => {
  const { date: _d, ...rest } = h;
  return rest;
};

test('a small reply sent directly has the status, body and headers Fastify would send', async () => {
  const a = await app();
  try {
    for (const draining of [false, true]) {
      watchDraining(() => draining);
      const d = await a.inject({ url: '/direct', headers: { 'x-request-id': 'r-1', 'accept-encoding': 'gzip' } });
      const f = await a.inject({ url: '/fastify', headers: { 'x-request-id': 'r-1', 'accept-encoding': 'gzip' } });
      assert.equal(d.statusCode, 201);
      assert.equal(d.body, f.body);
      assert.deepEqual(same(d.headers), same(f.headers), `draining ${draining}`);
      assert.equal(d.headers['x-request-id'], 'r-1');
      assert.match(String(d.headers.warning), /extra/);
      assert.equal(d.headers['retry-after'], '1', "the reply's own headers stay");
      assert.equal(d.headers.connection, draining ? 'close' : 'keep-alive');
    }
  } finally {
    watchDraining(() => false);
    await a.close();
  }
});

test('a reply from the compress threshold on is left to Fastify and gzipped for a client that accepts it', async () => {
  const a = await app();
  try {
    const big = await a.inject({ url: `/direct?size=${COMPRESS_THRESHOLD_BYTES}`, headers: { 'accept-encoding': 'gzip' } });
    assert.equal(big.headers['content-encoding'], 'gzip');
    const small = await a.inject({ url: '/direct?size=10', headers: { 'accept-encoding': 'gzip' } });
    assert.equal(small.headers['content-encoding'], undefined);
  } finally {
    await a.close();
  }
});

test('a big reply to a client that accepts no encoding is sent directly, as Fastify would send it', async () => {
  const a = await app();
  try {
    const size = 4 * COMPRESS_THRESHOLD_BYTES;
    for (const headers of [{ 'x-request-id': 'r-2' }, { 'x-request-id': 'r-2', 'accept-encoding': 'gzip', 'x-no-compression': '1' }]) {
      sentDirect = [];
      const d = await a.inject({ url: `/direct?size=${size}`, headers });
      const f = await a.inject({ url: `/fastify?size=${size}`, headers });
      assert.deepEqual(sentDirect, [true, false], JSON.stringify(headers));
      assert.equal(d.statusCode, 201);
      assert.equal(d.body, f.body);
      assert.equal(d.headers['content-encoding'], undefined);
      assert.deepEqual(same(d.headers), same(f.headers));
    }
    sentDirect = [];
    await a.inject({ url: `/direct?size=${size}`, headers: { 'accept-encoding': 'gzip' } });
    assert.deepEqual(sentDirect, [false], 'a client that accepts gzip gets it from Fastify');
  } finally {
    await a.close();
  }
});
