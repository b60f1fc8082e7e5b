// The lazy request logger (src/http/lazyLogger.ts): the same lines as pino's own child, and no
// child made for a request that writes nothing at an enabled level.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { lazyChildLogger, levelEnabled } from '../../src/http/lazyLogger.js';

function capture(): { log: pino.Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const dest = new Writable({ write: (c, _e, cb) => (out.push(String(c)), cb()) });
  const log = pino({ level: 'info', base: null, timestamp: false, redact: { paths: ['data'], censor: '[redacted]' } }, dest);
  return {
    log,
    lines: () =>
      out
        .join('')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
  };
}

test('writes what the eager child writes; makes no child until a line is enabled', async () => {
  const a = capture();
  const b = capture();
  let made = 0;
  const child = a.log.child.bind(a.log);
  (a.log as unknown as { child: typeof child }).child = ((...args: Parameters<typeof child>) => (made++, child(...args))) as typeof child;
  const lazy = lazyChildLogger(a.log as unknown as FastifyBaseLogger, { req_id: 'r1' }, {});
  const eager = b.log.child({ req_id: 'r1' });
  lazy.debug({ x: 1 }, 'not written at info');
  lazy.trace('nor this');
  assert.equal(made, 0, 'nothing written, no child made');
  assert.equal(levelEnabled(lazy, 'debug'), false);
  assert.equal(levelEnabled(lazy, 'error'), true);
  for (const l of [lazy, eager as unknown as FastifyBaseLogger]) {
    l.error({ status: 500, data: 'secret' }, 'GET / answered 500');
    l.info('second line');
  }
  await new Promise((r) => setImmediate(r));
  assert.equal(made, 1, 'one child, made on the first enabled line');
  assert.deepEqual(a.lines(), b.lines());
  assert.deepEqual(a.lines()[0], { level: 50, req_id: 'r1', status: 500, data: '[redacted]', msg: 'GET / answered 500' });
});
