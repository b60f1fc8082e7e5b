// The setup of the spawned-server HTTP files (test/http/): one real server (test/helpers/server.ts)
// with the given SERVICE_* settings for the whole file, started in the file's `before` hook and
// stopped in its `after` hook (test/support/fileServer.ts); the file's tests use `srv` and its
// `c` client. Called inside a `describe`, the hooks are that block's: one server for the block.
// Runs on the test file's thread. Topics or routers the tests expect are made in `ready`, run
// once the server is up.
import { client, startServer, type Server } from '../helpers/server.js';
import { liveView, serverForFile } from './fileServer.js';

export interface HttpSuite {
  srv: Server;
  /** A client of `srv` (test/helpers/server.ts). */
  c: ReturnType<typeof client>;
}

/** Declares the file's spawned server; call at the top level of a test file (or of a describe). */
export function httpSuite(env: Record<string, string> = {}, ready?: () => Promise<unknown>): HttpSuite {
  const srv = serverForFile('spawned server', () => startServer({ env }), ready);
  // A client is a few closures over the URL, known once the server is up: made anew on each use.
  return { srv, c: liveView(() => client(srv.url)) };
}
