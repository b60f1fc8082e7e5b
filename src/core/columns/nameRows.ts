// NameRows: the names of a table's rows and the row of each name (DormantTable's index by name).
// A Map<string, number> of a million names cost ~0.6 s of a topic worker's recovery (docs/ARCHITECTURE.md "Many topics":
// every topic restored asleep is one insert, the Map rehashing as it doubles); this is an open-
// addressing table of rows (Int32Array, linear probing, sized at once by `reserve`) over the
// names array the rows need anyway, so an insert is a hash of the name and a probe or two, and
// a lookup (requests find sleeping topics by name) is as fast as the Map's. Deletes shift the
// probe run back (no tombstones). Pure data; runs on the topic worker thread.
// Invariants: a name has at most one row; `slots` holds each named row once, in the probe run
// of its hash; the slots are at most half full.
import assert from 'node:assert/strict';
import { fnv1a32 } from '../names.js';
import { grownTo } from './grow.js';

/** A slot with no row. */
const EMPTY = -1;
const FIRST_SLOTS = 2048;
const FIRST_ROWS = 1024;

/** The placement hash of the name (fnv1a32), as the int32 the hashes array keeps. */
export function nameHash(name: string): number {
  return fnv1a32(name) | 0;
}

export class NameRows {
  /** Rows by hash (linear probing), EMPTY where none; a power of two long. */
  private slots: Int32Array;
  private mask: number;
  private readonly names: (string | undefined)[] = [];
  /** Each named row's nameHash (rehashing and deleting need no string hashed again). */
  private hashes = new Int32Array(FIRST_ROWS);
  /** Rows that have a name. */
  size = 0;

  /** `firstSlots`: a power of two (tests start tiny, so that names collide and the table grows). */
  constructor(firstSlots = FIRST_SLOTS) {
    assert.ok(firstSlots >= 2 && (firstSlots & (firstSlots - 1)) === 0, 'NameRows: slots must be a power of two');
    this.slots = new Int32Array(firstSlots).fill(EMPTY);
    this.mask = firstSlots - 1;
  }

  /** The row named `name`, or -1. */
  rowOf(name: string): number {
    const h = nameHash(name);
    const { slots, mask, hashes, names } = this;
    for (let at = h & mask; ; at = (at + 1) & mask) {
      const row = slots[at]!;
      if (row === EMPTY) return -1;
      if (hashes[row] === h && names[row] === name) return row;
    }
  }

  /** The name of `row`, or undefined when it has none. */
  nameOf(row: number): string | undefined {
    return this.names[row];
  }

  /** Every row with a name is below this. */
  get rowsEnd(): number {
    return this.names.length;
  }

  /** Names `row` (a row with no name) `name` (a name no row has). */
  add(row: number, name: string): void {
    if (this.names[row] !== undefined) assert.fail(`NameRows: row ${row} already holds ${this.names[row]}`);
    if ((this.size + 1) * 2 > this.slots.length) this.rehash(this.slots.length * 2);
    if (row >= this.hashes.length) this.hashes = grownTo(this.hashes, row + 1);
    const h = nameHash(name);
    const { slots, mask, hashes, names } = this;
    let at = h & mask;
    for (; slots[at] !== EMPTY; at = (at + 1) & mask) {
      const other = slots[at]!;
      if (hashes[other] === h && names[other] === name) assert.fail(`NameRows: ${name} already has row ${other}`);
    }
    slots[at] = row;
    hashes[row] = h;
    names[row] = name;
    this.size++;
  }

  /** Takes the name off `row` (a row with a name). */
  remove(row: number): void {
    const name = this.names[row];
    if (name === undefined) assert.fail(`NameRows: row ${row} has no name`);
    const { slots, mask, hashes } = this;
    let hole = hashes[row]! & mask;
    while (slots[hole] !== row) hole = (hole + 1) & mask;
    // Backward shift: a later row of the probe run moves into the hole unless its home slot lies
    // after the hole (cyclically), where a lookup would no longer pass the hole to reach it.
    for (let j = (hole + 1) & mask; slots[j] !== EMPTY; j = (j + 1) & mask) {
      const r = slots[j]!;
      const home = hashes[r]! & mask;
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        slots[hole] = r;
        hole = j;
      }
    }
    slots[hole] = EMPTY;
    this.names[row] = undefined;
    this.size--;
  }

  /** Makes room for `more` names and rows beyond those in use, at once (no rehash on the way). */
  reserve(more: number): void {
    const names = this.size + more;
    let want = this.slots.length;
    while (names * 2 > want) want *= 2;
    if (want > this.slots.length) this.rehash(want);
    const rows = this.names.length + more;
    if (rows > this.hashes.length) this.growHashes(rows);
  }

  private rehash(slotsLen: number): void {
    const slots = new Int32Array(slotsLen).fill(EMPTY);
    const mask = slotsLen - 1;
    for (let row = 0; row < this.names.length; row++) {
      if (this.names[row] === undefined) continue;
      let at = this.hashes[row]! & mask;
      while (slots[at] !== EMPTY) at = (at + 1) & mask;
      slots[at] = row;
    }
    this.slots = slots;
    this.mask = mask;
  }

  private growHashes(rows: number): void {
    const hashes = new Int32Array(rows);
    hashes.set(this.hashes.subarray(0, Math.min(this.hashes.length, rows)));
    this.hashes = hashes;
  }
}
