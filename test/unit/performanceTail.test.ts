// The performance block of a worker's reply (src/http/performanceTail.ts) is written as bytes
// for speed; it must be exactly what JSON.stringify makes of perfBlock, key order included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyRequest } from 'fastify';
import { perfBlock } from '../../src/http/reply.js';
import { performanceTail } from '../../src/http/performanceTail.js';
import type { PerfFields } from '../../src/protocol/messages/rpc.js';
import { nowMs } from '../../src/core/stopwatch.js';

/** server_total_ms depends on when it is taken: the two texts are compared with it masked. */
const masked = (text: string) => text.replace(/"server_total_ms":[0-9.e+-]+/, '"server_total_ms":T');

test('performanceTail writes what JSON.stringify(perfBlock) writes', () => {
  const extras: PerfFields[] = [
    {},
    { wal_append_ms: 0.123, fsync_ms: 0 },
    { records_scanned: 1000 },
    { throttle_wait_ms: 2.5, wal_append_ms: 1.25, fsync_ms: 0.75 },
    { records_scanned: 3, throttle_wait_ms: 1 },
    { wal_append_ms: 1e-7, fsync_ms: 123456.789 },
    { wal_append_ms: Number.NaN },
    { wal_append_ms: undefined, fsync_ms: 2 },
    { wal_append_ms: 0.05, fsync_ms: 0.001 },
    { wal_append_ms: 10.1, fsync_ms: 7, records_scanned: 0 },
    { wal_append_ms: 0.01, fsync_ms: 2 ** 40 + 0.5 },
    { wal_append_ms: -0, fsync_ms: -1.5 },
  ];
  for (const waited of [undefined, 0, 3.25]) {
    for (const extra of extras) {
      const req = { startedAt: nowMs() - 1.5, throttleWaitMs: waited } as FastifyRequest;
      const tail = performanceTail(req, extra);
      const expected = `,"performance":${JSON.stringify(perfBlock(req, extra))}}`;
      assert.equal(masked(tail), masked(expected), `extra ${JSON.stringify(extra)}, waited ${waited}`);
      const parsed = JSON.parse(`{"x":1${tail}`) as { performance: { server_total_ms: number } };
      assert.ok(parsed.performance.server_total_ms >= 1.5, 'measured from startedAt');
    }
  }
});
