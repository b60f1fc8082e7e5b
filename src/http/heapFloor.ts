// The HTTP thread's heap floor (docs/ARCHITECTURE.md "The HTTP thread's heap"). Main thread.
//
// V8 starts marking an old generation once the room left under its limit is less than the young
// generation could promote at once. Main's old generation is small (~16 MiB: node:http, Fastify,
// our modules), its limit a small multiple of that, and a load of big requests grows its young
// generation to the most it may hold (16 MiB of semi-space and as much again for large young
// objects): from then on the room is never enough, and main marked its whole heap ~10 times a
// second, on itself and on V8's helper threads, finding only young garbage each time
// (docs/PERFORMANCE.md "The HTTP thread's marking storm"). A floor of arrays of doubles raises
// the heap that limit is computed from, so the room is there: doubles hold no pointers, so
// marking them is one step per array, and the arrays are never moved or swept.
//
// Raised once, when main's full collections come in a storm, and kept for the life of the
// process: an idle or lightly loaded server never pays its memory. Built one slice per turn of
// the event loop, so no request waits behind the whole of it.
import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';

/** The floor: enough that the room under the limit exceeds the young generation's most. */
export const HEAP_FLOOR_BYTES = 32 * 1024 * 1024;
/** One slice of the floor (an array in V8's large-object space), built per event-loop turn. */
const SLICE_DOUBLES = 256 * 1024; // 2 MiB
/** A storm: this many full collections of main's heap within STORM_WINDOW_MS. */
export const STORM_MAJOR_GCS = 8;
export const STORM_WINDOW_MS = 2000;

/**
 * Whether full collections come in a storm: true on the first collection that makes
 * `count` of them within `windowMs`. Pure; times in ms, non-decreasing.
 */
export class GcStorm {
  private readonly times: number[] = [];

  constructor(
    private readonly count = STORM_MAJOR_GCS,
    private readonly windowMs = STORM_WINDOW_MS,
  ) {}

  /** Notes a full collection at `atMs`; true when it completes a storm. */
  note(atMs: number): boolean {
    this.times.push(atMs);
    if (this.times.length > this.count) this.times.shift();
    return this.times.length === this.count && atMs - this.times[0]! <= this.windowMs;
  }
}

/** The floor's arrays, built a slice per turn; `bytes` counts what is built. */
export class HeapFloor {
  private readonly slices: number[][] = [];
  bytes = 0;

  /** Builds the floor up to `totalBytes`, one slice per turn of the event loop. */
  async raise(totalBytes = HEAP_FLOOR_BYTES): Promise<void> {
    while (this.bytes < totalBytes) {
      // `fill` with a double makes a packed array of doubles (no pointers for the marker to follow).
      this.slices.push(new Array<number>(SLICE_DOUBLES).fill(0.5));
      this.bytes += SLICE_DOUBLES * 8;
      await new Promise<void>((r) => setImmediate(r));
    }
  }
}

/** The floor once raised: held here for the life of the process (a floor V8 could collect is none). */
let kept: HeapFloor | undefined;

/** The floor raised in this process, if any. */
export function raisedFloor(): HeapFloor | undefined {
  return kept;
}

/**
 * Watches main's full collections and raises `floor` on the first storm; `raised` is told the
 * floor's size once it is built. Returns the stop (the observer is gone once the floor is raised).
 */
export function watchHeapStorms(floor: HeapFloor, raised: (bytes: number) => void, storm = new GcStorm()): () => void {
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (!isMajor(e) || !storm.note(e.startTime)) continue;
      observer.disconnect();
      kept = floor;
      void floor.raise().then(() => raised(floor.bytes));
      return;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => observer.disconnect();
}

function isMajor(e: PerformanceEntry): boolean {
  // A gc entry's `detail` says which collection it was (Node's docs, perf_hooks "Garbage Collection Details").
  return (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
}
