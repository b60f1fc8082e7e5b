// The simulators' effect table (test/support/simEffects.ts): a table missing a kind, or naming one
// that is not an Effect, does not compile, and the sink hands each effect to its own handler.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Effect } from '../../src/actors/ctx.js';
import { effectSink, ignored, type EffectHandlers } from '../support/simEffects.js';

test('effectSink: every effect kind needs a handler, and each effect reaches its own', () => {
  const seen: string[] = [];
  const all: EffectHandlers = {
    reply: (e) => void seen.push(`reply ${e.reqId}`),
    submit: (e) => void seen.push(`submit ${e.frameNo}`),
    setTimer: (e) => void seen.push(`setTimer ${e.timerId}@${e.atMs}`),
    cancelTimer: (e) => void seen.push(`cancelTimer ${e.timerId}`),
    readCold: ignored,
    textsLoaded: ignored,
    deferForCredit: ignored,
    rewriteSegment: ignored,
    releaseTopicSlot: () => void seen.push('releaseTopicSlot'),
    topicCreated: ignored,
    topicDeleted: ignored,
    publish: ignored,
    work: ignored,
    peerRequest: ignored,
  };
  // @ts-expect-error a table without `work` (or any other kind) is refused
  const missing: EffectHandlers = { ...all, work: undefined };
  // @ts-expect-error a handler for a kind that is not an Effect is refused
  const extra: EffectHandlers = { ...all, nothing: ignored };
  const sink = effectSink(all);
  const effects: Effect[] = [
    { k: 'setTimer', timerId: 3, atMs: 50 },
    { k: 'releaseTopicSlot' },
    { k: 'cancelTimer', timerId: 3 },
    { k: 'topicCreated', topicId: 9 },
  ];
  for (const e of effects) sink.run(e);
  assert.deepEqual(seen, ['setTimer 3@50', 'releaseTopicSlot', 'cancelTimer 3']);
  assert.equal(Object.keys(missing).length, Object.keys(all).length);
  assert.equal(Object.keys(extra).length, Object.keys(all).length + 1);
});
