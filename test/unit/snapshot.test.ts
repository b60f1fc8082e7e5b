// Metadata snapshots (src/storage/snapshot.ts, docs/ARCHITECTURE.md "Checkpoints and recovery"): the header + CRC'd JSON codec, the
// fallback to the previous snapshot when the newest is damaged, and retention of the two newest.
import { after, test } from 'node:test';
import { nodeFs } from '../../src/storage/fs.js';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import {
  decodeSnapshot,
  encodeSnapshot,
  encodeSnapshotV2,
  loadNewestSnapshot,
  readNewestSnapshot,
  writeSnapshot,
  writeSnapshotBytes,
  type SnapshotBody,
} from '../../src/storage/snapshot.js';
import type { SectionPacks, SectionPart } from '../../src/storage/snapshotSectionFormat.js';
import { readSection, sectionTopicIds } from '../../src/storage/snapshotSectionReader.js';
import { SectionWriter } from '../../src/storage/snapshotSectionWriter.js';
import { metaDir } from '../../src/format/layout.js';
import { resolveConfig, type TopicConfig } from '../../src/protocol/topicConfig.js';

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
      {
        id: 0x03_000002,
        name: 'caf\u00e9.audit',
        config: config({ durability: 'disk', idempotency_window_ms: 600000, dedupe_node: false }),
        created_ms: 1767225600001,
        reserved: 0,
      },
      {
        id: 0x03_000003,
        name: 'tmp',
        config: config({ durability: 'ephemeral', priority: 5000 }),
        created_ms: 1767225600002,
        reserved: 9_007_199_254_740_991,
      },
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
  assert.equal(
    loadNewestSnapshot(nodeFs, dir, () => assert.fail('no warning expected')),
    undefined,
  );
  fs.mkdirSync(metaDir(dir), { recursive: true });
  assert.equal(
    loadNewestSnapshot(nodeFs, dir, () => assert.fail('no warning expected')),
    undefined,
  );
  await writeSnapshot(nodeFs, dir, body(5, 64));
  // A temp file left by a crash mid-write, newer by name, is not a snapshot.
  fs.writeFileSync(path.join(metaDir(dir), 'snapshot-00000000000000000006-000000000064.snap.tmp'), 'garbage');
  fs.writeFileSync(path.join(metaDir(dir), 'notes.txt'), 'x');
  assert.deepEqual(
    loadNewestSnapshot(nodeFs, dir, () => assert.fail('no warning expected')),
    body(5, 64),
  );
});

/** A v2 snapshot of two workers' sections (the server's format since lazy recovery, docs/ARCHITECTURE.md "Lazy recovery"). */
function v2(): { bytes: Buffer; parts: SectionPart[][]; packs: SectionPacks[] } {
  const disk = config({ durability: 'disk' });
  // Recency clocks are not persisted: they come back null whatever they were.
  // first_ts_ms is written for topics with TTL only (read back as 0 for the others).
  const wm = {
    head: 10,
    count: 7,
    bytes: 70,
    earliest: 4,
    last_ts_ms: 1767225600100,
    first_ts_ms: 0,
    last_write_ms: null,
    last_read_ms: null,
    last_consumed_ms: null,
    packed_bytes: 640,
  };
  const ttlWm = { ...wm, first_ts_ms: 1767225600050 };
  const ttl = config({ durability: 'fsync', ttl_ms: 5 });
  const parts: SectionPart[][] = [
    [
      { id: 1, name: 'a', config: disk, created_ms: 5, reserved: 1024, runs: [3, 0, 320, 4, 64, 320], wm },
      {
        id: 2,
        name: 'b',
        config: ttl,
        created_ms: 6,
        reserved: 9,
        evict_floor: 4,
        ledger: [],
        dead_below: 4,
        deleted: [[6, 7]],
        wm: ttlWm,
        own: [5, 900],
      },
      // A router dest: progress per router and the trim markers whose frames may be compacted away.
      { id: 3, name: 'c', config: disk, created_ms: 7, reserved: 0, routers_applied: { '4': [9, 6] }, trim_markers: [[2, 3]] },
      { id: 4, name: 'd', config: ttl, created_ms: 8, reserved: 10, runs: [3, 320, 64], wm: ttlWm },
      // A quiet topic with an own segment file: its first seq and size after the watermarks.
      { id: 5, name: 'e', config: disk, created_ms: 9, reserved: 12, runs: [3, 384, 64], wm, own: [7, 2048] },
      // A busy topic (no watermarks): its newest own segment file and the bytes of it fsynced at the
      // cut, and the own files that must be there (a sealed one whole, a compacted one: 0, the newest).
      {
        id: 6,
        name: 'f',
        config: disk,
        created_ms: 10,
        reserved: 4096,
        runs: [3, 448, 64],
        own: [9, 4096],
        files: [3, 65536, 6, 0, 9, 4096],
      },
      {
        id: 7,
        name: 'g',
        config: disk,
        created_ms: 11,
        reserved: 99,
        routers_applied: { '2': [5, 5] },
        own: [40, 512],
        files: [40, 512],
      },
    ],
    [],
  ];
  // The pack being written: 384 bytes at the cut, 320 of them fsynced.
  const packs: SectionPacks[] = [
    { whole: ['pack-00000000000000000003-00000-00002.log'], tail: ['pack-00000000000000000004-00000-00002.log', 384, 320] },
    { whole: [], tail: null },
  ];
  const sections = parts.map((ps, i) => {
    const w = new SectionWriter();
    for (const { runs, wm: m, own, files, ...part } of ps)
      w.add(part, runs, m && own ? { ...m, own_first_seq: own[0], own_bytes: own[1] } : m, m ? undefined : own, files);
    const s = w.finish(packs[i]!);
    return { ...s, crc: crc32(s.bytes) };
  });
  const pieces = encodeSnapshotV2({ epoch: 3, cut: { fileNo: 2, offset: 64 }, previousCut: null, workers: 2 }, sections);
  return { bytes: Buffer.concat(pieces), parts, packs };
}

test("a v2 snapshot: each worker's section round-trips (configs by index, runs, watermarks, own files quiet or busy, files that must be there), read whole or by sections", async () => {
  const { bytes, parts, packs } = v2();
  assert.deepEqual(decodeSnapshot(bytes), {
    version: 2,
    epoch: 3,
    cut: { fileNo: 2, offset: 64 },
    previousCut: null,
    topics: parts.flat(),
    packs,
  });
  const dir = tmp();
  await writeSnapshotBytes(nodeFs, dir, { fileNo: 2, offset: 64 }, [bytes.subarray(0, 10), bytes.subarray(10)]);
  const got = await readNewestSnapshot(nodeFs, dir, () => assert.fail('no warning expected'));
  assert.ok(got?.version === 2);
  assert.equal(got.head.workers, 2);
  assert.deepEqual(
    got.head.sections.map((x) => x.topics),
    [7, 0],
  );
  got.sections.forEach((sec, i) => {
    const read: SectionPart[] = [];
    const head = readSection(sec, (p) => read.push(p.part()));
    assert.deepEqual(read, parts[i]);
    assert.deepEqual(head.packs, packs[i]);
  });
  // Identical configs come back as one shared (interned) object.
  const [a, , c] = decodeSnapshot(bytes)!.topics;
  assert.equal(a!.config, c!.config);
});

test('any single bit flip in a v2 snapshot makes it unreadable, and recovery falls back to the previous one', async () => {
  const { bytes } = v2();
  const whole = decodeSnapshot(bytes);
  for (let i = 0; i < bytes.length; i += 3) {
    const bad = Buffer.from(bytes);
    bad[i]! ^= 1 << (i % 8);
    // The header's reserved u32 is covered by nothing; a flip there must still change nothing.
    if (i >= 20 && i < 24) assert.deepEqual(decodeSnapshot(bad), whole);
    else assert.equal(decodeSnapshot(bad), undefined, `flip at byte ${i}`);
  }
  assert.equal(decodeSnapshot(bytes.subarray(0, bytes.length - 1)), undefined, 'truncated');
  assert.equal(decodeSnapshot(Buffer.concat([bytes, Buffer.from([0])])), undefined, 'extended');
  const dir = tmp();
  await writeSnapshot(nodeFs, dir, body(1, 32));
  const bad = Buffer.from(bytes);
  bad[bytes.length - 3]! ^= 4; // in worker 0's section
  await writeSnapshotBytes(nodeFs, dir, { fileNo: 2, offset: 64 }, bad);
  const warnings: string[] = [];
  const got = await readNewestSnapshot(nodeFs, dir, (m) => warnings.push(m));
  // Marked: the files the older one lists may have been unlinked since (recovery does not ask for them).
  assert.deepEqual(got, { version: 1, body: body(1, 32), olderThanNewest: true });
  assert.match(warnings.join('\n'), /snapshot-00000000000000000002-000000000064\.snap is damaged/);
});

test('a section writes every integer up to 2^53 - 1 exactly (digits written without strings)', () => {
  const plain = config({});
  const ttl = config({ ttl_ms: 60_000 });
  const vals = [
    0,
    1,
    9,
    10,
    99,
    100,
    999_999_999,
    1_000_000_000,
    1_000_000_001,
    1_795_814_750_485,
    123_456_789_012,
    2 ** 31,
    2 ** 32 + 7,
    Number.MAX_SAFE_INTEGER,
  ];
  const w = new SectionWriter();
  // Every other topic has TTL, so its watermarks carry first_ts_ms too.
  const cfg = (i: number) => (i % 2 === 0 ? plain : ttl);
  const wm = (v: number, i: number) => ({
    head: v,
    count: v,
    bytes: v,
    earliest: v,
    last_ts_ms: v,
    first_ts_ms: i % 2 === 0 ? 0 : v,
    last_write_ms: null,
    last_read_ms: null,
    last_consumed_ms: null,
    packed_bytes: v,
  });
  vals.forEach((v, i) => w.add({ id: v, name: `n${v}`, config: cfg(i), created_ms: v, reserved: v }, [v, v, v], wm(v, i)));
  const read: SectionPart[] = [];
  readSection(Buffer.from(w.finish({ whole: [], tail: null }).bytes), (p) => read.push(p.part()));
  assert.deepEqual(
    read,
    vals.map((v, i) => ({ id: v, name: `n${v}`, config: cfg(i), created_ms: v, reserved: v, runs: [v, v, v], wm: wm(v, i) })),
  );
});

test("a section's topic ids read from the start of each line are the ids readSection gives, fast-path lines or not", async () => {
  const { parts } = v2();
  const w0 = new SectionWriter();
  for (const { runs, wm: m, ...part } of parts[0]!) w0.add(part, runs, m); // one line takes JSON.parse (retention)
  const sec0 = Buffer.from(w0.finish({ whole: [], tail: null }).bytes);
  const want: number[] = [];
  readSection(sec0, (p) => want.push(p.id));
  assert.deepEqual([...(await sectionTopicIds(sec0, 4))], want);
  assert.deepEqual([...(await sectionTopicIds(sec0))], want, 'without the count: the array grows');
  // Every integer the writer can write.
  const w = new SectionWriter();
  const ids = [0, 7, 1_000_000_001, 2 ** 40 + 5, Number.MAX_SAFE_INTEGER];
  for (const id of ids) w.add({ id, name: `n${id}`, config: config({}), created_ms: 1, reserved: 0 });
  assert.deepEqual([...(await sectionTopicIds(Buffer.from(w.finish({ whole: [], tail: null }).bytes), ids.length))], ids);
  await assert.rejects(sectionTopicIds(Buffer.from('{"configs":[]}\n{"name":"x","id":1}\n')), /does not start with its id/);
  await assert.rejects(sectionTopicIds(Buffer.from('{"configs":[]}\n{"id":1}')), /without its end/);
});
