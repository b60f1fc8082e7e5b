// Seeded randomness for actors. An actor's RNG is derived from the boot seed and its topic id, so
// a recorded seed reproduces every random choice. Never used for secrets (wids use crypto).
import seedrandom from 'seedrandom';

export interface Rng {
  /** Uniform float in [0, 1). */
  next(): number;
  /** Uniform unsigned 32-bit integer. */
  u32(): number;
}

export function seededRng(seed: string): Rng {
  const prng = seedrandom(seed);
  return {
    next: () => prng(),
    u32: () => prng.int32() >>> 0,
  };
}
