// Wakes ahead of TTL expiry are spread (src/topicThread/dormancy.ts, TTL_WAKES_PER_TICK): when many
// sleeping topics fall due at once, each tick of the sweep's timer starts at most 256 wakes, the
// rest wait for the next ticks (the margin, TTL_WAKE_AHEAD_MS, is ten of them), and none is lost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Dormancy, type DormancyHost } from '../../src/topicThread/dormancy.js';
import { resolveConfig } from '../../src/protocol/topicConfig.js';
import type { TopicActor } from '../../src/actors/topic/topicActor.js';
import type { ActorInput } from '../../src/actors/topic/inputs.js';
import type { DormantTopic } from '../../src/actors/topic/dormant.js';

/** A host whose actors are names and whose inputs are recorded. */
function host(now: () => number): DormancyHost & { inputs: [string, ActorInput['k']][] } {
  const inputs: [string, ActorInput['k']][] = [];
  return {
    inputs,
    packs: undefined,
    fsx: undefined as never, // no topic here has own files
    dataDir: '/nowhere',
    stored: () => ({ packedWritten: 0, ownSettled: true }),
    releaseFiles: () => undefined,
    ownLoaded: () => undefined,
    byTopicId: new Map(),
    actorFor: (name) => ({ name }) as unknown as TopicActor,
    actorByName: () => undefined,
    input: (actor, input) => void inputs.push([actor.name, input.k]),
    textsKept: () => undefined,
    hasTimers: () => false,
    now,
  };
}

test('many TTL topics due at once wake at most 256 per tick, all of them in the end', async () => {
  let now = 1_000_000;
  const h = host(() => now);
  const d = new Dormancy(h, { sleepMs: 0, awakeMax: 0 });
  const r = resolveConfig('t', { ttl_ms: 5000 });
  assert.ok(r.ok);
  const N = 600;
  for (let i = 0; i < N; i++) {
    // Two $ts: its first record expires before its last, so it wakes a second ahead of that.
    const rec: DormantTopic = {
      id: i + 1,
      name: `ttl.${i}`,
      config: r.config,
      created_ms: now,
      reserved: 2,
      head: 2,
      count: 2,
      bytes: 20,
      earliest: 1,
      first_ts_ms: now,
      last_ts_ms: now + 100,
      last_write_ms: null,
      last_read_ms: null,
      last_consumed_ms: null,
      packed_bytes: 0,
    };
    d.restore(rec);
  }
  d.endRecovery();
  assert.equal(await d.wakeDue(), 0, 'none is due yet');
  now += 5000 - 1000; // TTL_WAKE_AHEAD_MS before the first records expire
  const woke = [await d.wakeDue(), await d.wakeDue(), await d.wakeDue(), await d.wakeDue()];
  assert.deepEqual(woke, [256, 256, 88, 0]);
  assert.equal(d.sleepingCount, 0);
  // Each woke once, with the inputs recovery uses.
  assert.equal(h.inputs.filter(([, k]) => k === 'wake').length, N);
  assert.deepEqual(h.inputs.slice(0, 2), [
    ['ttl.0', 'wake'],
    ['ttl.0', 'finish'],
  ]);
});
