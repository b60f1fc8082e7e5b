// The main <-> worker request channel (src/protocol/requestChannel.ts) over a real MessageChannel:
// the requests of one turn leave as one message, the results settled in one turn come back as one
// message, each caller gets its own result whatever the settle order, bodies and reply bytes are
// copied into one shared buffer per batch (big whole ones transferred), a handler that throws answers `internal` instead of leaving the caller hanging, and
// an abandoned channel settles nothing more; a request may be answered on the worker end without
// a promise (answerWith); reply pages make the round trip (src/core/pagePool.ts); a worker turn's
// watch and `/work` events cross in the same message as its results, handed on in the order the
// worker produced them, their buffers transferred.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { SHARED_BYTES_MAX } from '../../src/protocol/requestChannel.js';
import { RequestClient } from '../../src/protocol/requestClient.js';
import { SLICE_BODY_BYTES, answering, serveRequests, type AnswerWith, type RequestServer } from '../../src/protocol/requestServer.js';
import { fail, type ErrorResult } from '../../src/protocol/errors.js';
import { stageClock } from '../../src/core/stageClock.js';
import { PAGE_MIN_BYTES, PAGE_TAIL_SLACK_BYTES, allocPage, pageCapacity, returnPage } from '../../src/core/pagePool.js';
import type { AppendRequest, RequestBatch, ResultBatch, TopicRequest, TopicResult } from '../../src/protocol/messages/rpc.js';
import type { WatchBatch, WatchEvent, WorkerEvent } from '../../src/protocol/messages/events.js';

function ok(text: string): TopicResult {
  return { ok: true, status: 200, json: new Uint8Array(Buffer.from(text)), perf: {} };
}

function append(topic: string, body: Uint8Array): AppendRequest {
  return { op: 'append', topic, body, returnSeqs: true, headerIdemKey: undefined };
}

/** How many requests (or results) each captured batch carried. */
const sizes = (batches: (RequestBatch | ResultBatch)[]): number[] => batches.map((m) => m.ids.length);

/** One test's channel: the worker end serving it, main's client, and every batch that crossed each way. */
interface Rig {
  client: RequestClient;
  server: RequestServer;
  toWorker: RequestBatch[];
  toMain: ResultBatch[];
}

interface RigOptions {
  /** The worker end's answerWith; given the server, so a handler can send events in its turn. */
  serve: (server: RequestServer) => AnswerWith;
  /** Main's hand-on of the worker's events (RequestClient's `onEvents`). */
  onEvents?: (evs: WorkerEvent[]) => void;
}

/** Builds a rig over a real MessageChannel, runs `body` with it, and closes the channel whatever `body` did. */
async function withRig(opts: RigOptions, body: (rig: Rig) => Promise<void>): Promise<void> {
  const ch = new MessageChannel();
  const toWorker: RequestBatch[] = [];
  const toMain: ResultBatch[] = [];
  ch.port2.on('message', (m: RequestBatch) => toWorker.push(m));
  ch.port1.on('message', (m: ResultBatch) => toMain.push(m));
  const server: RequestServer = serveRequests(ch.port2, opts.serve({ flush: () => server.flush(), event: (ev) => server.event(ev) }));
  const client = new RequestClient(ch.port1, opts.onEvents);
  try {
    await body({ client, server, toWorker, toMain });
  } finally {
    ch.port1.close();
  }
}

test('one message per turn each way, results matched to their callers', async () => {
  // The worker settles requests out of order, all in one later turn.
  const waiting: { req: TopicRequest; resolve: (r: TopicResult) => void }[] = [];
  const serve = () => answering((req) => new Promise((resolve) => waiting.push({ req, resolve })));
  await withRig({ serve }, async ({ client, toWorker, toMain }) => {
    const bodies = Array.from({ length: 20 }, (_, i) => new Uint8Array(Buffer.from(`{"records":[{"data":${i}}]}`)));
    const calls = bodies.map((b, i) => client.request(append(`t${i}`, b)));
    while (waiting.length < 20) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(sizes(toWorker), [20], 'the 20 requests of one turn crossed as one message');
    assert.equal(new TextDecoder().decode((waiting[7]!.req as AppendRequest).body), '{"records":[{"data":7}]}');
    for (const w of [...waiting].reverse()) w.resolve(ok(`{"topic":"${(w.req as AppendRequest).topic}"`));
    const results = await Promise.all(calls);
    results.forEach((r, i) => {
      assert.ok(r.ok);
      assert.equal(Buffer.from(r.json).toString(), `{"topic":"t${i}"`, `caller ${i} got its own result`);
    });
    assert.deepEqual(sizes(toMain), [20], 'the 20 results settled in one turn crossed as one message');
  });
});

test('small append bodies cross in one shared buffer, big whole ones are transferred, each arrives intact', async () => {
  const seen: AppendRequest[] = [];
  const serve = () =>
    answering(async (req) => {
      if (req.op === 'append') seen.push(req);
      return ok('{');
    });
  await withRig({ serve }, async ({ client, toWorker }) => {
    const big = new Uint8Array(SHARED_BYTES_MAX + 1).fill(0x62);
    const bigCopy = big.slice();
    const pooled = Buffer.from('{"records":[{"data":"pooled"}]}'); // a slice of Node's pool slab
    assert.notEqual(pooled.byteLength, pooled.buffer.byteLength, 'the test body shares its slab');
    const small = new Uint8Array(Buffer.from('{"records":[{"data":1}]}'));
    const bigSlice = Buffer.alloc(SHARED_BYTES_MAX * 2, 0x63).subarray(1, SHARED_BYTES_MAX + 2); // big, not a whole buffer
    const reqs = [
      append('a', pooled),
      { op: 'state', topic: 's', touch: false } as const,
      append('b', big),
      append('c', small),
      append('d', bigSlice),
      append('e', big),
    ];
    const expected = [pooled, bigCopy, small, Buffer.from(bigSlice), bigCopy].map((b) => Buffer.from(b).toString('latin1'));
    await Promise.all(reqs.map((r) => client.request(r)));
    assert.equal(toWorker.length, 1, 'one message');
    const m = toWorker[0]!;
    assert.equal(big.byteLength, 0, 'the big whole body was transferred, not copied');
    assert.equal(pooled.byteLength, 31, 'small bodies are copied: the caller keeps its view');
    // pooled + small + the big slice + the second use of `big` (it cannot be transferred twice).
    assert.equal(
      m.bodies!.byteLength,
      31 + small.byteLength + bigSlice.byteLength + bigCopy.byteLength,
      'one shared buffer for the copied bodies',
    );
    assert.equal(m.bodyEnds!.length, 4);
    assert.deepEqual(
      seen.map((r) => r.topic),
      ['a', 'b', 'c', 'd', 'e'],
    );
    assert.deepEqual(
      seen.map((r) => Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength).toString('latin1')),
      expected,
      'every body arrives with its own bytes',
    );
  });
});

test('small replies cross in one shared buffer next to errors, pages and big replies', async () => {
  const big = Buffer.alloc(SHARED_BYTES_MAX + 10, 0x61);
  const serve = () =>
    answering(async (req) => {
      const t = req.topic;
      if (t === 'err') return { ok: false, status: 404, code: 'topic_not_found', message: 'no' } as TopicResult;
      if (t === 'big') return { ok: true, status: 200, json: big, perf: {} };
      if (t === 'empty') return { ok: true, status: 200, json: Buffer.alloc(0), perf: { records_scanned: 3 } };
      return { ok: true, status: 201, json: Buffer.from(`{"t":"${t}"`), perf: { wal_append_ms: 0.5 }, durability: 'disk' };
    });
  await withRig({ serve }, async ({ client, toMain }) => {
    const names = ['x', 'err', 'big', 'y', 'empty', 'z'];
    const rs = await Promise.all(names.map((t) => client.request({ op: 'state', topic: t, touch: false })));
    assert.equal(toMain.length, 1, 'one message');
    assert.equal(toMain[0]!.jsons!.byteLength, 3 * 8, 'the three small replies share one buffer');
    const text = (i: number) => {
      const r = rs[i]!;
      assert.ok(r.ok, names[i]);
      return Buffer.from(r.json.buffer, r.json.byteOffset, r.json.byteLength).toString('latin1');
    };
    assert.equal(text(0), '{"t":"x"');
    assert.equal(text(3), '{"t":"y"');
    assert.equal(text(5), '{"t":"z"');
    assert.equal(text(4), '');
    assert.equal(text(2), 'a'.repeat(SHARED_BYTES_MAX + 10));
    assert.ok(!rs[1]!.ok && rs[1]!.code === 'topic_not_found');
    const x = rs[0]!;
    assert.ok(x.ok);
    assert.equal(x.status, 201);
    assert.equal(x.durability, 'disk');
    assert.deepEqual(x.perf, { wal_append_ms: 0.5 });
    assert.equal(pageCapacity(x.json), 0, 'a reply in the shared buffer is never taken for a page');
    const e = rs[4]!;
    assert.ok(e.ok);
    assert.deepEqual(e.perf, { records_scanned: 3 });
  });
});

test('a result sharing a buffer with another is copied, and a handler that throws answers internal', async () => {
  const shared = new Uint8Array(Buffer.from('{"a":1'));
  let n = 0;
  const serve = () =>
    answering(async (req) => {
      if (req.op === 'state' && req.topic === 'boom') throw new Error('bug in the handler');
      n++;
      // The same whole buffer for two results of one turn: transferring it twice would throw.
      return { ok: true, status: 200, json: shared, perf: {} };
    });
  await withRig({ serve }, async ({ client }) => {
    const [a, b, boom] = await Promise.all([
      client.request({ op: 'state', topic: 'x', touch: false }),
      client.request({ op: 'state', topic: 'y', touch: false }),
      client.request({ op: 'state', topic: 'boom', touch: false }),
    ]);
    assert.equal(n, 2);
    for (const r of [a, b]) {
      assert.ok(r!.ok);
      assert.equal(Buffer.from(r!.json).toString(), '{"a":1');
    }
    assert.ok(!boom!.ok);
    assert.equal(boom!.code, 'internal');
    assert.equal(boom!.status, 500);
  });
});

test('abandon leaves pending requests unsettled and refuses later ones', async () => {
  let answer: ((r: TopicResult) => void) | undefined;
  const serve = () => answering(() => new Promise<TopicResult>((resolve) => (answer = resolve)));
  await withRig({ serve }, async ({ client }) => {
    let settled = false;
    void client.request({ op: 'state', topic: 'x', touch: false }).then(() => (settled = true));
    while (!answer) await new Promise((r) => setTimeout(r, 5));
    client.abandon();
    answer(ok('{"late":true'));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(settled, false, 'an abandoned request never settles');
    await assert.rejects(client.request({ op: 'state', topic: 'x', touch: false }), /abandoned/);
  });
});

test('answerWith takes the requests on the worker end: answered now or later, a throw answers internal', async () => {
  const later: [number, (id: number, r: TopicResult) => void][] = [];
  const serve = (): AnswerWith => (req, id, answer) => {
    if (req.topic === 'boom') throw new Error('a bug');
    if (req.topic === 'later') later.push([id, answer]);
    else answer(id, ok(`{"now":"${req.topic}"`));
  };
  await withRig({ serve }, async ({ client }) => {
    const now = client.request({ op: 'state', topic: 'a', touch: false });
    const boom = client.request({ op: 'state', topic: 'boom', touch: false });
    const delayed = client.request(append('later', new Uint8Array(Buffer.from('{"records":[]}'))));
    const a = await now;
    assert.ok(a.ok);
    assert.equal(Buffer.from(a.json).toString(), '{"now":"a"', 'answered by answerWith, not handle');
    const b = await boom;
    assert.equal(b.ok, false);
    assert.equal((b as ErrorResult).code, 'internal');
    assert.equal(later.length, 1);
    later[0]![1](later[0]![0], ok('{"later":true'));
    const c = await delayed;
    assert.ok(c.ok);
    assert.equal(Buffer.from(c.json).toString(), '{"later":true');
  });
});

test('with the stage clock on, the same answerWith route stamps each result: batch arrival, step end', async () => {
  const later: [number, (id: number, r: TopicResult) => void][] = [];
  const stepEnds = new Map<string, number>();
  const { log, onEvents } = orderLog();
  const serve =
    (server: RequestServer): AnswerWith =>
    (req, id, answer) => {
      if (req.topic === 'later') later.push([id, answer]);
      else {
        answer(id, ok('{'));
        server.event(watchBatch(`after-${req.topic}`, 'x'));
      }
      stepEnds.set(req.topic, stageClock.now());
    };
  await withRig({ serve, onEvents }, async ({ client }) => {
    stageClock.on = true;
    try {
      const now = client.request({ op: 'state', topic: 'a', touch: false }).then((r) => (log.push('result:a'), r));
      const delayed = client.request({ op: 'state', topic: 'later', touch: false });
      while (later.length === 0) await new Promise((r) => setTimeout(r, 2));
      await new Promise((r) => setTimeout(r, 5));
      const answeredAt = stageClock.now();
      later[0]![1](later[0]![0], ok('{'));
      const [a, b] = await Promise.all([now, delayed]);
      await new Promise((r) => setImmediate(r));
      for (const r of [a, b])
        assert.ok(r.stamps?.wrecv !== undefined && r.stamps.stepped !== undefined && r.stamps.wrecv <= r.stamps.stepped);
      assert.ok(a.stamps!.stepped! <= stepEnds.get('a')!, 'answered in its step: stamped when answered');
      assert.ok(
        b.stamps!.stepped! >= stepEnds.get('later')! && b.stamps!.stepped! < answeredAt,
        'answered later: stamped when its step returned, not when answered',
      );
      assert.deepEqual(log, ['result:a', 'batch:after-a'], "an event after its step's result, as with the clock off");
    } finally {
      stageClock.on = false;
    }
  });
});

test('a promise handler given without answering() is answered internal at once, not left hanging', async () => {
  // Passed as answerWith as it is: the promise comes back to serveRequests.
  await withRig({ serve: () => async () => ok('{') }, async ({ client }) => {
    const r = await client.request({ op: 'state', topic: 'a', touch: false });
    assert.equal(r.ok, false);
    assert.equal((r as ErrorResult).code, 'internal');
    assert.match((r as ErrorResult).message, /answering\(\)/);
  });
});

test('a reply page crosses whole, keeps its slack, and comes back with the next request batch', async () => {
  const size = PAGE_MIN_BYTES + 100;
  let page: Buffer | undefined;
  const reused: boolean[] = [];
  const serve = () =>
    answering(async () => {
      page = allocPage(size);
      reused.push(page[0] === 0x20); // a fresh page is zeroed
      page.fill(0x20);
      return { ok: true, status: 200, json: page, perf: {} };
    });
  await withRig({ serve }, async ({ client, toWorker }) => {
    const r = await client.request({ op: 'state', topic: 'x', touch: false });
    assert.ok(r.ok);
    assert.equal(page!.byteLength, 0, 'the page was transferred, not copied');
    assert.equal(r.json.byteLength, size);
    const cap = pageCapacity(r.json);
    assert.ok(cap - size >= PAGE_TAIL_SLACK_BYTES, `slack behind the JSON (capacity ${cap})`);
    returnPage(r.json.buffer);
    assert.equal(r.json.byteLength, size, 'returning queues the page; it leaves with the next batch');
    await client.request({ op: 'state', topic: 'y', touch: false });
    assert.equal(r.json.byteLength, 0, 'the page went back to the worker');
    assert.equal(toWorker.at(-1)!.recycled?.length, 1);
    assert.deepEqual(reused, [false, true], 'the second reply was rendered into the recycled page');
  });
});

test('hot requests cross on the compact lanes, the others as objects, each arrives with its fields', async () => {
  const seen: TopicRequest[] = [];
  const serve = () => answering(async (req) => (seen.push(req), ok('{')));
  await withRig({ serve }, async ({ client, toWorker }) => {
    const body = (s: string) => new Uint8Array(Buffer.from(s));
    const big = new Uint8Array(SHARED_BYTES_MAX + 1).fill(0x61);
    const reqs: TopicRequest[] = [
      { op: 'append', topic: 'a', body: body('{"records":[1]}'), returnSeqs: true, headerIdemKey: 'k-ü\n"' },
      { op: 'state', topic: 's', touch: true },
      {
        op: 'append',
        topic: 'b',
        body: body('{"records":[2]}'),
        returnSeqs: false,
        headerIdemKey: undefined,
        auth: { admin: false, prefixes: ['b'] },
      },
      {
        op: 'diff',
        topic: 'd',
        fromSeq: 2 ** 53 - 1,
        limit: 7,
        nodes: null,
        includeTags: true,
        includeMeta: false,
        waitMs: 250,
        maxBatchBytes: 9,
      },
      {
        op: 'diff',
        topic: 'w',
        fromSeq: 3,
        limit: 1,
        nodes: null,
        includeTags: false,
        includeMeta: false,
        waitMs: 30000,
        maxBatchBytes: 0,
        waitId: 2 ** 40 + 1,
      },
      { op: 'diff', topic: 'n', fromSeq: 0, limit: 0, nodes: ['x'], includeTags: false, includeMeta: true, waitMs: 0, maxBatchBytes: 0 },
      {
        op: 'diff',
        topic: 't',
        fromSeq: 0,
        limit: 0,
        nodes: null,
        includeTags: false,
        includeMeta: true,
        waitMs: 0,
        maxBatchBytes: 0,
        fromTsMs: 5,
      },
      { op: 'state', topic: 'u', touch: false },
      { op: 'append', topic: 'c', body: big, returnSeqs: false, headerIdemKey: undefined },
      { op: 'append', topic: 'e', body: body(''), returnSeqs: false, headerIdemKey: undefined },
      { op: 'deleteTopic', topic: 'z', ifEmpty: true },
    ];
    // What the worker must see: the same fields (a transferred body empties the caller's view).
    const expected = reqs.map((r) => (r.op === 'append' ? { ...r, body: Buffer.from(r.body).toString('latin1') } : { ...r }));
    await Promise.all(reqs.map((r) => client.request(r)));
    assert.equal(toWorker.length, 1, 'one message');
    assert.deepEqual(
      toWorker[0]!.reqs.map((r) => r.topic),
      ['b', 'n', 't', 'c', 'z'],
      'only the requests with fields the lanes do not carry crossed as objects',
    );
    const got = seen.map((r) => (r.op === 'append' ? { ...r, body: Buffer.from(r.body).toString('latin1') } : r));
    // An absent optional field and one set to undefined are the same request.
    const defined = (o: object) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
    assert.deepEqual(got.map(defined), expected.map(defined));
  });
});

test('plain results cross on the compact lanes, results with other fields as objects', async () => {
  const results: Record<string, TopicResult> = {
    full: {
      ok: true,
      status: 201,
      json: Buffer.from('{"a":1'),
      perf: { wal_append_ms: 0.25, fsync_ms: 1.5, records_scanned: 3, throttle_wait_ms: 7 },
      durability: 'fsync',
    },
    bare: { ok: true, status: 200, json: Buffer.from('{"b":2'), perf: {} },
    warned: { ok: true, status: 200, json: Buffer.from('{"c":3'), perf: {}, durability: 'memory', unknownFields: ['ttl'] },
    seek: { ok: true, status: 200, json: Buffer.from('{'), perf: {}, seek: { fromSeq: 1, head: 2, earliest: 0 } },
    err: { ok: false, status: 404, code: 'topic_not_found', message: 'no' },
    eph: { ok: true, status: 200, json: Buffer.from('{"e":5'), perf: { records_scanned: 0 }, durability: 'ephemeral' },
  };
  await withRig({ serve: () => answering(async (req) => results[req.topic]!) }, async ({ client, toMain }) => {
    const names = Object.keys(results);
    const expected = names.map((t) => {
      const r = results[t]!;
      return r.ok ? { ...r, json: Buffer.from(r.json).toString('latin1') } : { ...r };
    });
    const rs = await Promise.all(names.map((t) => client.request({ op: 'state', topic: t, touch: false })));
    assert.equal(toMain.length, 1, 'one message');
    assert.equal(toMain[0]!.results.length, 3, 'the unknown fields, the seek and the error crossed as objects');
    const got = rs.map((r) =>
      r.ok ? { ...r, json: Buffer.from(r.json.buffer, r.json.byteOffset, r.json.byteLength).toString('latin1') } : r,
    );
    assert.deepEqual(got, expected);
  });
});

test('claim and ack bodies cross unparsed on the lanes; the worker end parses them, answers a bad one itself', async () => {
  const seen: TopicRequest[] = [];
  const serve = () => answering(async (req) => (seen.push(req), req.op === 'claim' ? fail('topic_not_found', 'no') : ok('{')));
  await withRig({ serve }, async ({ client, toWorker }) => {
    const body = (s: string) => new Uint8Array(Buffer.from(s));
    const results = await Promise.all([
      client.request({ op: 'claimBody', topic: 'q', body: body('{"node":"w","max":3}') }),
      client.request({ op: 'ackBody', topic: 'q', body: body('{"node":"w","seqs":[4],"lease_ids":[""],"ttl":1}') }),
      client.request({ op: 'ackBody', topic: 'q', body: body('{"node":"w","seqs":[],"x":1}') }),
      client.request({ op: 'claimBody', topic: 'r', body: body('{"node":"v","y":2}'), waitId: 77 }),
    ]);
    assert.equal(toWorker.length, 1, 'one message');
    assert.deepEqual(toWorker[0]!.reqs, [], 'no request crossed as an object');
    assert.deepEqual(seen, [
      { op: 'claim', topic: 'q', node: 'w', max: 3, leaseMs: null, waitMs: 0 },
      { op: 'ack', topic: 'q', node: 'w', seqs: [4], leaseIds: [''] },
      { op: 'claim', topic: 'r', node: 'v', max: 1, leaseMs: null, waitMs: 0, waitId: 77 }, // main's id crosses on the lanes
    ]);
    const [claimed, acked, refused, missing] = results;
    assert.ok(claimed && !claimed.ok && claimed.unknownFields === undefined);
    assert.ok(acked?.ok);
    assert.deepEqual(acked.unknownFields, ['ttl']);
    assert.ok(refused && !refused.ok, 'the bad body is answered by the channel, never handled');
    assert.deepEqual(
      { code: refused.code, message: refused.message, detail: refused.detail, unknownFields: refused.unknownFields },
      { code: 'invalid_request', message: 'seqs must name at least one seq', detail: { field: 'seqs' }, unknownFields: ['x'] },
    );
    assert.ok(missing && !missing.ok);
    assert.deepEqual([missing.code, missing.unknownFields], ['topic_not_found', ['y']], 'unknown fields ride on an error too');
  });
});

/** A watch batch event whose record bytes are `text` in a buffer of its own. */
function watchBatch(topic: string, text: string, buf = new Uint8Array(Buffer.from(text))): WatchEvent {
  return {
    k: 'batch',
    topic,
    instanceId: 1,
    from: 0,
    to: 1,
    head: 1,
    durableHead: 1,
    dedupeNode: false,
    stale: false,
    buf,
    offs: new Uint32Array([0, buf.byteLength]),
    nodes: [],
    nodeIdx: new Int32Array([-1]),
  };
}

/** What main saw, in the order its reply writes and event writes would run (both are microtasks). */
function orderLog(): { log: string[]; onEvents: (evs: WorkerEvent[]) => void } {
  const log: string[] = [];
  // The watch pacer writes an idle stream's frames in a microtask queued by the hand-on, and a
  // request's reply runs in its promise's reaction: the log keeps their order.
  const onEvents = (evs: WorkerEvent[]): void =>
    queueMicrotask(() => log.push(...evs.map((e) => (e.k === 'jobs' ? `jobs:${e.connId}` : `${e.k}:${e.topic}`))));
  return { log, onEvents };
}

test("a turn's results and events cross as one message, handed on in the worker's order", async () => {
  const { log, onEvents } = orderLog();
  // The worker's turn: an event before any result, one between the two results, one after.
  const serve =
    (server: RequestServer): AnswerWith =>
    (req, id, answer) => {
      if (req.topic === 'a') server.event(watchBatch('before-a', 'x'));
      answer(id, ok(`{"t":"${req.topic}"`));
      if (req.topic === 'a') server.event({ k: 'jobs', connId: 7, topic: 'q', frames: new Uint8Array(Buffer.from('id: 1\n\n')) });
      if (req.topic === 'b') server.event({ k: 'durable', topic: 'after-b', instanceId: 1, durableHead: 1, head: 1 });
    };
  await withRig({ serve, onEvents }, async ({ client, toMain }) => {
    const calls = ['a', 'b'].map((t) => client.request({ op: 'state', topic: t, touch: false }).then(() => log.push(`result:${t}`)));
    await Promise.all(calls);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(sizes(toMain), [2], 'one message to main for the turn: both results and the three events');
    assert.equal(client.messagesIn, 1);
    assert.deepEqual(log, ['batch:before-a', 'result:a', 'jobs:7', 'result:b', 'durable:after-b'], "the worker's order");
  });
});

test('a turn with only events crosses as one message without results', async () => {
  const { log, onEvents } = orderLog();
  await withRig({ serve: () => answering(async () => ok('{')), onEvents }, async ({ client, server }) => {
    server.event(watchBatch('t1', 'a'));
    server.event({ k: 'deleted', topic: 't2', instanceId: 3, head: 9 });
    while (log.length < 2) await new Promise((r) => setTimeout(r, 2));
    assert.deepEqual(log, ['batch:t1', 'deleted:t2']);
    assert.equal(client.messagesIn, 1, 'the two events of one turn are one message');
  });
});

test('event buffers of their own are transferred, a shared one is cloned, and each arrives intact', async () => {
  const got: WorkerEvent[] = [];
  const onEvents = (evs: WorkerEvent[]) => void got.push(...evs);
  await withRig({ serve: () => answering(async () => ok('{')), onEvents }, async ({ server }) => {
    const own = new Uint8Array(Buffer.from('{"$seq":1}'));
    const frames = new Uint8Array(Buffer.from('id: 4\nevent: job\ndata: {}\n\n'));
    const pooled = Buffer.from('{"$seq":2}'); // a slice of Node's pool slab: never transferred
    assert.notEqual(pooled.byteLength, pooled.buffer.byteLength);
    server.event(watchBatch('own', '', own));
    server.event({ k: 'jobs', connId: 1, topic: 'q', frames });
    server.event(watchBatch('pooled', '', pooled));
    server.event(watchBatch('own-again', '', own)); // the same buffer twice moves once
    while (got.length < 4) await new Promise((r) => setTimeout(r, 2));
    assert.equal(own.byteLength, 0, 'a batch buffer of its own moved (transferred)');
    assert.equal(frames.byteLength, 0, 'job frames of their own moved');
    assert.equal(pooled.byteLength, 10, 'a pooled buffer was cloned: the worker keeps its view');
    const text = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString();
    const [a, j, p, again] = got as [WatchBatch, Extract<WorkerEvent, { k: 'jobs' }>, WatchBatch, WatchBatch];
    assert.equal(text(a.buf), '{"$seq":1}');
    assert.equal(text(j.frames), 'id: 4\nevent: job\ndata: {}\n\n');
    assert.equal(text(p.buf), '{"$seq":2}');
    assert.equal(text(again.buf), '{"$seq":1}');
  });
});

test('in a big batch answered over several turns, an event waits for the results settled before it', async () => {
  const { log, onEvents } = orderLog();
  const n = 300;
  const serve =
    (server: RequestServer): AnswerWith =>
    (req, id, answer) => {
      answer(id, ok('{'));
      if (req.topic === 't149') server.event(watchBatch('after-149', 'x'));
      if (req.topic === `t${n - 1}`) server.event(watchBatch('last', 'x'));
    };
  await withRig({ serve, onEvents }, async ({ client }) => {
    const calls = Array.from({ length: n }, (_, i) =>
      client.request({ op: 'state', topic: `t${i}`, touch: false }).then(() => log.push(`result:t${i}`)),
    );
    await Promise.all(calls);
    await new Promise((r) => setImmediate(r));
    assert.equal(log.length, n + 2);
    assert.equal(log.indexOf('batch:after-149'), 150, 'after result 149 (answered in the second turn), before result 150');
    assert.equal(log.indexOf('batch:last'), n + 1, 'an event after the last result comes last');
    assert.equal(log[149], 'result:t149');
  });
});

test('a batch of big bodies is stepped in slices, in order, with other work between them', async () => {
  // Each body is half a slice: every slice steps two, then the worker's loop turns (an immediate
  // queued by a step runs before the next slice), and a batch sent meanwhile waits its turn.
  const half = SLICE_BODY_BYTES / 2;
  const log: string[] = [];
  const serve = (): AnswerWith => (req, id, answer) => {
    const topic = (req as AppendRequest).topic;
    log.push(topic);
    setImmediate(() => log.push(`turn after ${topic}`));
    answer(id, ok(`{"topic":"${topic}"`));
  };
  await withRig({ serve }, async ({ client, toWorker }) => {
    const body = () => new Uint8Array(half);
    const first = ['a0', 'a1', 'a2', 'a3', 'a4'].map((t) => client.request(append(t, body())));
    await new Promise((r) => setImmediate(r)); // the first batch leaves in this turn
    const second = ['b0'].map((t) => client.request(append(t, body())));
    await Promise.all([...first, ...second]);
    assert.deepEqual(sizes(toWorker), [5, 1], 'two batches crossed');
    const steps = log.filter((x) => !x.startsWith('turn'));
    assert.deepEqual(steps, ['a0', 'a1', 'a2', 'a3', 'a4', 'b0'], 'stepped in arrival order, the second batch after the first');
    // Slices of two: a0 a1 | a2 a3 | a4 (+ b0 once it came): a turn passed between a1 and a2, and between a3 and a4.
    assert.ok(log.indexOf('turn after a0') < log.indexOf('a2'), `a turn between the first two slices: ${log.join(', ')}`);
    assert.ok(log.indexOf('turn after a2') < log.indexOf('a4'), `a turn between the second and third: ${log.join(', ')}`);
  });
});

test('a batch of small bodies is stepped in one turn', async () => {
  const log: string[] = [];
  const serve = (): AnswerWith => (req, id, answer) => {
    const topic = (req as AppendRequest).topic;
    log.push(topic);
    setImmediate(() => log.push('turn'));
    answer(id, ok(`{"topic":"${topic}"`));
  };
  await withRig({ serve }, async ({ client }) => {
    const calls = Array.from({ length: 50 }, (_, i) =>
      client.request(append(`s${i}`, new Uint8Array(Buffer.from('{"records":[{"data":1}]}')))),
    );
    await Promise.all(calls);
    assert.equal(log.indexOf('turn'), 50, 'all 50 stepped before any immediate ran');
  });
});
