// The Accept rule of SSE GETs (docs/API.md "Which error wins"): text/event-stream, text/* or */* with q != 0,
// the most specific of them deciding (RFC 9110); parameters ignored; absent or no matching range → 406.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acceptsEventStream } from '../../src/streams/sse/wire.js';

const yes = (h: string) => assert.equal(acceptsEventStream(h), true, JSON.stringify(h));
const no = (h: string | undefined) => assert.equal(acceptsEventStream(h), false, JSON.stringify(h));

test('the three matching ranges are accepted', () => {
  yes('text/event-stream');
  yes('text/*');
  yes('*/*');
});

test('absent, empty or non-matching headers are refused', () => {
  no(undefined);
  no('');
  no(' ');
  no(',');
  no('application/json');
  no('text/html');
  no('text/plain');
  no('application/*');
  no('*/event-stream');
  no('text/event-streams');
  no('text/event');
  no('event-stream');
  no('text');
  no('text/html, application/json;q=0.9, image/*');
  no('__proto__');
  no('constructor, toString;q=1');
});

test('case-insensitive', () => {
  yes('TEXT/EVENT-STREAM');
  yes('Text/Event-Stream');
  yes('TEXT/*');
  no('TEXT/EVENT-STREAM;Q=0');
});

test('parameters and q-values other than 0 are ignored', () => {
  yes('text/event-stream; charset=utf-8');
  yes('text/event-stream;charset=utf-8');
  yes('text/event-stream;q=0.5');
  yes('text/event-stream; q=1');
  yes('text/event-stream;q=1.0');
  yes('text/event-stream;q=0.001');
  yes('*/*;q=0.1');
  yes('text/*; level=1; q=0.2');
  yes(' text/event-stream ');
  yes('text/event-stream ; q=0.3');
});

test('q=0 refuses a range', () => {
  no('text/event-stream;q=0');
  no('text/event-stream; q=0');
  no('text/event-stream;q=0.0');
  no('text/event-stream;q=0.000');
  no('text/event-stream; charset=utf-8; q=0');
  no('text/*;q=0');
  no('*/*;q=0');
  no('text/event-stream;q=0, text/*;q=0, */*;q=0');
});

test('lists: any acceptable range is enough', () => {
  yes('application/json, text/event-stream');
  yes('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'); // a browser's default
  yes('application/json;q=0.9,text/*;q=0.1');
  yes('*/*;q=0, text/event-stream');
  yes('application/json,,text/event-stream');
  no('application/json, text/html;q=1');
  no('application/json, */*;q=0');
});

test('the most specific matching range decides (RFC 9110)', () => {
  no('text/event-stream;q=0, */*');
  no('*/*, text/event-stream;q=0');
  no('text/event-stream;q=0, text/*');
  no('text/*;q=0, */*');
  no('text/*;q=0, */*;q=1, application/json');
  yes('text/*;q=0, text/event-stream');
  yes('text/event-stream, */*;q=0');
  yes('text/event-stream;q=0, text/event-stream;q=0.5'); // the same range twice: one accepts
});
