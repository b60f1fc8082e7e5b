// JSON in and out of the client without losing what plain JSON.parse loses (docs/CLIENT.md):
// - seqs are u64 on the wire; a seq that does not fit a JS number exactly is an error in the
//   default 'number' mode and a bigint in 'bigint' mode (every seq field is then a bigint);
// - with `raw`, a record's `data` and `meta` come back as the verbatim JSON text the server sent
//   (it keeps `1e400`, `12345678901234567890` and `"\u00e9"` exactly, docs/API.md "Records").
// The fast path is JSON.parse; the small parser below runs only when a response holds a run of
// 16+ digits (the shortest unsafe integer) or raw texts were asked for. Browser-safe, no deps.
import { CLIENT_CODES, SpoolError } from './errors.js';

/** Response fields whose numbers are seqs (docs/API.md "Records", "Diff"). Arrays under them hold seqs. */
export const SEQ_KEYS: ReadonlySet<string> = new Set([
  '$seq',
  'from_seq',
  'to_seq',
  'head_seq',
  'earliest_seq',
  'next_seq',
  'next_from_seq',
  'first_seq',
  'last_seq',
  'seqs',
  'gap_from',
  'gap_to',
  'skipped',
  'lag',
]);
/** Arrays whose elements are records (or jobs): their `data`/`meta` are user content. */
const RECORD_ARRAYS: ReadonlySet<string> = new Set(['records', 'claimed']);

export interface DecodeOptions {
  bigint: boolean;
  raw: boolean;
  /** The top-level value is itself a record (a `/work` job frame). */
  topIsRecord?: boolean;
}

const enum Ctx {
  Server,
  /** Inside data or meta: the writer's JSON, no field is special. */
  User,
  /** An array whose elements are records. */
  Records,
  /** A record object: `data` and `meta` are user content. */
  Record,
}

const UNSAFE_RUN = /\d{16}/;

function bad(message: string): SpoolError {
  return new SpoolError({ code: CLIENT_CODES.bad_response, message });
}

function outOfRange(key: string, text: string): SpoolError {
  return new SpoolError({
    code: CLIENT_CODES.seq_out_of_range,
    message: `${key} ${text} does not fit a JavaScript number exactly; create the client with int64: 'bigint'`,
  });
}

/** Decodes a server JSON response (or SSE payload) under the given options. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the body's shape is the caller's to state
export function decodeJson(text: string, opts: DecodeOptions): any {
  if (!opts.raw && !UNSAFE_RUN.test(text)) {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (e) {
      throw bad(`the server sent malformed JSON: ${(e as Error).message}`);
    }
    if (opts.bigint) seqsToBigint(v, opts.topIsRecord ? Ctx.Record : Ctx.Server);
    return v;
  }
  return new LosslessParser(text, opts).parseDocument(opts.topIsRecord ? Ctx.Record : Ctx.Server);
}

/** In place: every number under a seq key becomes a bigint (fast path of 'bigint' mode). */
function seqsToBigint(v: unknown, ctx: Ctx): void {
  if (v === null || typeof v !== 'object') return;
  if (Array.isArray(v)) {
    for (const el of v) seqsToBigint(el, ctx === Ctx.Records ? Ctx.Record : Ctx.Server);
    return;
  }
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    const x = o[k];
    if (ctx === Ctx.Record && (k === 'data' || k === 'meta')) continue;
    if (SEQ_KEYS.has(k)) {
      if (typeof x === 'number') o[k] = BigInt(x);
      else if (Array.isArray(x)) for (let i = 0; i < x.length; i++) if (typeof x[i] === 'number') x[i] = BigInt(x[i] as number);
    } else if (RECORD_ARRAYS.has(k) && Array.isArray(x)) seqsToBigint(x, Ctx.Records);
    else seqsToBigint(x, Ctx.Server);
  }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

class LosslessParser {
  private i = 0;
  constructor(
    private readonly text: string,
    private readonly opts: DecodeOptions,
  ) {}

  parseDocument(ctx: Ctx): unknown {
    this.ws();
    const v = this.value(ctx, undefined);
    this.ws();
    if (this.i !== this.text.length) throw bad(`unexpected text after JSON at offset ${this.i}`);
    return v;
  }

  private ws(): void {
    const t = this.text;
    while (this.i < t.length) {
      const c = t.charCodeAt(this.i);
      if (c !== 32 && c !== 10 && c !== 13 && c !== 9) return;
      this.i++;
    }
  }

  /** `seqKey`: the member name when it is a seq field (numbers under it are seqs). */
  private value(ctx: Ctx, seqKey: string | undefined): unknown {
    const t = this.text;
    const c = t.charCodeAt(this.i);
    if (c === 123) return this.object(ctx);
    if (c === 91) return this.array(ctx, seqKey);
    if (c === 34) return this.string();
    if (c === 45 || (c >= 48 && c <= 57)) return this.number(ctx === Ctx.User ? undefined : seqKey);
    for (const [lit, v] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (t.startsWith(lit, this.i)) {
        this.i += lit.length;
        return v;
      }
    }
    throw bad(`unexpected character at offset ${this.i}`);
  }

  private object(ctx: Ctx): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.i++;
    this.ws();
    if (this.text.charCodeAt(this.i) === 125) {
      this.i++;
      return out;
    }
    for (;;) {
      this.ws();
      if (this.text.charCodeAt(this.i) !== 34) throw bad(`expected a member name at offset ${this.i}`);
      const key = this.string();
      this.ws();
      if (this.text.charCodeAt(this.i) !== 58) throw bad(`expected ':' at offset ${this.i}`);
      this.i++;
      this.ws();
      let v: unknown;
      if (ctx === Ctx.User) v = this.value(Ctx.User, undefined);
      else if (ctx === Ctx.Record && (key === 'data' || key === 'meta'))
        v = this.opts.raw ? this.rawValue() : this.value(Ctx.User, undefined);
      else v = this.value(RECORD_ARRAYS.has(key) ? Ctx.Records : Ctx.Server, SEQ_KEYS.has(key) ? key : undefined);
      // defineProperty: a member named __proto__ must stay an own property, as in JSON.parse
      Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
      this.ws();
      const c = this.text.charCodeAt(this.i++);
      if (c === 125) return out;
      if (c !== 44) throw bad(`expected ',' or '}' at offset ${this.i - 1}`);
    }
  }

  private array(ctx: Ctx, seqKey: string | undefined): unknown[] {
    const out: unknown[] = [];
    const elCtx = ctx === Ctx.Records ? Ctx.Record : ctx === Ctx.User ? Ctx.User : Ctx.Server;
    this.i++;
    this.ws();
    if (this.text.charCodeAt(this.i) === 93) {
      this.i++;
      return out;
    }
    for (;;) {
      this.ws();
      out.push(this.value(elCtx, seqKey));
      this.ws();
      const c = this.text.charCodeAt(this.i++);
      if (c === 93) return out;
      if (c !== 44) throw bad(`expected ',' or ']' at offset ${this.i - 1}`);
    }
  }

  private string(): string {
    const t = this.text;
    const start = this.i;
    let j = start + 1;
    let escaped = false;
    for (;;) {
      if (j >= t.length) throw bad('unterminated string');
      const c = t.charCodeAt(j);
      if (c === 34) break;
      if (c === 92) {
        escaped = true;
        j += 2;
      } else j++;
    }
    this.i = j + 1;
    if (!escaped) return t.slice(start + 1, j);
    try {
      return JSON.parse(t.slice(start, j + 1)) as string;
    } catch {
      throw bad(`malformed string at offset ${start}`);
    }
  }

  private number(seqKey: string | undefined): number | bigint {
    const t = this.text;
    const start = this.i;
    let integer = true;
    while (this.i < t.length) {
      const c = t.charCodeAt(this.i);
      if (c >= 48 && c <= 57) this.i++;
      else if (c === 45 || c === 43) this.i++;
      else if (c === 46 || c === 101 || c === 69) {
        integer = false;
        this.i++;
      } else break;
    }
    const s = t.slice(start, this.i);
    const n = Number(s);
    if (Number.isNaN(n)) throw bad(`malformed number at offset ${start}`);
    if (!integer) {
      if (seqKey !== undefined) throw bad(`${seqKey} is not an integer: ${s}`);
      return n;
    }
    const digits = s.charCodeAt(0) === 45 ? s.length - 1 : s.length;
    const unsafe = digits >= 16 && (BigInt(s) > MAX_SAFE || BigInt(s) < -MAX_SAFE);
    if (seqKey !== undefined) {
      if (this.opts.bigint) return BigInt(s);
      if (unsafe) throw outOfRange(seqKey, s);
      return n;
    }
    return unsafe && this.opts.bigint ? BigInt(s) : n;
  }

  /** Skips one value and returns its exact text. */
  private rawValue(): string {
    const t = this.text;
    const start = this.i;
    let depth = 0;
    while (this.i < t.length) {
      const c = t.charCodeAt(this.i);
      if (c === 34) {
        this.string();
        if (depth === 0) break;
        continue;
      }
      if (c === 123 || c === 91) depth++;
      else if (c === 125 || c === 93) {
        if (depth === 0) break; // the end of the enclosing container
        depth--;
        if (depth === 0) {
          this.i++;
          break;
        }
      } else if (depth === 0 && (c === 44 || c === 32 || c === 10 || c === 13 || c === 9)) break;
      this.i++;
    }
    if (this.i === start) throw bad(`expected a value at offset ${start}`);
    return t.slice(start, this.i);
  }
}

/** JSON.stringify that writes bigints as plain integer literals (seqs above 2^53 go out exact). */
export function encodeJson(value: unknown): string {
  let found = false;
  const mark = `@@spool-int-${Math.random().toString(36).slice(2)}@@`;
  const text = JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v !== 'bigint') return v;
    found = true;
    return `${mark}${v.toString()}`;
  });
  if (!found) return text;
  return text.replace(new RegExp(`"${mark}(-?\\d+)"`, 'g'), '$1');
}

/** The composite watch cursor (docs/API.md "Watch frames"): base64url, no padding, of `{topic: seq}` with sorted keys. */
export function encodeCursor(cursors: ReadonlyMap<string, number | bigint>): string {
  const keys = [...cursors.keys()].sort();
  const obj: Record<string, number | bigint> = {};
  for (const k of keys) obj[k] = cursors.get(k)!;
  // Topic names are ASCII (docs/API.md "Conventions"), so the JSON text is ASCII and btoa takes it as is.
  return btoa(encodeJson(obj)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Decodes a composite cursor; undefined when it is not a base64url JSON map of seqs. */
export function decodeCursor(id: string, bigint: boolean): Map<string, number | bigint> | undefined {
  try {
    const b64 = id.replace(/-/g, '+').replace(/_/g, '/');
    const obj = decodeJson(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4)), { bigint, raw: false });
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return undefined;
    const out = new Map<string, number | bigint>();
    for (const [k, v] of Object.entries(obj as Record<string, unknown>)) {
      if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) out.set(k, bigint ? BigInt(v) : v);
      else if (typeof v === 'bigint' && v >= 0n) out.set(k, v);
      else return undefined;
    }
    return out;
  } catch {
    return undefined;
  }
}
