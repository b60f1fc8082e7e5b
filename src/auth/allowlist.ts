// Scopes and the prefix allowlist rule (RESOLVED G8, G10). Pure: no crypto, no clock, so the
// topic actor may use it too (the `dead_letter` of an append's config is checked there).

export type Scope = 'read' | 'write' | 'delete' | 'admin';

export const ALL_SCOPES: readonly Scope[] = ['read', 'write', 'delete', 'admin'];

/** Prefixes a key may name, or null for any name. */
export type Allowlist = readonly string[] | null;

/** G10: allowed when there are no prefixes, or the name starts with one (byte-wise, case-sensitive). */
export function allowsName(prefixes: Allowlist, name: string): boolean {
  if (prefixes === null) return true;
  for (const p of prefixes) if (name.startsWith(p)) return true;
  return false;
}

/** The first name the allowlist refuses, or undefined when all are allowed. */
export function firstRefused(prefixes: Allowlist, names: Iterable<string>): string | undefined {
  if (prefixes === null) return undefined;
  for (const n of names) if (!allowsName(prefixes, n)) return n;
  return undefined;
}

/**
 * The list queries that together return exactly the names under `prefix` that the allowlist
 * allows: the intersection of "starts with prefix" with each allowed prefix is itself a
 * prefix query (the longer of the two, when one extends the other) or empty.
 */
export function listPrefixes(prefixes: Allowlist, prefix: string): string[] {
  if (prefixes === null) return [prefix];
  const out = new Set<string>();
  for (const p of prefixes) {
    if (prefix.startsWith(p)) out.add(prefix);
    else if (p.startsWith(prefix)) out.add(p);
  }
  // A query that extends another one returns a subset of it: keep the shortest.
  const sorted = [...out].sort((a, b) => a.length - b.length);
  return sorted.filter((q, i) => !sorted.slice(0, i).some((s) => q.startsWith(s)));
}
