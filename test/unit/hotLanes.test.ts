// The request channel's compact lanes (src/protocol/hotLanes.ts): a plain result round-trips
// through the lanes with every subset of its performance fields and each class; a result or an
// append with any field the lanes do not carry is refused (it must cross as an object). The
// lists of names are the ones the type checks keep complete, so a field added to PerfFields,
// OkResult or AppendRequest and listed there is checked here even if the straight-line tests in
// hotLanes.ts forget it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  APPEND_EXTRA_NAMES,
  PERF_FIELD_NAMES,
  RESULT_EXTRA_NAMES,
  decodeResult,
  encodeRequest,
  encodeResult,
  type LaneCursor,
} from '../../src/protocol/hotLanes.js';
import type { AppendRequest, OkResult, PerfFields } from '../../src/protocol/messages/rpc.js';

const bytes = Buffer.from('{"topic":"t"');

function roundTrip(r: OkResult): OkResult | undefined {
  const nums: number[] = [];
  assert.equal(encodeResult(r, nums), true);
  const c: LaneCursor = { nums, strs: [], n: 0, s: 0 };
  const back = decodeResult(c, bytes);
  assert.equal(c.n, nums.length, 'the decoder reads every number the encoder wrote');
  return back;
}

test('a plain result round-trips with every subset of its performance fields', () => {
  for (let mask = 0; mask < 1 << PERF_FIELD_NAMES.length; mask++) {
    const perf: PerfFields = {};
    PERF_FIELD_NAMES.forEach((k, i) => {
      if (mask & (1 << i)) perf[k] = 1000 + i * 7 + mask;
    });
    const back = roundTrip({ ok: true, status: 201, json: bytes, perf });
    assert.deepEqual(back, { ok: true, status: 201, json: bytes, perf }, `mask ${mask}`);
  }
});

test('the class and the status round-trip', () => {
  for (const durability of [undefined, 'ephemeral', 'memory', 'disk', 'fsync'] as const) {
    const r: OkResult = { ok: true, status: 200, json: bytes, perf: { wal_append_ms: 0.5 } };
    if (durability) r.durability = durability;
    assert.deepEqual(roundTrip(r), r);
  }
});

test('a result with any field the lanes do not carry must cross as an object', () => {
  assert.ok(RESULT_EXTRA_NAMES.length >= 6);
  for (const k of RESULT_EXTRA_NAMES) {
    const r = { ok: true, status: 200, json: bytes, perf: {}, [k]: {} } as unknown as OkResult;
    const nums: number[] = [];
    assert.equal(encodeResult(r, nums), false, k);
    assert.equal(nums.length, 0, `${k}: nothing written`);
  }
});

test('an append with any field the lanes do not carry must cross as an object', () => {
  const plain: AppendRequest = { op: 'append', topic: 't', body: bytes, returnSeqs: true, headerIdemKey: undefined };
  assert.equal(encodeRequest(plain, true, [], []), true);
  assert.ok(APPEND_EXTRA_NAMES.length >= 4);
  for (const k of APPEND_EXTRA_NAMES) {
    const r = { ...plain, [k]: k === 'stamped' ? true : {} } as AppendRequest;
    assert.equal(encodeRequest(r, true, [], []), false, k);
  }
});
