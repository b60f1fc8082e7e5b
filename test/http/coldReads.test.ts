// Reads of records whose texts left the worker's cache come back from segment files, byte for
// byte, including after a restart (when every record starts cold).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, client } from '../helpers/server.js';

async function readAll(c: ReturnType<typeof client>, topic: string): Promise<any[]> {
  const out: any[] = [];
  let from = 0;
  for (;;) {
    const r = await c.post(`/v0/topics/${topic}/diff`, { from_seq: from, limit: 333, include_tags: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    out.push(...r.body.records);
    from = r.body.next_from_seq;
    if (r.body.caught_up) return out;
  }
}

test('cold records read back from segments are identical to what was appended', async () => {
  const env = { SERVICE_SEGMENT_CACHE_BYTES: '4096', SERVICE_SEGMENT_BYTES: '65536' };
  const srv = await startServer({ env });
  const c = client(srv.url);
  const sent: string[] = [];
  try {
    for (let b = 0; b < 20; b++) {
      const records = Array.from({ length: 50 }, (_, i) => {
        const n = b * 50 + i;
        sent.push(`{"n":${n},"big":12345678901234567890,"f":1e400,"s":"\\u00e9${'x'.repeat(n % 97)}"}`);
        return `{"data":${sent[n]},"tag":"t${n % 7}","meta":{"k":${n}}}`;
      });
      const r = await c.post('/v0/topics/cold', `{"records":[${records.join(',')}]}`);
      assert.equal(r.status, b === 0 ? 201 : 200);
    }
    const check = async () => {
      const recs = await readAll(c, 'cold');
      assert.equal(recs.length, 1000);
      const raw = await c.post('/v0/topics/cold/diff', { from_seq: 500, limit: 1 });
      assert.ok(raw.text.includes(`"data":${sent[500]}`), raw.text.slice(0, 300));
      recs.forEach((r, i) => {
        assert.equal(r.$seq, i + 1);
        assert.equal(r.$tag, `t${i % 7}`);
        assert.deepEqual(r.meta, { k: i });
      });
    };
    await check();
    await srv.kill();
    const again = await startServer({ dataDir: srv.dataDir, env });
    try {
      const c2 = client(again.url);
      const recs = await readAll(c2, 'cold');
      assert.equal(recs.length, 1000);
      const raw = await c2.post('/v0/topics/cold/diff', { from_seq: 999, limit: 1 });
      assert.ok(raw.text.includes(`"data":${sent[999]}`));
    } finally {
      await again.stop();
    }
  } finally {
    await srv.kill();
  }
});

test('with no segment cache at all, diffs that span frames written moments ago all answer', async () => {
  // Every text leaves memory as soon as its frame is in a segment, so a page's parts are read
  // back in turn while the newest part leaves meanwhile: the read must still make progress.
  const env = { SERVICE_SEGMENT_CACHE_BYTES: '0', SERVICE_SEGMENT_BYTES: '1048576', SERVICE_PACK_BYTES: '1048576' };
  const srv = await startServer({ env });
  const c = client(srv.url);
  try {
    await c.put('/v0/topics/nocache', { durability: 'disk' });
    let seen = 0;
    for (let b = 0; b < 30; b++) {
      const records = Array.from({ length: 100 }, (_, i) => ({ data: { b, i, pad: 'p'.repeat(1000) } }));
      const a = await c.post('/v0/topics/nocache', { records });
      assert.equal(a.status, 200, JSON.stringify(a.body));
      let from = Math.max(0, a.body.last_seq - 150);
      while (from < a.body.last_seq) {
        const d = await c.post('/v0/topics/nocache/diff', { from_seq: from, limit: 200 });
        assert.equal(d.status, 200, JSON.stringify(d.body));
        assert.ok(d.body.records.length > 0);
        d.body.records.forEach((r: { $seq: number }, i: number) => assert.equal(r.$seq, from + 1 + i));
        seen += d.body.records.length;
        from = d.body.next_from_seq;
      }
    }
    assert.ok(seen >= 30 * 100);
  } finally {
    await srv.kill();
  }
});
