// The fixture of the client and CLI tests: one spawned server for the file and a client of it,
// set up in before() and stopped in after(); and the assertion that a call fails as a SpoolError.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type Server } from './server.js';
import { Spool, SpoolError } from '../../src/client/index.js';

/**
 * Registers before/after hooks that start a server with `env` and a client of it, handed to `set`
 * once both exist (the test file keeps them in its own variables).
 */
export function useSpoolServer(set: (srv: Server, spool: Spool) => void, env: Record<string, string> = { SERVICE_WORKERS: '1' }): void {
  let srv: Server | undefined;
  before(async () => {
    srv = await startServer({ env });
    set(srv, new Spool({ url: srv.url }));
  });
  after(async () => {
    await srv?.stop();
  });
}

/** Runs `fn`, which must reject with a SpoolError; returns it. */
export async function spoolError(fn: () => Promise<unknown>): Promise<SpoolError> {
  try {
    await fn();
  } catch (e) {
    assert.ok(e instanceof SpoolError, `expected a SpoolError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected a rejection');
}
