// Clock seam. Semantic time ($ts, deadlines, TTL, windows) comes only from a Clock; actors receive
// the stamped time of their input and never read the wall clock themselves.
export interface Clock {
  now(): number;
}

export class SystemClock implements Clock {
  now(): number {
    return Date.now();
  }
}

/** A manual clock for tests, replay and simulation. */
export class FakeClock implements Clock {
  constructor(private ms = 1_700_000_000_000) {}
  now(): number {
    return this.ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}
