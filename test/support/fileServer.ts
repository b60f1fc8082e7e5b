// One server for all the tests of a file, declared in one line at its top: started in the file's
// `before` hook, stopped in its `after` hook (node:test, on the test file's thread), and used
// through a stand-in that forwards every property to the live server, so the tests read
// `srv.raw(...)` and `c.post(...)` as they would with a `let srv` assigned in `before`. Touching
// the stand-in before the hook has run (at module load, say) throws instead of reading undefined.
import { before, after } from 'node:test';

/** A stand-in for the object `get` returns when a property is read: its methods bound to it. */
export function liveView<T extends object>(get: () => T): T {
  return new Proxy({} as T, {
    get(_, key) {
      const target = get();
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * Starts `start()` before the file's tests, then runs `ready` (which may use the stand-in: topics
 * or routers the tests expect), and stops the server after the tests; returns its stand-in. One
 * hook does both: node 20 does not wait for one top-level `before` hook before the next.
 */
export function serverForFile<S extends { stop(): Promise<unknown> }>(
  label: string,
  start: () => Promise<S>,
  ready?: () => Promise<unknown>,
): S {
  let live: S | undefined;
  before(async () => {
    live = await start();
    await ready?.();
  });
  after(async () => {
    await live?.stop();
  });
  return liveView(() => {
    if (live === undefined) throw new Error(`${label}: used before the file's before hook started it`);
    return live;
  });
}
