// The interface's limits that more than one module checks (docs/API.md "Limits"), each declared
// once with the one message a request that passes it gets. Plain constants and pure functions:
// the HTTP thread, the topic workers and the CLI import them.

/** Records per append (400 `batch_too_large`). */
export const BATCH_RECORDS_MAX = 10_000;
/** Bytes of UTF-8 in a `node`: a batch's or a record's origin node, a queue worker's identity. */
export const NODE_MAX_BYTES = 128;
/** Characters in an idempotency key, from the body or the `Idempotency-Key` header. */
export const IDEMPOTENCY_KEY_MAX_CHARS = 256;
/**
 * Routers a copy travels at most (docs/API.md "Routers"): a router PUT that would make a longer
 * chain is refused, and a copy past it is not forwarded (the guard for copies a re-wired cycle
 * could otherwise carry round forever; the origin rule stops every other loop).
 */
export const ROUTER_HOPS_MAX = 64;

export const BATCH_TOO_LARGE_MESSAGE = `a batch may hold at most ${BATCH_RECORDS_MAX} records`;
export const IDEMPOTENCY_KEY_TOO_LONG_MESSAGE = `idempotency_key is longer than ${IDEMPOTENCY_KEY_MAX_CHARS} characters`;
export const IDEMPOTENCY_KEY_EMPTY_MESSAGE = 'idempotency_key must not be empty';

/**
 * Why an idempotency key (from the body or the header) is refused, or undefined. Characters are
 * code points, not UTF-16 units: 256 emoji are 256 characters. An empty key is refused, not taken
 * as no key: it is most often an unset variable, and would silently dedupe nothing.
 */
export function idempotencyKeyProblem(key: string): string | undefined {
  if (key === '') return IDEMPOTENCY_KEY_EMPTY_MESSAGE;
  if (key.length <= IDEMPOTENCY_KEY_MAX_CHARS) return undefined; // code points <= units
  let chars = 0;
  for (const _ of key) if (++chars > IDEMPOTENCY_KEY_MAX_CHARS) return IDEMPOTENCY_KEY_TOO_LONG_MESSAGE;
  return undefined;
}

/** The message for a `node` over NODE_MAX_BYTES; `field` names it (`records[3].node`). */
export function nodeTooLongMessage(field = 'node'): string {
  return `${field} is longer than ${NODE_MAX_BYTES} bytes`;
}
