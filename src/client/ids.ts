// Random identifiers made on the client: idempotency keys and default worker node names. Uses the
// Web Crypto `getRandomValues` present in Node >= 20 and every browser (secure context or not).

/** `bytes` random bytes as lowercase hex. */
export function randomHex(bytes: number): string {
  const b = new Uint8Array(bytes);
  globalThis.crypto.getRandomValues(b);
  let s = '';
  for (const x of b) s += x.toString(16).padStart(2, '0');
  return s;
}
