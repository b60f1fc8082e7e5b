// Scopes and the prefix allowlist rule (docs/API.md "Authentication"), and the words of their 403s. Pure: no
// crypto, no clock, so the topic actor may use it too (the `dead_letter` of an append's config
// is checked there).

export type Scope = 'read' | 'write' | 'delete' | 'admin';

export const ALL_SCOPES: readonly Scope[] = ['read', 'write', 'delete', 'admin'];

/** Prefixes a key may name, or null for any name. */
export type Allowlist = readonly string[] | null;

/** docs/API.md "Authentication": allowed when there are no prefixes, or the name starts with one (byte-wise, case-sensitive). */
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

/** What a 403 `forbidden` says: its message and `error.detail`. */
export interface Refusal {
  message: string;
  detail: Record<string, unknown>;
}

/** `a`, `a and b`, `a, b and c` (with `or` for `and` when asked). */
function listed(items: readonly string[], conj = 'and'): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} ${conj} ${items[items.length - 1]}`;
}

/**
 * The refusal of a key that lacks some of `required`, naming the missing scopes (`detail.missing`)
 * as well as the full set (`detail.required`), or undefined when the key has them all.
 */
export function scopeRefusal(required: readonly Scope[], held: ReadonlySet<Scope>, what = 'the route'): Refusal | undefined {
  const missing = required.filter((s) => !held.has(s));
  if (missing.length === 0) return undefined;
  const plural = missing.length > 1 ? 's' : '';
  return {
    message: `this key lacks the ${listed(missing)} scope${plural} (${what} needs ${listed(required)})`,
    detail: { required: [...required], missing },
  };
}

/** The refusal of a name outside the key's prefixes, naming the prefixes it may start with. */
export function nameRefusal(kind: 'topic' | 'router', name: string, prefixes: readonly string[]): Refusal {
  return {
    message: `this key may not name ${kind} ${JSON.stringify(name)}: its names must start with ${listed(
      prefixes.map((p) => JSON.stringify(p)),
      'or',
    )}`,
    detail: { [kind]: name, allowed_prefixes: [...prefixes] },
  };
}
