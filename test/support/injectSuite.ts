// The setup of every fast-tier rule file (test/inject/): one in-process server driven through
// inject() (test/helpers/injectServer.ts) for the whole file, with the given SERVICE_* settings,
// started in the file's `before` hook and stopped (data dir removed) in its `after` hook; the
// file's tests use `srv` and its `c` client. Runs on the test file's thread. A file that needs
// topics or routers made before its tests passes them as `ready`, run once the server is up.
import { startInjectServer, type InjectClient, type InjectServer } from '../helpers/injectServer.js';
import { liveView, serverForFile } from './fileServer.js';

export interface InjectSuite {
  srv: InjectServer;
  /** `srv.client`: requests as test/helpers/server.ts's `client` sends them. */
  c: InjectClient;
}

/** Declares the file's in-process server; call at the top level of a test file. */
export function injectSuite(env: Record<string, string> = {}, ready?: () => Promise<unknown>): InjectSuite {
  const srv = serverForFile('in-process server', () => startInjectServer(env), ready);
  return { srv, c: liveView(() => srv.client) };
}
