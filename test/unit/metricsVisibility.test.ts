// The metrics a key with name prefixes sees (src/http/metricsVisibility.ts): samples naming a
// topic or router it may not name go, whatever else their labels hold; escaped label values
// are read as the names they stand for; comments and server-wide samples stay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { visibleJson, visiblePrometheus } from '../../src/http/metricsVisibility.js';

const visible = { topic: (n: string) => n.startsWith('t42.'), router: (n: string) => n === 'r.ok' };

test('samples naming a hidden topic or router are left out; the rest stays, in order', () => {
  const text = [
    '# HELP spool_topic_head_seq Head seq of each topic.',
    '# TYPE spool_topic_head_seq gauge',
    'spool_topic_head_seq{topic="t42.a"} 3',
    'spool_topic_head_seq{topic="other"} 9',
    'spool_topic_head_seq{topic="t42.\\"q\\\\"} 4',
    'spool_router_blocked{router="r.ok",code=""} 0',
    'spool_router_blocked{code="x",router="r.no"} 1',
    'spool_http_requests_total{route="/v0/topics/:topic",method="GET",status="200"} 5',
    'spool_topics 4',
    '',
  ].join('\n');
  assert.equal(
    visiblePrometheus(text, visible),
    [
      '# HELP spool_topic_head_seq Head seq of each topic.',
      '# TYPE spool_topic_head_seq gauge',
      'spool_topic_head_seq{topic="t42.a"} 3',
      'spool_topic_head_seq{topic="t42.\\"q\\\\"} 4',
      'spool_router_blocked{router="r.ok",code=""} 0',
      'spool_http_requests_total{route="/v0/topics/:topic",method="GET",status="200"} 5',
      'spool_topics 4',
      '',
    ].join('\n'),
  );
});

test('a label value that merely contains topic=" is not a topic label', () => {
  const line = 'spool_x{route="a,topic=\\"other\\""} 1';
  assert.equal(visiblePrometheus(line, visible), line);
});

test('the JSON form keeps only the visible routers', () => {
  const body = { topics: 3, router_stats: [{ router: 'r.ok' }, { router: 'r.no' }] };
  assert.deepEqual(visibleJson(body, visible), { topics: 3, router_stats: [{ router: 'r.ok' }] });
});
