// The `--since <time>` argument of `spool read` and `spool tail` (docs/CLI.md): a point in time as
// the API's `from_ts` takes it, ms since the epoch. Accepts ms since the epoch, an ISO-8601 date or
// date-time, or a duration ago (`90s`, `5m`, `1h30m`, `2d`, also written `-5m`), resolved against
// the clock once, when the arguments are parsed. Runs in the CLI process (main thread).
import { InvalidArgumentError, Option } from 'commander';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^-?((\d+)(ms|s|m|h|d))+$/;
const DURATION_PART = /(\d+)(ms|s|m|h|d)/g;
/** A date, optionally with a time: what Date.parse reads as ISO-8601. */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

const HINT = 'expected a time: ms since the epoch, an ISO-8601 date-time (2026-11-28T10:00:00Z), or a duration ago (90s, 5m, 2h, 1d)';

/** Parses a `--since` value into ms since the epoch; `nowMs` is the clock a duration counts back from. */
export function parseSince(v: string, nowMs = Date.now()): number {
  const s = v.trim();
  let ms: number;
  if (/^\d+$/.test(s)) ms = Number(s);
  else if (DURATION.test(s)) {
    let agoMs = 0;
    for (const [, n, unit] of s.matchAll(DURATION_PART)) agoMs += Number(n) * UNIT_MS[unit!]!;
    ms = nowMs - agoMs;
  } else if (ISO_DATE.test(s)) ms = Date.parse(s.replace(' ', 'T'));
  else throw new InvalidArgumentError(HINT);
  if (!Number.isSafeInteger(ms) || ms < 0) throw new InvalidArgumentError(`${HINT}; ${v} is not a time from 1970 on`);
  return ms;
}

/** The option itself: `--since <time>`, which excludes `--from` (one start per read). */
export function sinceOption(): Option {
  return new Option(
    '--since <time>',
    'start at the first record at or after this time: ms since the epoch, ISO-8601 (2026-11-28T10:00:00Z) or a duration ago (5m, 2h, 1d)',
  )
    .argParser((v: string) => parseSince(v))
    .conflicts('from');
}
