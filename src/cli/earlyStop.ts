// A stop (SIGTERM/SIGINT) asked for before `spool serve` has its drain in place is kept for it,
// instead of the signal's default action killing the process. src/cli.ts starts keeping them
// before it loads any command (the server's modules take a few hundred ms to load on a slow
// machine); serve.ts takes the kept one over once its drain listens (docs/OPERATIONS.md "Signals").
let asked: string | undefined;
let keeping = false;
const onTerm = () => void (asked ??= 'SIGTERM');
const onInt = () => void (asked ??= 'SIGINT');

/** From now on a SIGTERM or SIGINT is kept, not acted on (idempotent). */
export function keepEarlyStops(): void {
  if (keeping) return;
  keeping = true;
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
}

/**
 * Stops keeping them and returns the first one asked for. Call it after the drain's own
 * listeners are added: with no listener at all for a moment, Node closes the signal's handle and
 * a signal pending then is dropped.
 */
export function takeEarlyStop(): string | undefined {
  if (keeping) {
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
    keeping = false;
  }
  return asked;
}
