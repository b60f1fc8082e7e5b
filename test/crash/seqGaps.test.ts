// Seqs across a crash and a clean stop, as docs/API.md "Seqs: what a client may assume" promises:
// contiguous within a batch; after SIGKILL a `disk` topic's next seq may jump by up to one
// reservation block (padded seqs: never delivered, uncounted, no tombstone, old cursors still
// read on); after SIGTERM the next seq is head + 1. The last test keeps the doc's numbers equal
// to the code's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { client, killServersAfterFile, startServer } from '../helpers/server.js';
import { RESERVE_BLOCK_MAX, RESERVE_BLOCK_MIN } from '../../src/actors/topic/reservation.js';

killServersAfterFile();

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
const records = (n: number, tag: string) => ({ records: range(1, n).map((i) => ({ data: { tag, i } })) });

test('a kill -9 pads a disk topic by at most one block, silently; a clean stop pads nothing', async () => {
  const s1 = await startServer({ env: { SERVICE_WORKERS: '1' } });
  let api = client(s1.url);
  assert.equal((await api.put('/v0/topics/gaps', { durability: 'disk' })).status, 201);
  const a = (await api.post('/v0/topics/gaps', records(3, 'a'))).body;
  const b = (await api.post('/v0/topics/gaps', records(11, 'b'))).body;
  assert.deepEqual(a.seqs, [1, 2, 3]);
  assert.deepEqual(b.seqs, range(4, 14), 'contiguous within a batch');
  await s1.kill();

  const s2 = await startServer({ dataDir: s1.dataDir, env: { SERVICE_WORKERS: '1' } });
  api = client(s2.url);
  const c = (await api.post('/v0/topics/gaps', records(2, 'c'))).body;
  assert.ok(c.first_seq > 15, `the crash padded the reservation (next seq ${c.first_seq})`);
  assert.ok(c.first_seq <= 14 + RESERVE_BLOCK_MIN + 1, `by at most one block (next seq ${c.first_seq})`);
  assert.deepEqual(c.seqs, [c.first_seq, c.first_seq + 1]);
  const st = (await api.get('/v0/topics/gaps?touch=false')).body;
  assert.equal(st.count, 16, 'padded seqs are not counted');
  const fromOld = (await api.post('/v0/topics/gaps/diff', { from_seq: 14 })).body;
  assert.deepEqual(
    fromOld.records.map((r: { $seq: number }) => r.$seq),
    c.seqs,
    'a cursor at the old head reads on',
  );
  assert.equal(fromOld.tombstone, null, 'padding is silent');
  assert.equal(fromOld.caught_up, true);
  const all = (await api.post('/v0/topics/gaps/diff', { from_seq: 0, limit: 1000 })).body;
  assert.deepEqual(
    all.records.map((r: { $seq: number }) => r.$seq),
    [...range(1, 14), ...c.seqs],
  );
  assert.equal(all.tombstone, null);
  assert.equal(await s2.stop(), 0);

  const s3 = await startServer({ dataDir: s1.dataDir, env: { SERVICE_WORKERS: '1' } });
  const d = (await client(s3.url).post('/v0/topics/gaps', records(1, 'd'))).body;
  assert.equal(d.first_seq, c.last_seq + 1, 'a clean stop pads nothing');
  await s3.stop();
});

test("docs/API.md says what a client may assume about seqs, with the code's padding bound", () => {
  const api = fs.readFileSync(path.join(root, 'docs/API.md'), 'utf8');
  const start = api.indexOf('### Seqs: what a client may assume');
  assert.ok(start >= 0, 'docs/API.md has the section');
  const section = api.slice(start, api.indexOf('\n## ', start));
  for (const claim of [
    /\*\*Monotonic\.\*\*/,
    /\*\*Contiguous within a batch\.\*\*/,
    /crash or a restore from a backup/,
    /Why the padding/,
    /never by a seq/,
  ]) {
    assert.match(section, claim);
  }
  assert.ok(section.includes(`${RESERVE_BLOCK_MIN} seqs`), `the block of ${RESERVE_BLOCK_MIN}`);
  assert.ok(section.includes(`2^${Math.log2(RESERVE_BLOCK_MAX)}`), `up to 2^${Math.log2(RESERVE_BLOCK_MAX)}`);
});
