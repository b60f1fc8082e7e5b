// Unknown request fields (docs/API.md "Conventions" keeps them accepted): their names are collected so the
// reply can carry `Warning: 299 - "unknown field \"ttl\""` (the convention Kubernetes uses), and
// clients can surface typos such as `ttl` for `ttl_ms`. Pure; used on main and in workers.

/** At most this many names are reported per reply. */
export const UNKNOWN_FIELDS_MAX = 8;

/** Adds the keys of `obj` not in `known` (as `prefix` + key) to `into`, up to the bound. */
export function collectUnknown(into: string[], obj: unknown, known: ReadonlySet<string>, prefix = ''): void {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return;
  for (const k of Object.keys(obj)) {
    if (into.length >= UNKNOWN_FIELDS_MAX) return;
    const name = prefix + k;
    if (!known.has(k) && !into.includes(name)) into.push(name);
  }
}

/** The Warning header value (RFC 7234 §5.5, code 299 "miscellaneous persistent warning"). */
export function warningHeader(names: readonly string[]): string {
  return names.map((n) => `299 - ${JSON.stringify(`unknown field ${JSON.stringify(n)}`)}`).join(', ');
}
