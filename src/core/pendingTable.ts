// PendingTable: what is kept per request in flight (a resolver, a reply's destination), by
// request id: main's end of the request channel and each topic worker's replies use one. Ids
// are slot numbers with a generation on top, so a slot is reused once its request is answered
// while an id is not issued again for hours, and the table's arrays only grow with the most
// requests ever in flight at once.
//
// Why not a Map: at tens of thousands of requests a second, a Map's add/delete churn made V8
// rebuild its hash table every few dozen requests. The Map itself is long-lived (old
// generation), so each new table survived the scavenges that followed and was promoted, only to
// be replaced soon after: heap profiles keeping only objects collected by a full GC (promoted,
// then dead) had the Maps' `set` and `delete` at 18 % of main's and 29 % of the topic worker's
// (docs/PERFORMANCE.md "Maps of requests in flight").

/** Slots per generation: the most requests in flight at once (far above any configured limit). */
const SLOTS = 1 << 21;
const ID_WRAP = 2 ** 52;

export class PendingTable<T> {
  private readonly values: (T | undefined)[] = [];
  private readonly ids: number[] = [];
  private readonly free: number[] = [];
  private inFlight = 0;

  /** Keeps `value` under a new id (never one issued before), and returns the id. */
  add(value: T): number {
    let slot = this.free.pop();
    if (slot === undefined) {
      slot = this.values.length;
      if (slot >= SLOTS) throw new RangeError(`more than ${SLOTS} requests in flight`);
      this.values.push(undefined);
      this.ids.push(slot);
    }
    // The slot's next id: one generation (SLOTS) above its last; the first is the slot plus SLOTS.
    // Generations wrap below 2^52 (ids stay exact doubles): a slot answering 100k requests a
    // second would take hours to issue an id again.
    let id = this.ids[slot]! + SLOTS;
    if (id >= ID_WRAP) id = slot + SLOTS;
    this.ids[slot] = id;
    this.values[slot] = value;
    this.inFlight++;
    return id;
  }

  /** The value kept under `id`, removed; undefined when there is none (answered, or cleared). */
  take(id: number): T | undefined {
    const slot = id % SLOTS;
    if (this.ids[slot] !== id) return undefined;
    const v = this.values[slot];
    if (v === undefined) return undefined;
    this.values[slot] = undefined;
    this.free.push(slot);
    this.inFlight--;
    return v;
  }

  /** Requests in flight. */
  get size(): number {
    return this.inFlight;
  }

  /** Forgets every value (their ids are never issued again). */
  clear(): void {
    for (let slot = 0; slot < this.values.length; slot++) {
      if (this.values[slot] === undefined) continue;
      this.values[slot] = undefined;
      this.free.push(slot);
    }
    this.inFlight = 0;
  }
}
