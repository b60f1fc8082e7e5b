// The column layer (src/core/columns/): the hand-written typed-array structures that hold
// per-topic and per-record facts where a Map or an object per entry would cost too much memory
// or GC time at millions of entries: id → row (`idIndex.ts`), slabs of record columns
// (`columnSlabs.ts`), name ↔ row (`nameRows.ts`), sorted names (`sortedNames.ts`), seq → value and
// (time, seq) heaps for the lease table (`seqMap.ts`, `timeHeap.ts`); the seq index
// (actors/topic/seqIndex.ts), the pack map (storage/packMap.ts) and the dormant table
// (topicThread/dormantTable.ts) are built on the same pattern with domain fields. They grow by
// doubling through `grownTo` (the hash table of `seqMap.ts` rehashes instead). Any thread.

type TypedArray = Float64Array | Float32Array | Int32Array | Uint32Array | Uint16Array | Uint8Array;

/**
 * `arr` with room for at least `minLength` elements: `arr` itself when it has it, otherwise a new
 * array of the same kind at least twice as long (amortised O(1) growth) holding `arr`'s contents
 * first and zeros after.
 */
export function grownTo<T extends TypedArray>(arr: T, minLength: number): T {
  if (minLength <= arr.length) return arr;
  const next = new (arr.constructor as new (length: number) => T)(Math.max(minLength, arr.length * 2));
  next.set(arr);
  return next;
}
