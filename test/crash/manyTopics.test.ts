// Many small topics across a SIGKILL (docs/ARCHITECTURE.md "Many topics"): recovery loads topics from the snapshot several at
// a time and reads the segments of topics created since ahead of the WAL replay. Every
// acknowledged `fsync` record of every topic must come back, byte for byte and in order, whichever
// path recovered its topic: 600 topics in the snapshot of a clean stop (some appended to again
// after it), 600 created after it and known only from the WAL, then SIGKILL. Each worker keeps at
// most 64 segment files open (SERVICE_SEGMENT_OPEN_FILES), so writes close and reopen files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { client, killServersAfterFile, startServer, tempDir } from '../helpers/server.js';

killServersAfterFile();

const name = (i: number) => `mt.${String(i).padStart(4, '0')}`;
const WRITERS = 16;

/** Runs `fn(i)` for i in [from, to) on WRITERS concurrent lanes. */
async function lanes(from: number, to: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < to) await fn(next++);
    }),
  );
}

test('every acked fsync record of 1200 small topics survives SIGKILL, from snapshot and WAL alike', { timeout: 240_000 }, async () => {
  const dataDir = tempDir('spool-many-topics-');
  // Checkpoints only at start and stop: the second server's topics live in the WAL alone.
  const env = {
    SERVICE_WORKERS: '2',
    SERVICE_CHECKPOINT_MS: '3600000',
    SERVICE_CHECKPOINT_WAL_BYTES: '0',
    SERVICE_SEGMENT_OPEN_FILES: '64',
  };
  const openFds = (pid: number) => fs.readdirSync(`/proc/${pid}/fd`).length;
  const acked = new Map<string, unknown[]>();
  const append = async (c: ReturnType<typeof client>, topic: string, records: unknown[]) => {
    const r = await c.post(`/v0/topics/${topic}`, { records: records.map((data) => ({ data })) });
    assert.ok(r.status === 200 || r.status === 201, `${topic}: ${r.status} ${r.text}`);
    acked.set(topic, [...(acked.get(topic) ?? []), ...records]);
  };

  let srv = await startServer({ dataDir, env });
  let c = client(srv.url);
  await lanes(0, 600, async (i) => {
    assert.equal((await c.put(`/v0/topics/${name(i)}`, { durability: 'fsync' })).status, 201);
    await append(c, name(i), [{ i, k: 0 }, `text-${i}`, i]);
  });
  assert.equal(await srv.stop(), 0, 'clean stop: the snapshot holds the first 600 topics');

  srv = await startServer({ dataDir, env });
  c = client(srv.url);
  await lanes(0, 1200, async (i) => {
    if (i < 600) {
      if (i % 3 === 0) await append(c, name(i), [{ i, k: 1 }]);
      return;
    }
    assert.equal((await c.put(`/v0/topics/${name(i)}`, { durability: 'fsync' })).status, 201);
    await append(c, name(i), [{ i, k: 0 }, null, [i, 'x'.repeat(i % 50)]]);
  });
  // 1200 topics have written; the process holds the bounded segment files, not one per topic.
  const fds = openFds(srv.proc.pid!);
  assert.ok(fds < 2 * 64 + 150, `${fds} open file descriptors`);
  await srv.kill();

  srv = await startServer({ dataDir, env });
  c = client(srv.url);
  const listed: string[] = [];
  for (let cursor: string | undefined, first = true; first || cursor; first = false) {
    const page = await c.get(`/v0/topics?prefix=mt.&page_size=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    listed.push(...page.body.topics.map((t: { topic: string }) => t.topic));
    cursor = page.body.next_cursor;
  }
  assert.equal(listed.length, 1200);
  await lanes(0, 1200, async (i) => {
    const want = acked.get(name(i))!;
    const d = await c.post(`/v0/topics/${name(i)}/diff`, { from_seq: 0, limit: 100 });
    assert.equal(d.status, 200, d.text);
    assert.deepEqual(
      d.body.records.map((r: { data: unknown }) => r.data),
      want,
      `${name(i)} after the restart`,
    );
    assert.deepEqual(
      d.body.records.map((r: { $seq: number }) => r.$seq),
      want.map((_, k) => k + 1),
    );
  });
  await srv.stop();
});
