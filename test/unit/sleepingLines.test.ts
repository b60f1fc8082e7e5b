// SleepingLines (docs/ARCHITECTURE.md "Dormant topics"): a checkpoint joins the lines it kept of unchanged blocks of sleeping
// rows and encodes the changed blocks. The property: after any puts, takes, pads and touches,
// with or without changes while a checkpoint is under way, a checkpoint with nothing changing
// meanwhile writes exactly the bytes a fresh encoding of every row gives, and every kept entry of
// an unchanged block is what its rows encode to (audit 0). Blocks of 4 rows, so a few dozen
// topics span many blocks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DormantTable } from '../../src/topicThread/dormantTable.js';
import { SleepingLines, addSleepingRow, type BlockJob } from '../../src/topicThread/sleepingLines.js';
import { readSection } from '../../src/storage/snapshotSectionReader.js';
import { SectionWriter } from '../../src/storage/snapshotSectionWriter.js';
import { resolveConfig, type TopicConfig } from '../../src/protocol/topicConfig.js';
import type { DormantTopic } from '../../src/actors/topic/dormant.js';

function config(over: object): TopicConfig {
  const r = resolveConfig('t', over);
  if (!r.ok) throw new Error('bad config');
  return r.config;
}
const CONFIGS = [config({}), config({ ttl_ms: 60_000 }), config({ durability: 'fsync' })];
const NAMES = Array.from({ length: 24 }, (_, i) => `t${i}`);

function topic(name: string, n: number, c: number): DormantTopic {
  return {
    id: 1000 + n,
    name,
    config: CONFIGS[c]!,
    created_ms: 5 + n,
    reserved: 20 + n,
    head: 10 + n,
    count: n,
    bytes: 7 * n,
    earliest: 1,
    last_ts_ms: 99 + n,
    first_ts_ms: 50,
    last_write_ms: null,
    last_read_ms: null,
    last_consumed_ms: null,
    packed_bytes: 9 * n,
  };
}

type Op =
  | { t: 'put'; name: string; n: number; c: number }
  | { t: 'take'; name: string }
  | { t: 'pad' }
  | { t: 'touch'; name: string }
  | { t: 'checkpoint'; meanwhile: Op[] };

const nameArb = fc.constantFrom(...NAMES);
const changeArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('put' as const),
      name: nameArb,
      n: fc.integer({ min: 0, max: 1000 }),
      c: fc.integer({ min: 0, max: CONFIGS.length - 1 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('take' as const), name: nameArb }) },
  { weight: 1, arbitrary: fc.constant({ t: 'pad' as const }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('touch' as const), name: nameArb }) },
);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: changeArb },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('checkpoint' as const), meanwhile: fc.array(changeArb, { maxLength: 3 }) }) },
);

function apply(table: DormantTable, op: Op, now: number): void {
  if (op.t === 'put') {
    if (!table.has(op.name)) table.put(topic(op.name, op.n, op.c));
  } else if (op.t === 'take') table.take(op.name);
  else if (op.t === 'pad') table.padAllToReserved();
  else if (op.t === 'touch') table.touch(op.name, now);
}

/** The checkpoint's loop over blocks (checkpointStep.ts), changes `meanwhile` between blocks. */
function checkpoint(table: DormantTable, lines: SleepingLines, meanwhile: Op[]): Buffer {
  const out = new SectionWriter(table.configList);
  const runs: number[] = [];
  const jobs: BlockJob[] = lines.plan(true);
  const rest = [...meanwhile];
  for (const job of jobs) {
    if ('kept' in job) out.addLines(job.kept.bytes, job.kept.lines);
    else {
      out.beginCapture();
      const before = out.topicCount;
      for (let i = 0; i < job.rows.length; i++) {
        const d = table.rowIf(job.rows[i]!, job.names[i]!) ?? table.row(job.names[i]!);
        if (d) addSleepingRow(out, d, false, undefined, runs);
      }
      lines.keep(job, out.endCapture(), out.topicCount - before);
    }
    const op = rest.shift();
    if (op) apply(table, op, 1);
  }
  return Buffer.from(out.finish({ whole: [], tail: null }).bytes);
}

/** Every row encoded now, in row order. */
function fresh(table: DormantTable): Buffer {
  const out = new SectionWriter(table.configList);
  const runs: number[] = [];
  table.forEach((d) => addSleepingRow(out, d, false, undefined, runs));
  return Buffer.from(out.finish({ whole: [], tail: null }).bytes);
}

test('a checkpoint of sleeping rows with kept lines writes what a fresh encoding writes, changes or none between checkpoints and during them', () => {
  let reused = 0;
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 80 }), (ops) => {
      const table = new DormantTable(4);
      const lines = new SleepingLines(table, () => undefined);
      for (const op of ops) {
        if (op.t !== 'checkpoint') apply(table, op, 2);
        else {
          const before = lines.bytes;
          checkpoint(table, lines, op.meanwhile);
          if (op.meanwhile.length === 0 && before > 0) reused++;
        }
        assert.equal(lines.audit(), 0, 'kept lines of unchanged blocks');
      }
      // A checkpoint with nothing changing meanwhile, twice: the second from kept lines only.
      const want = fresh(table);
      assert.deepEqual(checkpoint(table, lines, []), want);
      assert.deepEqual(checkpoint(table, lines, []), want);
      // And it reads back as the rows.
      const names: string[] = [];
      readSection(want, (p) => names.push(p.name));
      assert.equal(names.length, table.size);
    }),
    { numRuns: 300 },
  );
  assert.ok(reused > 0, 'some checkpoints joined kept lines');
});

test('kept lines are joined by reference, and only blocks changed since are encoded again', () => {
  const table = new DormantTable(4);
  const lines = new SleepingLines(table, () => undefined);
  for (let i = 0; i < 12; i++) table.put(topic(NAMES[i]!, i, i % 2));
  const first = checkpoint(table, lines, []);
  const kept = lines.plan(true);
  assert.deepEqual(
    kept.map((j) => 'kept' in j),
    [true, true, true],
  );
  const bytes = lines.bytes;
  assert.ok(bytes > 0);
  table.take('t5'); // block 1
  table.touch('t9', 7); // the consumption clock is not written: block 2 stays kept
  assert.deepEqual(
    lines.plan(true).map((j) => 'kept' in j),
    [true, false, true],
  );
  assert.deepEqual(
    lines.plan(false).map((j) => 'kept' in j),
    [false, false, false],
    'a final checkpoint keeps none',
  );
  const second = checkpoint(table, lines, []);
  assert.deepEqual(second, fresh(table));
  assert.ok(second.length < first.length);
  assert.ok(lines.bytes < bytes, 'the block re-encoded holds one line less');
  // Pads change what rows write (head = reserved): every block is encoded again.
  table.padAllToReserved();
  assert.deepEqual(
    lines.plan(true).map((j) => 'kept' in j),
    [false, false, false],
  );
  assert.deepEqual(checkpoint(table, lines, []), fresh(table));
});

test('a section writer captures bytes across its chunks, and joined lines keep their order', () => {
  const table = new DormantTable(4);
  // Names long enough that 1 MiB chunks fill: a capture spans chunk boundaries.
  for (let i = 0; i < 12_000; i++) table.put({ ...topic(`n.${'x'.repeat(90)}.${i}`, i, 0) });
  const out = new SectionWriter(table.configList);
  const runs: number[] = [];
  out.beginCapture();
  table.forEach((d) => addSleepingRow(out, d, false, undefined, runs));
  const captured = out.endCapture();
  const whole = Buffer.from(out.finish({ whole: [], tail: null }).bytes);
  assert.ok(captured.length > 1 << 20);
  assert.ok(whole.subarray(whole.indexOf(0x0a) + 1).equals(captured));
  const joined = new SectionWriter(table.configList);
  joined.addLines(captured, 12_000);
  assert.deepEqual(Buffer.from(joined.finish({ whole: [], tail: null }).bytes), whole);
});
