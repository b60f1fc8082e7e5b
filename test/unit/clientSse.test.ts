// The client's SSE decoder (src/client/sse.ts) against the WHATWG EventSource parsing rules, fed
// in every possible chunking, and the stream reader's idle watchdog.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseDecoder, readSse, type SseEvent } from '../../src/client/sse.js';
import { SpoolError } from '../../src/client/errors.js';

function decodeIn(text: string, cuts: number[]): { events: SseEvent[]; dec: SseDecoder } {
  const dec = new SseDecoder();
  const events: SseEvent[] = [];
  let at = 0;
  for (const c of [...cuts, text.length]) {
    events.push(...dec.push(text.slice(at, c)));
    at = c;
  }
  events.push(...dec.finish());
  return { events, dec };
}

const spoolStream =
  'retry: 2000\n\n: hb\n\n' +
  'id: eyJ0IjoyfQ\nevent: record\ndata: {"topic":"t","records":[{"$seq":1},{"$seq":2}],"from_seq":0,"to_seq":2,"head_seq":2}\n\n' +
  'id: eyJ0IjoyfQ\nevent: caught-up\ndata: {"topic":"t","head_seq":2}\n\n' +
  'event: error\ndata: {"code":503,"error":"shutting_down","message":"bye","terminal":true,"retry_after_ms":1000}\n\n';

test("spool's frames decode to events with their ids; comments and retry blocks dispatch nothing", () => {
  const { events, dec } = decodeIn(spoolStream, []);
  assert.deepEqual(
    events.map((e) => [e.type, e.lastEventId]),
    [
      ['record', 'eyJ0IjoyfQ'],
      ['caught-up', 'eyJ0IjoyfQ'],
      ['error', 'eyJ0IjoyfQ'], // an error frame has no id: the last one persists (EventSource rule)
    ],
  );
  assert.equal(JSON.parse(events[0]!.data).to_seq, 2);
  assert.equal(dec.retryMs, 2000);
});

test('every split of the stream into two chunks gives the same events (CR/LF at chunk edges included)', () => {
  const crlf = spoolStream.replace(/\n/g, '\r\n');
  const cr = spoolStream.replace(/\n/g, '\r');
  for (const text of [spoolStream, crlf, cr]) {
    const whole = decodeIn(text, []).events;
    assert.equal(whole.length, 3);
    for (let i = 0; i <= text.length; i++)
      assert.deepEqual(decodeIn(text, [i]).events, whole, `cut at ${i} of ${JSON.stringify(text.slice(0, 20))}`);
  }
});

test('field rules: data lines join with LF, one optional space, unknown fields ignored, NUL ids ignored, no data = no event', () => {
  const text = 'data:a\ndata:  b\ndata\nfoo: bar\nid: 1\n\nevent: x\nid: 2\0z\n\nevent: y\n\nid\ndata: c\n\n';
  const { events } = decodeIn(text, []);
  assert.deepEqual(events, [
    { type: 'message', data: 'a\n b\n', lastEventId: '1' },
    { type: 'message', data: 'c', lastEventId: '' }, // `id` with no value resets it; x and y had no data
  ]);
});

test('an unfinished event at the end of the stream is dropped; a long data line in many chunks is whole', () => {
  const line = 'x'.repeat(100_000);
  const text = `event: record\ndata: ${line}\n\nevent: record\ndata: partial`;
  const cuts = Array.from({ length: 100 }, (_, i) => (i + 1) * 1001);
  const { events } = decodeIn(text, cuts);
  assert.equal(events.length, 1);
  assert.equal(events[0]!.data, line);
});

function bodyOf(chunks: string[], holdMs?: number): Response {
  const enc = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    async start(ctl) {
      for (const c of chunks) ctl.enqueue(enc.encode(c));
      if (holdMs === undefined) ctl.close();
    },
  });
  return new Response(stream);
}

test('readSse yields the events of a body, split UTF-8 included', async () => {
  const bytes = new TextEncoder().encode('event: record\ndata: é€😀\n\n');
  const stream = new ReadableStream<Uint8Array>({
    start(ctl) {
      for (const b of bytes) ctl.enqueue(new Uint8Array([b]));
      ctl.close();
    },
  });
  const got: SseEvent[] = [];
  for await (const ev of readSse(new Response(stream), new SseDecoder(), { idleMs: 0 })) got.push(ev);
  assert.deepEqual(got, [{ type: 'record', data: 'é€😀', lastEventId: '' }]);
});

test('readSse gives up on a silent stream after idleMs with SpoolError timeout', async () => {
  const t0 = Date.now();
  const got: string[] = [];
  await assert.rejects(
    (async () => {
      for await (const ev of readSse(bodyOf(['event: a\ndata: 1\n\n'], 1), new SseDecoder(), { idleMs: 150 })) got.push(ev.type);
    })(),
    (e: unknown) => e instanceof SpoolError && e.code === 'timeout',
  );
  assert.deepEqual(got, ['a']);
  assert.ok(Date.now() - t0 >= 140, `gave up after ${Date.now() - t0} ms`);
});
