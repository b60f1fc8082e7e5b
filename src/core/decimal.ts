// Decimal digits of non-negative integers written straight into bytes, without making a string:
// record rendering (seqs, timestamps) and snapshot sections (ids, offsets, watermarks).

/** Decimal digits of a non-negative integer (seqs and ms timestamps are below 2^53). */
export function digitCount(v: number): number {
  let n = 1;
  while (v >= 1e9) {
    v = Math.floor(v / 1e9);
    n += 9;
  }
  return n + (v < 10 ? 0 : v < 100 ? 1 : v < 1e3 ? 2 : v < 1e4 ? 3 : v < 1e5 ? 4 : v < 1e6 ? 5 : v < 1e7 ? 6 : v < 1e8 ? 7 : 8);
}

/** Writes `v` (an integer in [0, 2^53)) in decimal at `p`; returns the position after it. */
export function writeUint(out: Uint8Array, p: number, v: number): number {
  const end = p + digitCount(v);
  let q = end;
  // Below 2^31 the digits come from int32 arithmetic; above it in chunks of 9 digits.
  while (v > 0x7fffffff) {
    const hi = Math.floor(v / 1e9);
    let lo = v - hi * 1e9;
    for (let k = 0; k < 9; k++) {
      const d = (lo / 10) | 0;
      out[--q] = 48 + lo - d * 10;
      lo = d;
    }
    v = hi;
  }
  let x = v | 0;
  do {
    const d = (x / 10) | 0;
    out[--q] = 48 + x - d * 10;
    x = d;
  } while (q > p);
  return end;
}
