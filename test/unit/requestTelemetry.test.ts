// The per-request telemetry of the HTTP thread: RequestLogger (src/http/requestLogger.ts) makes
// a request's pino child only for a line at an enabled level, with the request's bindings, and
// LabeledHistogram (src/http/fixedHistogram.ts) renders its series as Prometheus histograms.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import client from 'prom-client';
import type { FastifyBaseLogger } from 'fastify';
import { createLogger } from '../../src/log.js';
import { RequestLogger, requestLoggerFactory } from '../../src/http/requestLogger.js';
import { LabeledHistogram } from '../../src/http/fixedHistogram.js';

function capture(level: string): { logger: FastifyBaseLogger; lines: Record<string, unknown>[]; children: () => number } {
  const lines: Record<string, unknown>[] = [];
  const dest = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const logger = createLogger(level, dest as unknown as Parameters<typeof createLogger>[1]) as unknown as FastifyBaseLogger;
  let made = 0;
  const child = logger.child.bind(logger);
  (logger as { child: unknown }).child = (b: Record<string, unknown>, o?: object) => (made++, child(b, o));
  return { logger, lines, children: () => made };
}

test('no pino child until a line at an enabled level; then one, with the bindings', async () => {
  const { logger, lines, children } = capture('info');
  const log = requestLoggerFactory(logger, { req_id: 'r-1' }, {});
  assert.ok(log instanceof RequestLogger);
  log.debug({ a: 1 }, 'below the level');
  log.trace('below the level');
  assert.equal(children(), 0, 'nothing made for lines that are off');
  log.error({ status: 500 }, 'boom');
  log.warn('second');
  await new Promise((r) => setImmediate(r));
  assert.equal(children(), 1, 'one child, reused');
  assert.deepEqual(lines.map((l) => [l.level, l.msg, l.req_id]), [['error', 'boom', 'r-1'], ['warn', 'second', 'r-1']]);
  assert.equal(lines[0]!.status, 500);
  assert.equal(log.level, 'info');
});

test('a route with its own level gets an eager child', () => {
  const { logger, children } = capture('info');
  const log = requestLoggerFactory(logger, { req_id: 'r-2' }, { level: 'debug' });
  assert.ok(!(log instanceof RequestLogger));
  assert.equal(children(), 1);
});

test('LabeledHistogram: cumulative buckets, sum and count per label value', async () => {
  const registry = new client.Registry();
  const h = new LabeledHistogram('t_ms', 'test', 'route', [1, 10], registry);
  for (const v of [0.5, 1, 5, 50]) h.observe('/a', v);
  h.observe('/b', 2);
  const text = await registry.metrics();
  for (const line of ['t_ms_bucket{route="/a",le="1"} 2', 't_ms_bucket{route="/a",le="10"} 3', 't_ms_bucket{route="/a",le="+Inf"} 4', 't_ms_sum{route="/a"} 56.5', 't_ms_count{route="/a"} 4', 't_ms_bucket{route="/b",le="1"} 0', 't_ms_count{route="/b"} 1']) {
    assert.ok(text.includes(line), `${line} in\n${text}`);
  }
  assert.match(text, /# TYPE t_ms histogram/);
});
