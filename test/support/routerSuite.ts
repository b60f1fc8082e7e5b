// The setup of the router HTTP files (test/http/router*.test.ts): one spawned server with two
// topic workers for the whole file, so a router's source and dest can sit on different workers
// or on the same one, started in the file's `before` hook and stopped in its `after` hook
// (test/support/httpSuite.ts); its client; topic pairs placed on the workers; and the PUT of a
// router named `source->dest`. Runs on the test file's thread.
import type { client, Resp, Server } from '../helpers/server.js';
import { topicPair } from '../http/util.js';
import { httpSuite } from './httpSuite.js';

/** Topic workers of a router file's server: two, so a source and its dest can be apart. */
export const ROUTER_WORKERS = 2;

export interface RouterSuite {
  srv: Server;
  /** A client of `srv` (test/helpers/server.ts). */
  c: ReturnType<typeof client>;
  /**
   * A source (`source`, or a fresh name from the file's namer) and a dest on the same worker as
   * it or on the other one: the source with `.d0`, `.d1`, ... until one is placed as asked.
   */
  pair(sameWorker: boolean, source?: string): [string, string];
  /** PUT /v0/routers/`s->d`: a router from `s` to `d` with the `extra` fields of its body. */
  route(s: string, d: string, extra?: Record<string, unknown>): Promise<Resp>;
}

export interface RouterSuiteOptions {
  /** The file's topic namer (test/http/util.ts `namer`), for `pair` without a source. */
  name?: (label?: string) => string;
  /** Settings over SERVICE_WORKERS=2. */
  env?: Record<string, string>;
}

/** Declares the file's two-worker server; call at the top level of a test file. */
export function routerSuite(opts: RouterSuiteOptions = {}): RouterSuite {
  const env = { SERVICE_WORKERS: String(ROUTER_WORKERS), ...opts.env };
  const { srv, c } = httpSuite(env);
  const pair = (sameWorker: boolean, source?: string): [string, string] => {
    const name = source === undefined ? opts.name : () => source;
    if (name === undefined) throw new Error('pair() without a source needs the namer of routerSuite({ name })');
    return topicPair(name, ROUTER_WORKERS, sameWorker);
  };
  const route = (s: string, d: string, extra: Record<string, unknown> = {}) =>
    c.put(`/v0/routers/${encodeURIComponent(`${s}->${d}`)}`, { source: s, dest: d, ...extra });
  return { srv, c, pair, route };
}
