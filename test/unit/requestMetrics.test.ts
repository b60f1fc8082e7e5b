// The answered-requests counter (src/http/requestMetrics.ts): counted in nested cells by route,
// method and status, each series exact from its first request on, copied into prom-client at scrape.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import client from 'prom-client';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RequestMetrics } from '../../src/http/requestMetrics.js';

function answered(m: RequestMetrics, url: string | undefined, method: string, statusCode: number): void {
  const req = { routeOptions: url === undefined ? undefined : { url }, method } as unknown as FastifyRequest;
  m.observe(req, { statusCode } as FastifyReply);
}

test('each route, method and status counts exactly, from the first request on', async () => {
  const registry = new client.Registry();
  const m = new RequestMetrics(registry);
  for (let i = 0; i < 3; i++) answered(m, '/v0/topics/:topic', 'POST', 200);
  answered(m, '/v0/topics/:topic', 'POST', 201);
  answered(m, '/v0/topics/:topic', 'GET', 200);
  answered(m, '/v0/health', 'GET', 200);
  answered(m, undefined, 'GET', 404);
  const got = (await registry.getSingleMetric('spool_http_requests_total')!.get()).values.map((v) => [
    v.labels.route,
    v.labels.method,
    v.labels.code,
    v.value,
  ]);
  assert.deepEqual(
    got.sort((a, b) => String(a).localeCompare(String(b))),
    [
      ['/v0/health', 'GET', '200', 1],
      ['/v0/topics/:topic', 'GET', '200', 1],
      ['/v0/topics/:topic', 'POST', '200', 3],
      ['/v0/topics/:topic', 'POST', '201', 1],
      ['unmatched', 'GET', '404', 1],
    ],
  );
  assert.equal(m.totals.requests, 7);
  assert.equal(m.totals.client_errors, 1);
});
