// Pack files with the real server and SIGKILL (docs/FORMAT.md "Pack files"; docs/ARCHITECTURE.md "Pack files"):
// - thousands of small fsync topics, some from the snapshot of a clean stop and appended to
//   again, some only in the WAL, a few grown past the pack threshold into own segments: every
//   acked record comes back after SIGKILL, and the files on disk are far fewer than the topics;
// - the worker count changes between restarts (2 → 3 → 1): every record is still there, topics
//   deleted under one count stay deleted, and once every topic is gone the packs are unlinked;
// - a data dir written without packs (SERVICE_PACK_BYTES=0: a directory and segment files per
//   topic, the layout before packs) recovers with packs on, its topics keep their files, new
//   topics go to packs, and both survive SIGKILL;
// - a topic made since the snapshot whose last appends survive only in its pack (the WAL's tail
//   lost, as a power loss may do when the pack's write-back ran and the WAL's did not) gets them
//   back: recovery matches held packed frames against the replayed WAL frames and reads back the
//   ones the WAL no longer has.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { client, killServersAfterFile, startServer, tempDir } from '../helpers/server.js';
import { decodeJsonBody, probeFrame } from '../../src/format/frame.js';
import { FrameType, WAL_HEADER_BYTES } from '../../src/format/constants.js';

killServersAfterFile();

const name = (i: number) => `pk.${String(i).padStart(5, '0')}`;
const WRITERS = 16;
type Client = ReturnType<typeof client>;

async function lanes(from: number, to: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < to) await fn(next++);
    }),
  );
}

function fileCount(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) n += e.isDirectory() ? fileCount(path.join(dir, e.name)) + 1 : 1;
  return n;
}

const packFiles = (dataDir: string) => (fs.existsSync(path.join(dataDir, 'packs')) ? fs.readdirSync(path.join(dataDir, 'packs')) : []);

/** What each topic was acked, in order. */
class Acked {
  readonly records = new Map<string, unknown[]>();
  async append(c: Client, topic: string, records: unknown[]): Promise<void> {
    const r = await c.post(`/v0/topics/${topic}`, { records: records.map((data) => ({ data })) });
    assert.ok(r.status === 200 || r.status === 201, `${topic}: ${r.status} ${r.text}`);
    this.records.set(topic, [...(this.records.get(topic) ?? []), ...records]);
  }
  async check(c: Client, label: string): Promise<void> {
    const topics = [...this.records.keys()];
    await lanes(0, topics.length, async (k) => {
      const topic = topics[k]!;
      const want = this.records.get(topic)!;
      const got: unknown[] = [];
      for (let from = 0; ;) {
        const d = await c.post(`/v0/topics/${topic}/diff`, { from_seq: from, limit: 1000 });
        assert.equal(d.status, 200, `${label}: ${topic}: ${d.text}`);
        got.push(...d.body.records.map((r: { data: unknown }) => r.data));
        if (d.body.records.length === 0 || d.body.caught_up) break;
        from = d.body.next_from_seq;
      }
      assert.deepEqual(got, want, `${label}: ${topic}`);
    });
  }
}

test(
  'thousands of small fsync topics survive SIGKILL from packs; files on disk stay far below the topic count',
  { timeout: 300_000 },
  async () => {
    const dataDir = tempDir('spool-packs-');
    // The 64 KiB pack threshold (the default is 1 MiB) lets a few topics grow past it quickly.
    const env = {
      SERVICE_WORKERS: '2',
      SERVICE_CHECKPOINT_MS: '3600000',
      SERVICE_CHECKPOINT_WAL_BYTES: '0',
      SERVICE_PACK_FILE_BYTES: String(1 << 20),
      SERVICE_PACK_BYTES: String(64 << 10),
    };
    const acked = new Acked();
    const N = 3000;
    let srv = await startServer({ dataDir, env });
    let c = client(srv.url);
    await lanes(0, N / 2, async (i) => {
      assert.equal((await c.put(`/v0/topics/${name(i)}`, { durability: 'fsync' })).status, 201);
      await acked.append(c, name(i), [{ i, k: 0 }, `text-${i}`, i]);
    });
    // A few topics grow past the 64 KiB pack threshold: their first segment stays packed, the
    // rest goes to segment files of their own.
    for (let i = 0; i < 4; i++)
      for (let k = 0; k < 10; k++)
        await acked.append(
          c,
          name(i),
          Array.from({ length: 20 }, (_, j) => ({ k, j, pad: 'p'.repeat(400) })),
        );
    assert.equal(await srv.stop(), 0, 'clean stop: the snapshot holds the first half');

    srv = await startServer({ dataDir, env });
    c = client(srv.url);
    await lanes(0, N, async (i) => {
      if (i < N / 2) {
        if (i % 3 === 0) await acked.append(c, name(i), [{ i, k: 1 }]);
        return;
      }
      assert.equal((await c.put(`/v0/topics/${name(i)}`, { durability: 'fsync' })).status, 201);
      await acked.append(c, name(i), [{ i, k: 0 }, null, [i, 'x'.repeat(i % 50)]]);
    });
    await srv.kill();
    const files = fileCount(dataDir);
    assert.ok(files < 60, `${files} files and directories for ${N} topics`);
    assert.ok(fs.readdirSync(path.join(dataDir, 'topics')).length === 4, 'only the topics that grew have directories');

    srv = await startServer({ dataDir, env });
    c = client(srv.url);
    await acked.check(c, 'after SIGKILL');
    // And once more after the recovery's checkpoint moved them into the snapshot.
    for (const i of [0, 5, N - 1]) await acked.append(c, name(i), ['after']);
    await srv.kill();
    srv = await startServer({ dataDir, env });
    await acked.check(client(srv.url), 'after a second SIGKILL');
    await srv.stop();
  },
);

test(
  'a worker-count change (2 → 3 → 1) keeps every record and delete; packs go once nothing lives in them',
  { timeout: 300_000 },
  async () => {
    const dataDir = tempDir('spool-packs-workers-');
    const env = (workers: number) => ({
      SERVICE_WORKERS: String(workers),
      SERVICE_CHECKPOINT_MS: '3600000',
      SERVICE_CHECKPOINT_WAL_BYTES: '0',
      SERVICE_PACK_FILE_BYTES: String(1 << 16),
    });
    const acked = new Acked();
    const N = 600;
    let srv = await startServer({ dataDir, env: env(2) });
    let c = client(srv.url);
    await lanes(0, N, async (i) => acked.append(c, name(i), [{ i }, 'x'.repeat(100 + (i % 200))]));
    await srv.kill();
    assert.ok(packFiles(dataDir).every((p) => p.endsWith('-2.log')));

    // Three workers: every topic's frames are in packs written by two.
    srv = await startServer({ dataDir, env: env(3) });
    c = client(srv.url);
    await acked.check(c, '3 workers after SIGKILL');
    await lanes(0, N, async (i) => {
      if (i % 4 === 0) {
        assert.equal((await c.del(`/v0/topics/${name(i)}`)).status, 200);
        acked.records.delete(name(i));
      } else if (i % 4 === 1) await acked.append(c, name(i), [{ i, w: 3 }]);
    });
    await srv.kill();

    srv = await startServer({ dataDir, env: env(1) });
    c = client(srv.url);
    await acked.check(c, '1 worker after SIGKILL');
    for (const i of [0, 4, 8]) assert.equal((await c.get(`/v0/topics/${name(i)}`)).status, 404, `${name(i)} stays deleted`);
    // Every topic gone: a clean stop's checkpoint unlinks every pack but the one being written, and
    // the next start's checkpoint that one too.
    await lanes(0, N, async (i) => {
      if (acked.records.has(name(i))) assert.equal((await c.del(`/v0/topics/${name(i)}`)).status, 200);
    });
    assert.equal(await srv.stop(), 0);
    srv = await startServer({ dataDir, env: env(2) });
    c = client(srv.url);
    assert.equal((await c.get('/v0/topics?prefix=pk.')).body.topics.length, 0);
    assert.equal(await srv.stop(), 0);
    assert.deepEqual(packFiles(dataDir), [], 'no pack is left once nothing lives in any');
  },
);

test(
  'a data dir without packs (own files per topic) recovers with packs on, and old and new topics survive SIGKILL',
  { timeout: 300_000 },
  async () => {
    const dataDir = tempDir('spool-packs-upgrade-');
    const base = { SERVICE_WORKERS: '2', SERVICE_CHECKPOINT_MS: '3600000', SERVICE_CHECKPOINT_WAL_BYTES: '0' };
    const acked = new Acked();
    let srv = await startServer({ dataDir, env: { ...base, SERVICE_PACK_BYTES: '0' } });
    let c = client(srv.url);
    await lanes(0, 200, async (i) => acked.append(c, name(i), [{ i }, `old-${i}`]));
    assert.equal(await srv.stop(), 0);
    assert.equal(packFiles(dataDir).length, 0);
    assert.equal(fs.readdirSync(path.join(dataDir, 'topics')).length, 200, 'the layout before packs: a directory per topic');

    srv = await startServer({ dataDir, env: base });
    c = client(srv.url);
    await acked.check(c, 'old layout, packs on');
    await lanes(0, 400, async (i) => acked.append(c, name(i), [{ i, new: true }]));
    await srv.kill();
    assert.equal(fs.readdirSync(path.join(dataDir, 'topics')).length, 200, 'old topics keep their files; new ones have none');
    assert.ok(packFiles(dataDir).length >= 1);

    srv = await startServer({ dataDir, env: base });
    await acked.check(client(srv.url), 'mixed layout after SIGKILL');
    await srv.stop();
  },
);

test(
  'packed frames whose WAL copies were lost come back; the frames the WAL still has are not read twice',
  { timeout: 120_000 },
  async () => {
    const dataDir = tempDir('spool-packs-tail-');
    const env = { SERVICE_WORKERS: '1', SERVICE_CHECKPOINT_MS: '3600000', SERVICE_CHECKPOINT_WAL_BYTES: '0' };
    let srv = await startServer({ dataDir, env });
    let c = client(srv.url);
    const acked = new Acked();
    assert.equal((await c.put('/v0/topics/tail.lost', { durability: 'disk' })).status, 201);
    for (const k of [1, 2, 3, 4]) await acked.append(c, 'tail.lost', [{ k }, `r${k}`]);
    await new Promise((r) => setTimeout(r, 300)); // the pack writes (SERVICE_SEGMENT_WRITE_DELAY_MS)
    await srv.kill();

    // Cut the WAL at tail.lost's third append: appends 3 and 4 live only in the pack.
    const walDir = path.join(dataDir, 'wal');
    let id = -1;
    let appends = 0;
    let cut: { file: string; buf: Buffer; off: number } | undefined;
    for (const name of fs
      .readdirSync(walDir)
      .filter((n) => n.endsWith('.wal'))
      .sort()) {
      const file = path.join(walDir, name);
      const buf = fs.readFileSync(file);
      for (let off = WAL_HEADER_BYTES; off < buf.length;) {
        const p = probeFrame(buf, off, buf.length);
        if (!p.ok) break;
        const f = p.frame;
        if (f.type === FrameType.TOPIC_CREATE && (decodeJsonBody(buf, f) as { name: string }).name === 'tail.lost') id = f.topicId;
        if (f.type === FrameType.APPEND && f.topicId === id && ++appends === 3) cut = { file, buf, off };
        off += f.size;
      }
    }
    assert.ok(cut, 'the third append is in the WAL');
    cut.buf.fill(0, cut.off);
    fs.writeFileSync(cut.file, cut.buf);

    srv = await startServer({ dataDir, env });
    c = client(srv.url);
    await acked.check(c, 'WAL tail lost, packs kept');
    await acked.append(c, 'tail.lost', ['after']);
    await srv.kill();
    srv = await startServer({ dataDir, env });
    await acked.check(client(srv.url), 'after a second SIGKILL');
    await srv.stop();
  },
);
