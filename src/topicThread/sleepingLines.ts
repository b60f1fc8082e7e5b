// SleepingLines: the snapshot lines of a worker's sleeping topics, kept per block of table rows
// between checkpoints (docs/ARCHITECTURE.md "Many topics"). A sleeping topic does not change: its row is put when it falls
// asleep and taken when it wakes, and while it sleeps no frame of it is written or released (it
// sleeps only once its frames are all written and no unlink of it is pending, dormant.ts), so
// its pack runs stand still too. A checkpoint at a million sleeping topics used to encode a
// million lines every time (~1.3 µs each, and the creations of a busy server waited for it);
// now it encodes the blocks whose generation (DormantTable.blockGen) moved since their lines
// were kept, and joins the others by reference. The price is the lines' bytes in memory
// (~140 B per sleeping topic).
// Invariant: a kept entry's bytes are what encoding its block's rows now would give, in row
// order, as long as its gen equals the block's (audit checks it, for tests). Lines name configs
// by the table's indices: every writer that takes kept lines is seeded with configList.
// A final checkpoint writes heads instead of ceilings: it neither uses nor keeps lines.
import type { DormantRow, DormantTable } from './dormantTable.js';
import { SectionWriter } from '../storage/snapshotSectionWriter.js';
import type { PackMap } from '../storage/packMap.js';

interface Kept {
  gen: number;
  bytes: Uint8Array;
  lines: number;
}

/** One block as a checkpoint takes it: its kept lines, or the rows to encode (and maybe keep). */
export type BlockJob = { block: number; kept: Kept } | { block: number; gen: number; rows: number[]; names: string[] };

/**
 * Writes a sleeping topic's part straight from its row (`final`: its head, not its ceiling, as the
 * reserved seq; `unsynced`: what of its own file is fsynced, when not all of it, SectionWriter.addRow).
 */
export function addSleepingRow(
  out: SectionWriter,
  d: DormantRow,
  final: boolean,
  map: PackMap | undefined,
  runs: number[],
  unsynced?: readonly [number, number],
): void {
  // Every seq up to a sleeping topic's head is durable: a final checkpoint records that head
  // (a clean restart continues at head + 1, as for awake topics), another its ceiling.
  out.addRow(d, final ? d.head : d.reserved, runs, map?.runsInto(d.id, runs) ?? 0, unsynced);
}

export class SleepingLines {
  private readonly kept: (Kept | undefined)[] = [];
  private keptBytes = 0;

  constructor(
    private readonly table: DormantTable,
    private readonly map: () => PackMap | undefined,
  ) {}

  /** Bytes of lines kept (memory). */
  get bytes(): number {
    return this.keptBytes;
  }

  /** Every block of the table now, in order; `useKept` false (a final checkpoint): no kept lines. */
  plan(useKept: boolean): BlockJob[] {
    const jobs: BlockJob[] = [];
    for (let b = 0, n = this.table.blocks; b < n; b++) {
      const gen = this.table.blockGen(b);
      const k = this.kept[b];
      if (useKept && k && k.gen === gen) jobs.push({ block: b, kept: k });
      else jobs.push({ block: b, gen, ...this.table.blockRowsOf(b) });
    }
    return jobs;
  }

  /**
   * Keeps `bytes` (the `lines` lines a checkpoint encoded for the rows of `job`) under the gen
   * the job was planned at. Bytes of a block changed since are not kept: that gen is past, they
   * would never be used.
   */
  keep(job: Extract<BlockJob, { gen: number }>, bytes: Buffer, lines: number): void {
    if (this.table.blockGen(job.block) !== job.gen || lines !== job.rows.length) return;
    // In shared memory: a checkpoint's section goes to main with these bytes shared, not copied.
    const shared = new Uint8Array(new SharedArrayBuffer(bytes.length));
    shared.set(bytes);
    this.keptBytes += shared.length - (this.kept[job.block]?.bytes.length ?? 0);
    this.kept[job.block] = { gen: job.gen, bytes: shared, lines };
  }

  /** Kept entries whose bytes differ from a fresh encoding of their unchanged block (tests and audits: 0). */
  audit(): number {
    let bad = 0;
    const runs: number[] = [];
    for (let b = 0; b < this.kept.length; b++) {
      const k = this.kept[b];
      if (!k || k.gen !== this.table.blockGen(b)) continue;
      const out = new SectionWriter(this.table.configList);
      out.beginCapture();
      const { rows, names } = this.table.blockRowsOf(b);
      for (let i = 0; i < rows.length; i++) addSleepingRow(out, this.table.rowIf(rows[i]!, names[i]!)!, false, this.map(), runs);
      if (!out.endCapture().equals(k.bytes)) bad++;
    }
    return bad;
  }
}
