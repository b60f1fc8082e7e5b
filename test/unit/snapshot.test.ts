// Metadata snapshots (src/storage/snapshot.ts, DESIGN 2.5): the header + CRC'd JSON codec, the
// fallback to the previous snapshot when the newest is damaged, and retention of the two newest.
import { after, test } from 'node:test';
import { nodeFs } from '../../src/storage/fs.js';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { decodeSnapshot, encodeSnapshot, loadNewestSnapshot, writeSnapshot, type SnapshotBody } from '../../src/storage/snapshot.js';
import { metaDir } from '../../src/storage/layout.js';
import { resolveConfig, type TopicConfig } from '../../src/actors/topic/config.js';

const dirs: string[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-snap-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function config(input: unknown): TopicConfig {
  const r = resolveConfig('t', input);
  if (!r.ok) assert.fail('bad config');
  return r.config;
}

function body(fileNo: number, offset: number, extra = 0): SnapshotBody {
  return {
    version: 1,
    epoch: 3 + extra,
    cut: { fileNo, offset },
    previousCut: fileNo > 1 ? { fileNo: fileNo - 1, offset: 32 } : null,
    topics: [
      { id: 0x03_000001, name: 'orders', config: config({ durability: 'fsync' }), created_ms: 1767225600000, reserved: 2048 + extra },
      { id: 0x03_000002, name: 'caf\u00e9.audit', config: config({ durability: 'disk', idempotency_window_ms: 600000, dedupe_node: false }), created_ms: 1767225600001, reserved: 0 },
      { id: 0x03_000003, name: 'tmp', config: config({ durability: 'ephemeral', priority: 5000 }), created_ms: 1767225600002, reserved: 9_007_199_254_740_991 },
    ],
  };
}

function snapNames(dataDir: string): string[] {
  return fs
    .readdirSync(metaDir(dataDir))
    .filter((n) => n.endsWith('.snap'))
    .sort();
}

test('encodeSnapshot / decodeSnapshot round trip', () => {
  for (const b of [body(1, 32), body(7, 123456, 5), { ...body(2, 40), topics: [] }]) {
    const enc = encodeSnapshot(b);
    assert.equal(enc.toString('latin1', 0, 8), 'SPOOLSNP');
    assert.deepEqual(decodeSnapshot(enc), b);
  }
});

test('any single bit flip makes decodeSnapshot return undefined', () => {
  const b = body(4, 4096);
  const enc = encodeSnapshot(b);
  const buf = Buffer.from(enc);
  for (let byte = 0; byte < buf.length; byte++) {
    for (let bit = 0; bit < 8; bit++) {
      buf[byte] = buf[byte]! ^ (1 << bit);
      const got = decodeSnapshot(buf);
      if (byte >= 20 && byte < 24) {
        // The reserved u32 of the header is covered by nothing; a flip there must still never
        // change what decodes.
        if (got !== undefined) assert.deepEqual(got, b);
      } else {
        assert.equal(got, undefined, `flip of bit ${bit} in byte ${byte} still decoded`);
      }
      buf[byte] = enc[byte]!;
    }
  }
});

test('truncated, extended or empty snapshot buffers decode to undefined', () => {
  const enc = encodeSnapshot(body(2, 64));
  for (const k of [0, 1, 8, 23, 24, 25, enc.length - 1]) assert.equal(decodeSnapshot(enc.subarray(0, k)), undefined, `truncated to ${k}`);
  assert.equal(decodeSnapshot(Buffer.concat([enc, Buffer.from([0])])), undefined);
  assert.equal(decodeSnapshot(Buffer.concat([enc, Buffer.from('{}')])), undefined);
  // A valid CRC over bytes that are not JSON is still rejected.
  const json = Buffer.from('{"version":1,', 'utf8');
  const fake = Buffer.concat([enc.subarray(0, 24), json]);
  fake.writeUInt32LE(json.length, 12);
  fake.writeUInt32LE(crc32(json), 16);
  assert.equal(decodeSnapshot(fake), undefined);
  // An unknown version is rejected.
  const v2 = Buffer.from(enc);
  v2.writeUInt32LE(2, 8);
  assert.equal(decodeSnapshot(v2), undefined);
});

test('writeSnapshot keeps only the two newest snapshots (numeric cut order), no temp files', async () => {
  const dir = tmp();
  const cuts: [number, number][] = [
    [1, 32],
    [1, 900],
    [2, 40],
    [9, 100],
    [10, 32],
    [10, 4096],
  ];
  for (let i = 0; i < cuts.length; i++) {
    const [f, o] = cuts[i]!;
    await writeSnapshot(nodeFs, dir, body(f, o, i));
    const names = snapNames(dir);
    assert.ok(names.length <= 2, `after ${i + 1} writes: ${names.join(', ')}`);
    const loaded = loadNewestSnapshot(nodeFs, dir, () => assert.fail('nothing is damaged'));
    assert.deepEqual(loaded, body(f, o, i), 'the newest snapshot is the one just written');
  }
  assert.deepEqual(snapNames(dir), ['snapshot-00000000000000000010-000000000032.snap', 'snapshot-00000000000000000010-000000004096.snap']);
  assert.deepEqual(
    fs.readdirSync(metaDir(dir)).filter((n) => !n.endsWith('.snap')),
    [],
    'no temp files are left behind',
  );
});

test('loadNewestSnapshot falls back to the previous snapshot when the newest is damaged', async () => {
  const dir = tmp();
  await writeSnapshot(nodeFs, dir, body(3, 100, 1));
  await writeSnapshot(nodeFs, dir, body(4, 200, 2));
  const [older, newer] = snapNames(dir);
  assert.ok(older && newer);
  // Damage the newest: one flipped byte in its JSON body.
  const file = path.join(metaDir(dir), newer);
  const b = fs.readFileSync(file);
  b[b.length - 5] = b[b.length - 5]! ^ 0x01;
  fs.writeFileSync(file, b);
  const warnings: string[] = [];
  const got = loadNewestSnapshot(nodeFs, dir, (m) => warnings.push(m));
  assert.deepEqual(got, body(3, 100, 1));
  assert.equal(warnings.length, 1);
  assert.ok(warnings[0]!.includes(newer), `the warning names the damaged file: ${warnings[0]}`);

  // A torn newest (truncated) falls back the same way.
  fs.writeFileSync(file, b.subarray(0, 30));
  assert.deepEqual(
    loadNewestSnapshot(nodeFs, dir, () => undefined),
    body(3, 100, 1),
  );
  // Both damaged: nothing to load (recovery then replays the WAL from its start).
  fs.writeFileSync(path.join(metaDir(dir), older), Buffer.alloc(64));
  assert.equal(
    loadNewestSnapshot(nodeFs, dir, () => undefined),
    undefined,
  );
});

test('loadNewestSnapshot: no meta dir or no snapshots gives undefined; temp and foreign files are ignored', async () => {
  const dir = tmp();
  assert.equal(loadNewestSnapshot(nodeFs, dir, () => assert.fail('no warning expected')), undefined);
  fs.mkdirSync(metaDir(dir), { recursive: true });
  assert.equal(loadNewestSnapshot(nodeFs, dir, () => assert.fail('no warning expected')), undefined);
  await writeSnapshot(nodeFs, dir, body(5, 64));
  // A temp file left by a crash mid-write, newer by name, is not a snapshot.
  fs.writeFileSync(path.join(metaDir(dir), 'snapshot-00000000000000000006-000000000064.snap.tmp'), 'garbage');
  fs.writeFileSync(path.join(metaDir(dir), 'notes.txt'), 'x');
  assert.deepEqual(
    loadNewestSnapshot(nodeFs, dir, () => assert.fail('no warning expected')),
    body(5, 64),
  );
});

test('a snapshot assembled from workers\' JSON parts decodes like one encoded whole', async () => {
  const { encodeSnapshotFromParts } = await import('../../src/storage/snapshot.js');
  const head = { version: 1 as const, epoch: 3, cut: { fileNo: 2, offset: 64 }, previousCut: null };
  const a = { id: 1, name: 'a', config: {} as never, created_ms: 5, reserved: 10 };
  const b = { id: 2, name: 'b', config: {} as never, created_ms: 6, reserved: 0, evict_floor: 4, ledger: [], dead_below: 4, deleted: [[6, 7]] as [number, number][] };
  const enc = (xs: object[]) => Buffer.from(xs.map((x) => JSON.stringify(x)).join(','));
  const bytes = encodeSnapshotFromParts(head, [enc([a]), new Uint8Array(0), enc([b])]);
  assert.deepEqual(decodeSnapshot(bytes), { ...head, topics: [a, b] });
  assert.deepEqual(decodeSnapshot(encodeSnapshotFromParts(head, [])), { ...head, topics: [] });
});
