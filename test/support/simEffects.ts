// The one place a test simulator says what it does with each actor Effect (src/actors/ctx.ts):
// a table with a handler for every effect kind, which SimHost (simHost.ts) and SimActor
// (simActor.ts) each fill in. A new Effect variant does not compile until both simulators handle
// it (or say they ignore it); no effect falls through a `default`. Test code, one thread.
import type { Effect, EffectSink } from '../../src/actors/ctx.js';

/** One handler per effect kind, each given its own variant. */
export type EffectHandlers = { [K in Effect['k']]: (e: Extract<Effect, { k: K }>) => void };

/** The sink that hands each effect to its kind's handler. */
export function effectSink(handlers: EffectHandlers): EffectSink {
  return { run: (e: Effect) => (handlers[e.k] as (e: Effect) => void)(e) };
}

/** The handler of an effect a simulator has nothing to do with. */
export function ignored(): void {}
