// Seeded randomness for actors. An actor's RNG is derived from the boot seed and its topic id, so
// a recorded seed reproduces every random choice. Never used for secrets (wids use crypto).
import seedrandom from 'seedrandom';

export interface Rng {
  /** Uniform float in [0, 1). */
  next(): number;
  /** Uniform unsigned 32-bit integer. */
  u32(): number;
}

/**
 * The generator is built on the first draw: most topics never draw (only queue claims and
 * jitter do), and an ARC4 state per idle topic is memory and start-up time for nothing. The
 * sequence of draws is the same either way.
 */
export function seededRng(seed: string): Rng {
  let prng: seedrandom.PRNG | undefined;
  const gen = (): seedrandom.PRNG => (prng ??= seedrandom(seed));
  return {
    next: () => gen()(),
    u32: () => gen().int32() >>> 0,
  };
}
