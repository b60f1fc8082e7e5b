// invariant(): a rule the code itself keeps (a size it computed, a state it set up), checked where
// breaking it would corrupt data or answer wrongly. A failure is a bug in spool, never bad input
// (that is a 4xx) and never damage on disk (that is a CorruptionError). Any thread.

export class InvariantError extends Error {
  override readonly name = 'InvariantError';
}

/**
 * Throws an InvariantError saying `what` unless `cond` holds. On a hot path whose message needs
 * values, write `if (!cond) throw new InvariantError(...)`, so the message is built only on failure.
 */
export function invariant(cond: unknown, what: string): asserts cond {
  if (!cond) throw new InvariantError(what);
}
