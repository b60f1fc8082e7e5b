// Reply pages: the big buffers a topic worker renders a read into (diff pages, claim replies)
// and transfers to main, recycled instead of allocated per reply (docs/PERFORMANCE.md "Catch-up reads").
//
// Why: a 1000-record diff page is ~290 KB. Allocated fresh per page, glibc served it from newly
// mapped memory about half the time, and the worker's render then spent its time in page faults
// (a `perf record -e page-faults` of the catch-up bench: 93-96% in the worker's memmove into the
// new page), doubling the server CPU per record on those runs. A recycled page is memory already
// touched.
//
// The cycle: the worker's render takes a page (`allocPage`), the request channel transfers it to
// main with the reply, main writes it to the socket and, once the response has finished (never
// on a close: the socket may still be writing it), hands it back (`returnPage`); the request
// channel transfers it to the worker with its next request batch (no message of its own), and
// the worker's pool keeps it for the next render. Either side drops pages beyond its bound, so
// a lost or unreturned page is just garbage.
//
// Both halves live in this module because one thread can be both (in-process test threads).
// Threads: every thread that renders or sends replies; state is per thread (module scope).

/** Replies smaller than this are not pages: Node's pooled slabs serve them well. */
export const PAGE_MIN_BYTES = 64 * 1024;
/** Room a page keeps after its JSON, so main appends the performance block in place. */
export const PAGE_TAIL_SLACK_BYTES = 1024;
/** Free pages a worker keeps, in bytes of capacity. */
const POOL_FREE_BYTES_MAX = 8 * 1024 * 1024;
/** The largest capacity pooled (a 1000-record page under the 8 MiB byte budget fits). */
const PAGE_CAPACITY_MAX = 16 * 1024 * 1024;

/** ArrayBuffers this thread made as pages: only those may be transferred whole. */
const made = new WeakSet<ArrayBuffer>();
/** Free pages by capacity (a power of two). */
const free = new Map<number, ArrayBuffer[]>();
let freeBytes = 0;

function capacityFor(bytes: number): number {
  let c = PAGE_MIN_BYTES;
  while (c < bytes + PAGE_TAIL_SLACK_BYTES) c *= 2;
  return c;
}

/**
 * A Buffer of exactly `bytes` for a reply; from the pool (with its slack behind it) when it is
 * page-sized, else an ordinary allocation.
 */
export function allocPage(bytes: number): Buffer {
  if (bytes < PAGE_MIN_BYTES || bytes + PAGE_TAIL_SLACK_BYTES > PAGE_CAPACITY_MAX) return Buffer.allocUnsafe(bytes);
  const cap = capacityFor(bytes);
  const list = free.get(cap);
  let ab = list?.pop();
  if (ab) freeBytes -= cap;
  else {
    ab = new ArrayBuffer(cap);
    made.add(ab);
  }
  return Buffer.from(ab, 0, bytes);
}

/**
 * A Buffer to render up to `bytes` into, for a reply whose exact size is known only once it is
 * written: a pooled page of capacity for `bytes` (the tail slack stays behind it) when that is
 * page-sized, else an ordinary allocation. `finishPage` cuts it to what was written.
 */
export function allocPageUpTo(bytes: number): Buffer {
  const page = allocPage(bytes);
  if (!isPage(page.buffer)) return page;
  return Buffer.from(page.buffer, 0, page.buffer.byteLength - PAGE_TAIL_SLACK_BYTES);
}

/** The first `used` bytes of a buffer from `allocPageUpTo`, as the reply (a page stays one). */
export function finishPage(buf: Buffer, used: number): Buffer {
  return isPage(buf.buffer) ? Buffer.from(buf.buffer, 0, used) : buf.subarray(0, used);
}

/** True when `buf` is a page made on this thread and not yet given away. */
export function isPage(buf: ArrayBufferLike): boolean {
  return buf instanceof ArrayBuffer && made.has(buf) && buf.byteLength > 0;
}

/** Pages coming back (transferred from main): kept for the next renders, within the bound. */
export function recyclePages(pages: readonly ArrayBuffer[]): void {
  for (const ab of pages) {
    const cap = ab.byteLength;
    // Only our sizes, and only while the pool has room; anything else is left to the GC.
    if (cap < PAGE_MIN_BYTES || cap > PAGE_CAPACITY_MAX || (cap & (cap - 1)) !== 0) continue;
    if (freeBytes + cap > POOL_FREE_BYTES_MAX) continue;
    made.add(ab);
    let list = free.get(cap);
    if (!list) free.set(cap, (list = []));
    list.push(ab);
    freeBytes += cap;
  }
}

// ---- main's half: who a received page goes back to -------------------------------------------

/** The channel a received page came from, so it can travel back with that channel's requests. */
const owners = new WeakMap<ArrayBuffer, (page: ArrayBuffer) => void>();

/** The request channel marks each page it receives with the way back to its worker. */
export function markReceivedPage(page: ArrayBuffer, giveBack: (page: ArrayBuffer) => void): void {
  owners.set(page, giveBack);
}

/** The capacity behind a received page's JSON, or 0 when it is not a page. */
export function pageCapacity(json: Uint8Array): number {
  return json.byteOffset === 0 && json.buffer instanceof ArrayBuffer && owners.has(json.buffer) ? json.buffer.byteLength : 0;
}

/**
 * Main is done with a page: every byte of the response has been handed to the kernel (the
 * response's `finish`), so nothing reads it any more. Views of it become empty once it is
 * transferred; call this only when no code keeps one.
 */
export function returnPage(page: ArrayBufferLike): void {
  if (!(page instanceof ArrayBuffer)) return;
  const giveBack = owners.get(page);
  if (!giveBack) return;
  owners.delete(page);
  giveBack(page);
}
