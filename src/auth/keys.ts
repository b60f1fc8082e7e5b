// API keys (docs/API.md "Authentication"): parses SERVICE_API_KEYS once at startup and authenticates a
// presented bearer token. Main thread only. Only SHA-256 digests of the secrets are kept; a token
// is hashed and compared with EVERY digest in constant time (no early exit), so neither which key
// matched nor how many bytes matched shows in the timing. A key is named in logs and metrics by
// its position (`key#2`), never by its secret or digest.
import crypto from 'node:crypto';
import { ALL_SCOPES, type Allowlist, type Scope } from './allowlist.js';

export interface ApiKey {
  /** 1-based position in SERVICE_API_KEYS: the only name a key has outside this module. */
  readonly id: number;
  readonly label: string;
  readonly scopes: ReadonlySet<Scope>;
  readonly prefixes: Allowlist;
}

export class KeySyntaxError extends Error {}

const SCOPE_TOKENS: Record<string, readonly Scope[]> = {
  read: ['read'],
  r: ['read'],
  write: ['write'],
  w: ['write'],
  delete: ['delete'],
  del: ['delete'],
  d: ['delete'],
  admin: ['admin'],
  a: ['admin'],
  rw: ['read', 'write'],
};

function parseScopes(field: string | undefined, entryNo: number): Set<Scope> {
  const tokens = (field ?? '')
    .split('+')
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t !== '');
  if (tokens.length === 0) return new Set(ALL_SCOPES);
  const out = new Set<Scope>();
  for (const t of tokens) {
    const s = SCOPE_TOKENS[t];
    // The token is safe to print: it is the scopes field, never the secret (field 1).
    if (!s)
      throw new KeySyntaxError(
        `SERVICE_API_KEYS entry ${entryNo}: unknown scope ${JSON.stringify(t)} (known: read/r, write/w, delete/del/d, admin/a, rw)`,
      );
    for (const x of s) out.add(x);
  }
  return out;
}

/** One-shot `crypto.hash` where Node has it (20.12+): no Hash object per request. */
const oneShot = (crypto as unknown as { hash?: (alg: string, data: string, enc: 'buffer') => Buffer }).hash;

function sha256(s: string): Buffer {
  return oneShot ? oneShot('sha256', s, 'buffer') : crypto.createHash('sha256').update(s, 'utf8').digest();
}

type Compare = (a: Buffer, b: Buffer) => boolean;

export class KeyRing {
  private constructor(
    private readonly digests: readonly Buffer[],
    readonly keys: readonly ApiKey[],
  ) {}

  /** Parses SERVICE_API_KEYS entries (README.md "Settings"); an empty or absent setting gives an empty ring (auth disabled). */
  static parse(raw: string | undefined): KeyRing {
    const digests: Buffer[] = [];
    const keys: ApiKey[] = [];
    /** Entry number by secret digest: a secret given twice is refused (one key would silently win). */
    const seen = new Map<string, number>();
    const entries = (raw ?? '').split(',');
    entries.forEach((rawEntry, i) => {
      const entry = rawEntry.trim();
      if (entry === '') return;
      const c1 = entry.indexOf(':');
      const c2 = c1 < 0 ? -1 : entry.indexOf(':', c1 + 1);
      const secret = (c1 < 0 ? entry : entry.slice(0, c1)).trim();
      if (secret === '') return;
      const scopesField = c1 < 0 ? undefined : c2 < 0 ? entry.slice(c1 + 1) : entry.slice(c1 + 1, c2);
      const prefixField = c2 < 0 ? undefined : entry.slice(c2 + 1);
      const scopes = parseScopes(scopesField, i + 1);
      const items = (prefixField ?? '')
        .split('|')
        .map((p) => p.trim())
        .filter((p) => p !== '');
      const digest = sha256(secret);
      const first = seen.get(digest.toString('hex'));
      if (first !== undefined)
        throw new KeySyntaxError(
          `SERVICE_API_KEYS entries ${first} and ${i + 1} have the same secret (one entry per key: join scopes with +)`,
        );
      seen.set(digest.toString('hex'), i + 1);
      const id = keys.length + 1;
      digests.push(digest);
      keys.push({ id, label: `key#${id}`, scopes, prefixes: items.length > 0 ? items : null });
    });
    return new KeyRing(digests, keys);
  }

  get enabled(): boolean {
    return this.keys.length > 0;
  }

  /**
   * The key whose secret is `token`, or undefined. Every digest is compared, whatever matched
   * earlier; the comparison itself is crypto.timingSafeEqual on equal-length digests. `compare`
   * is injectable so a unit test can count the comparisons.
   */
  authenticate(token: string | undefined, compare: Compare = crypto.timingSafeEqual): ApiKey | undefined {
    if (token === undefined || token === '') return undefined;
    const d = sha256(token);
    let found = -1;
    for (let i = 0; i < this.digests.length; i++) {
      // Branch-free select: the loop never exits early and does the same work for every i.
      const eq = compare(d, this.digests[i]!) ? 1 : 0;
      found = eq * i + (1 - eq) * found;
    }
    return found < 0 ? undefined : this.keys[found];
  }
}

/** Bearer parsing (docs/API.md "Authentication"): scheme matched case-insensitively, token trimmed; anything else is none. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  const h = Array.isArray(header) ? header[0] : header;
  if (h === undefined) return undefined;
  const m = /^\s*bearer\s+(.*)$/i.exec(h);
  if (!m) return undefined;
  const t = m[1]!.trim();
  return t === '' ? undefined : t;
}
