// Topics filled with records before a test reads or deletes them, made the same way by the
// spawned-server file and the in-process rule file that cover one route (test/http/diff.test.ts
// and test/inject/diffRules.test.ts; test/http/recordDelete.test.ts and
// test/inject/recordDeleteRules.test.ts). Each file binds a seeder to its client and topic namer
// once and calls it `seeded`. Runs on the test file's thread.
import assert from 'node:assert/strict';
import type { Resp } from '../helpers/server.js';
import { assertOk } from '../http/util.js';

/** What seeding needs of a client: test/helpers/server.ts's `client` and an inject server's both fit. */
export interface SeedClient {
  put(p: string, b?: unknown): Promise<Resp>;
  post(p: string, b?: unknown): Promise<Resp>;
}

/** A fresh topic name for a label (test/http/util.ts `namer`). */
type Namer = (label?: string) => string;

/** A record as appended. */
export type SeededRecord = { data: unknown; tag?: string; meta?: Record<string, unknown> };

/**
 * `seeded(n, label?, mk?)`: appends `n` records (`mk(i)`, by default `{ data: i + 1 }`) in one
 * request to a fresh topic named `name(label)`, which that append creates (201, default config);
 * returns its name.
 */
export function firstAppendSeeder(
  c: SeedClient,
  name: Namer,
): (n: number, label?: string, mk?: (i: number) => Record<string, unknown>) => Promise<string> {
  return async (n, label = 'seed', mk = (i) => ({ data: i + 1 })) => {
    const t = name(label);
    const r = await c.post(`/v0/topics/${t}`, { records: Array.from({ length: n }, (_, i) => mk(i)) });
    assert.equal(r.status, 201, r.text);
    return t;
  };
}

/**
 * `seeded(recs, config?, label?)`: a fresh topic named `name(label)` made by a PUT of `config`
 * (201), then holding `recs` (seq i+1 = recs[i]), appended 1000 a request; returns its name.
 */
export function configuredTopicSeeder(
  c: SeedClient,
  name: Namer,
): (recs: SeededRecord[], config?: Record<string, unknown>, label?: string) => Promise<string> {
  return async (recs, config = {}, label = 't') => {
    const t = name(label);
    assertOk(await c.put(`/v0/topics/${t}`, config), 201);
    for (let i = 0; i < recs.length; i += 1000) {
      assertOk(await c.post(`/v0/topics/${t}`, { records: recs.slice(i, i + 1000) }), 200);
    }
    return t;
  };
}

/** Tagged records: tags[i] (undefined = untagged) for seq i+1, data = seq. */
export const tagged = (tags: (string | undefined)[]): SeededRecord[] =>
  tags.map((tag, i) => (tag === undefined ? { data: i + 1 } : { data: i + 1, tag }));
