// Byte-level JSON scanner (RFC 8259). Owns well-formedness checking of request bodies and the
// "verbatim" rule for record `data`/`meta`: values are located and validated over raw UTF-8 bytes
// and copied out with only insignificant whitespace (outside strings) removed, never built into JS
// values and re-serialized. Numbers, string escapes, key order and duplicate keys survive exactly.
// Pure and synchronous, no I/O; runs on whichever thread parses a body (the topic worker for
// appends; also usable on the HTTP thread and in tools).
//
// Every scanner here is iterative (explicit container stack, no recursion) and rejects nesting
// deeper than MAX_DEPTH. Invalid UTF-8 is an error everywhere (outside strings any non-ASCII byte
// is already a grammar error). Scanners never decode strings or numbers.

/** Maximum container nesting accepted (a document with 512 nested arrays is fine, 513 is not). */
export const MAX_DEPTH = 512;

export class JsonScanError extends Error {
  readonly offset: number;
  /** The document is well-formed as far as it was read, but nests deeper than MAX_DEPTH. */
  readonly tooDeep: boolean;
  constructor(message: string, offset: number, tooDeep = false) {
    super(`${message} at byte ${offset}`);
    this.name = 'JsonScanError';
    this.offset = offset;
    this.tooDeep = tooDeep;
  }
}

/**
 * Side results of the most recent scanValue / scanString call (valid until the next call; JS is
 * single-threaded per isolate and the scanners never call back into user code, so this is safe).
 *  - ws: bytes of whitespace outside strings inside the scanned value (compact length is
 *        (end - start) - ws);
 *  - top: number of members/elements of the scanned value if it is an object/array (duplicates
 *         counted as written), else 0;
 *  - escape: true if the last scanned string literal (scanString, or a bare string value
 *            passed to scanValue) contained a backslash escape.
 */
export const scanStats = { ws: 0, top: 0, escape: false };

// Byte constants.
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;

const OBJ = 1;
const ARR = 2;

// String byte classes.
const S_PLAIN = 0; // printable ASCII other than " and \
const S_QUOTE = 1;
const S_ESC = 2;
const S_CTRL = 3; // < 0x20: must be escaped
const S_2 = 4; // C2..DF
const S_E0 = 5;
const S_3 = 6; // E1..EC, EE..EF
const S_ED = 7;
const S_F0 = 8;
const S_4 = 9; // F1..F3
const S_F4 = 10;
const S_BAD = 11; // 80..C1, F5..FF as a lead byte

const STR_CLASS = new Uint8Array(256);
for (let b = 0; b < 256; b++) {
  let k: number;
  if (b < 0x20) k = S_CTRL;
  else if (b === QUOTE) k = S_QUOTE;
  else if (b === BACKSLASH) k = S_ESC;
  else if (b < 0x80) k = S_PLAIN;
  else if (b < 0xc2) k = S_BAD;
  else if (b < 0xe0) k = S_2;
  else if (b === 0xe0) k = S_E0;
  else if (b === 0xed) k = S_ED;
  else if (b < 0xf0) k = S_3;
  else if (b === 0xf0) k = S_F0;
  else if (b < 0xf4) k = S_4;
  else if (b === 0xf4) k = S_F4;
  else k = S_BAD;
  STR_CLASS[b] = k;
}

// 1 for JSON whitespace.
const IS_WS = new Uint8Array(256);
IS_WS[SPACE] = 1;
IS_WS[TAB] = 1;
IS_WS[LF] = 1;
IS_WS[CR] = 1;

// Valid characters after a backslash: 1 = single char escape, 2 = \u.
const ESC_CLASS = new Uint8Array(256);
for (const ch of '"\\/bfnrt') ESC_CLASS[ch.charCodeAt(0)] = 1;
ESC_CLASS[0x75] = 2; // u

const IS_HEX = new Uint8Array(256);
for (const ch of '0123456789abcdefABCDEF') IS_HEX[ch.charCodeAt(0)] = 1;

// Container stack shared by scanValue (never re-entered: no callbacks while it runs).
const stack = new Uint8Array(MAX_DEPTH + 2);

function fail(what: string, pos: number, end: number): never {
  throw new JsonScanError(pos >= end ? `Unexpected end of JSON (${what})` : what, pos);
}

/** A container opens at pos one level past MAX_DEPTH. */
function tooDeep(pos: number): never {
  throw new JsonScanError(`Nesting deeper than ${MAX_DEPTH}`, pos, true);
}

/** Skips JSON whitespace (space, tab, LF, CR) from pos; returns the first non-ws offset (<= end). */
export function skipWs(buf: Uint8Array, pos: number, end: number): number {
  while (pos < end && IS_WS[buf[pos]!] === 1) pos++;
  return pos;
}

/**
 * Validates the string literal whose opening quote is at pos; returns the offset just after the
 * closing quote. Sets scanStats.escape.
 */
export function scanString(buf: Uint8Array, pos: number, end: number): number {
  if (pos >= end || buf[pos] !== QUOTE) fail('Expected string', pos, end);
  // Fast path, small enough to be inlined into callers: printable ASCII up to the closing quote
  // (within the first LONG_STRING_BYTES; a longer string goes on in scanLongString).
  pos++;
  const stop = end - pos > LONG_STRING_BYTES ? pos + LONG_STRING_BYTES : end;
  while (pos < stop) {
    const c = buf[pos]!;
    if (STR_CLASS[c] !== S_PLAIN) {
      if (c === QUOTE) {
        scanStats.escape = false;
        return pos + 1;
      }
      return scanStringSlow(buf, pos, end);
    }
    pos++;
  }
  return stop === end ? fail('Unterminated string', pos, end) : scanLongString(buf, pos, end);
}

/**
 * The rest of a string whose first LONG_STRING_BYTES were plain, likely a record's text: its
 * plain run four bytes at a time (skipPlainWords), then the slow path from the first byte that
 * is not plain (no escape seen so far).
 */
function scanLongString(buf: Uint8Array, pos: number, end: number): number {
  return scanStringSlow(buf, skipPlainWords(buf, pos, end), end);
}

/** A string whose first this many bytes are plain goes on with the word-at-a-time skip. */
const LONG_STRING_BYTES = 64;

/**
 * An Int32Array over the buffer being scanned, made once per buffer (a body's strings share it)
 * and dropped when the scan ends, so it never keeps a body's buffer alive: by validateDocument
 * and countTopLevelKeys themselves, and by the caller (releaseWordView) after a walk. (A WeakMap
 * keyed by the view did the same, but its inserts and the GC's ephemeron work cost ~8 % of the
 * topic worker's CPU at 64 clients of single appends.)
 */
let words: Int32Array<ArrayBufferLike> | undefined;

/** Forgets skipPlainWords' view of the last buffer scanned: the caller's walk of a body is over. */
export function releaseWordView(): void {
  words = undefined;
}

/**
 * From `pos` (inside a string), skips whole aligned 4-byte words that hold only printable ASCII
 * other than `"` and `\` (STR_CLASS's S_PLAIN), and returns the first position not skipped: the
 * byte loops take over there (a word with any other byte is left to them whole). Per word: no
 * byte >= 0x80, none < 0x20, none equal to 0x22 or 0x5c, by the usual carry tricks on 32 bits,
 * which never miss a byte (a false hit only hands a plain word to the byte loop).
 */
function skipPlainWords(buf: Uint8Array, pos: number, end: number): number {
  const base = buf.byteOffset;
  // Byte by byte up to a 4-aligned position of the underlying buffer.
  while (pos < end && ((base + pos) & 3) !== 0) {
    if (STR_CLASS[buf[pos]!] !== S_PLAIN) return pos;
    pos++;
  }
  let view = words;
  if (view === undefined || view.buffer !== buf.buffer) view = words = new Int32Array(buf.buffer, 0, buf.buffer.byteLength >> 2);
  let wi = (base + pos) >> 2;
  const wend = (base + end) >> 2; // whole words before end
  while (wi < wend) {
    const w = view[wi]!;
    const q = w ^ 0x22222222;
    const b = w ^ 0x5c5c5c5c;
    const hit = (w | ((w - 0x20202020) & ~w) | ((q - 0x01010101) & ~q) | ((b - 0x01010101) & ~b)) & 0x80808080;
    if (hit !== 0) break;
    wi++;
  }
  return (wi << 2) - base;
}

/** Rest of a string literal from pos (inside the string): escapes, UTF-8, errors. */
function scanStringSlow(buf: Uint8Array, pos: number, end: number): number {
  let escape = false;
  for (;;) {
    // Hot loop: printable ASCII.
    while (pos < end && STR_CLASS[buf[pos]!] === S_PLAIN) pos++;
    if (pos >= end) fail('Unterminated string', pos, end);
    const k = STR_CLASS[buf[pos]!]!;
    switch (k) {
      case S_QUOTE:
        scanStats.escape = escape;
        return pos + 1;
      case S_ESC: {
        escape = true;
        const e = pos + 1 < end ? ESC_CLASS[buf[pos + 1]!]! : 0;
        if (e === 1) pos += 2;
        else if (e === 2) {
          if (
            pos + 5 < end &&
            IS_HEX[buf[pos + 2]!] === 1 &&
            IS_HEX[buf[pos + 3]!] === 1 &&
            IS_HEX[buf[pos + 4]!] === 1 &&
            IS_HEX[buf[pos + 5]!] === 1
          )
            pos += 6;
          else fail('Invalid \\u escape in string', pos, end);
        } else fail('Invalid escape in string', pos, end);
        break;
      }
      case S_CTRL:
        return fail('Unescaped control character in string', pos, end);
      case S_2:
        if (pos + 1 < end && (buf[pos + 1]! & 0xc0) === 0x80) pos += 2;
        else fail('Invalid UTF-8 in string', pos, end);
        break;
      case S_E0:
      case S_3:
      case S_ED: {
        if (pos + 2 >= end) fail('Invalid UTF-8 in string', pos, end);
        const b1 = buf[pos + 1]!;
        const lo = k === S_E0 ? 0xa0 : 0x80;
        const hi = k === S_ED ? 0x9f : 0xbf;
        if (b1 < lo || b1 > hi || (buf[pos + 2]! & 0xc0) !== 0x80) fail('Invalid UTF-8 in string', pos, end);
        pos += 3;
        break;
      }
      case S_F0:
      case S_4:
      case S_F4: {
        if (pos + 3 >= end) fail('Invalid UTF-8 in string', pos, end);
        const b1 = buf[pos + 1]!;
        const lo = k === S_F0 ? 0x90 : 0x80;
        const hi = k === S_F4 ? 0x8f : 0xbf;
        if (b1 < lo || b1 > hi || (buf[pos + 2]! & 0xc0) !== 0x80 || (buf[pos + 3]! & 0xc0) !== 0x80)
          fail('Invalid UTF-8 in string', pos, end);
        pos += 4;
        break;
      }
      default:
        fail('Invalid UTF-8 in string', pos, end);
    }
  }
}

function scanNumber(buf: Uint8Array, pos: number, end: number): number {
  let c = buf[pos]!;
  if (c === MINUS) {
    pos++;
    if (pos >= end) fail('Invalid number', pos, end);
    c = buf[pos]!;
  }
  if (c === ZERO) pos++;
  else if (c > ZERO && c <= NINE) {
    pos++;
    while (pos < end && (c = buf[pos]!) >= ZERO && c <= NINE) pos++;
  } else fail('Invalid number', pos, end);
  if (pos < end && buf[pos] === DOT) {
    pos++;
    if (pos >= end || (c = buf[pos]!) < ZERO || c > NINE) fail('Invalid number: digit expected after "."', pos, end);
    pos++;
    while (pos < end && (c = buf[pos]!) >= ZERO && c <= NINE) pos++;
  }
  if (pos < end && (buf[pos] === 0x65 || buf[pos] === 0x45)) {
    pos++;
    if (pos < end && (buf[pos] === PLUS || buf[pos] === MINUS)) pos++;
    if (pos >= end || (c = buf[pos]!) < ZERO || c > NINE) fail('Invalid number: digit expected in exponent', pos, end);
    pos++;
    while (pos < end && (c = buf[pos]!) >= ZERO && c <= NINE) pos++;
  }
  return pos;
}

function scanLiteral(buf: Uint8Array, pos: number, end: number): number {
  const c = buf[pos]!;
  if (c === 0x74) {
    // true
    if (pos + 3 < end && buf[pos + 1] === 0x72 && buf[pos + 2] === 0x75 && buf[pos + 3] === 0x65) return pos + 4;
  } else if (c === 0x66) {
    // false
    if (pos + 4 < end && buf[pos + 1] === 0x61 && buf[pos + 2] === 0x6c && buf[pos + 3] === 0x73 && buf[pos + 4] === 0x65) return pos + 5;
  } else if (c === 0x6e) {
    // null
    if (pos + 3 < end && buf[pos + 1] === 0x75 && buf[pos + 2] === 0x6c && buf[pos + 3] === 0x6c) return pos + 4;
  }
  return fail('Invalid literal', pos, end);
}

// Whitespace skipped by the last keyColon call.
let keyWs = 0;

/** Key string, ws, colon, ws: returns the offset of the member value; sets keyWs. */
function keyColon(buf: Uint8Array, pos: number, end: number): number {
  if (pos >= end || buf[pos] !== QUOTE) fail('Expected object key string', pos, end);
  pos = scanString(buf, pos, end);
  let p = pos;
  while (pos < end && IS_WS[buf[pos]!] === 1) pos++;
  const n = pos - p;
  if (pos >= end || buf[pos] !== COLON) fail('Expected ":" after object key', pos, end);
  p = ++pos;
  while (pos < end && IS_WS[buf[pos]!] === 1) pos++;
  keyWs = n + (pos - p);
  return pos;
}

/**
 * pos is the first byte of a value (no leading whitespace). Returns the exclusive end offset of
 * the value; throws JsonScanError if it is malformed. Trailing bytes after the value are not
 * looked at. `depth` is the number of containers already open around this value (for the nesting
 * limit; 0 for a whole document). Sets scanStats.ws and scanStats.top.
 */
export function scanValue(buf: Uint8Array, pos: number, end: number, depth = 0): number {
  let sp = 0; // local stack pointer
  let ws = 0;
  let top = 0;
  let p: number;
  for (;;) {
    // ---- a value starts at pos ----
    if (pos >= end) fail('Expected a value', pos, end);
    const c = buf[pos]!;
    if (c === QUOTE) {
      pos = scanString(buf, pos, end);
    } else if (c === LBRACE || c === LBRACKET) {
      if (++depth > MAX_DEPTH) tooDeep(pos);
      const isObj = c === LBRACE;
      stack[sp++] = isObj ? OBJ : ARR;
      p = ++pos;
      while (pos < end && IS_WS[buf[pos]!] === 1) pos++;
      ws += pos - p;
      if (pos < end && buf[pos] === (isObj ? RBRACE : RBRACKET)) {
        pos++;
        sp--;
        depth--;
      } else {
        if (sp === 1) top = 1;
        if (isObj) {
          pos = keyColon(buf, pos, end);
          ws += keyWs;
        }
        continue;
      }
    } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      pos = scanNumber(buf, pos, end);
    } else {
      pos = scanLiteral(buf, pos, end);
    }
    // ---- a value ended at pos: close containers / move to the next member ----
    for (;;) {
      if (sp === 0) {
        scanStats.ws = ws;
        scanStats.top = top;
        return pos;
      }
      p = pos;
      while (pos < end && IS_WS[buf[pos]!] === 1) pos++;
      ws += pos - p;
      if (pos >= end) fail('Unterminated container', pos, end);
      const d = buf[pos]!;
      const kind = stack[sp - 1]!;
      if (d === COMMA) {
        if (sp === 1) top++;
        p = ++pos;
        while (pos < end && IS_WS[buf[pos]!] === 1) pos++;
        ws += pos - p;
        if (kind === OBJ) {
          pos = keyColon(buf, pos, end);
          ws += keyWs;
        }
        break;
      }
      if (d === (kind === OBJ ? RBRACE : RBRACKET)) {
        pos++;
        sp--;
        depth--;
        continue;
      }
      fail(kind === OBJ ? 'Expected "," or "}"' : 'Expected "," or "]"', pos, end);
    }
  }
}

/**
 * Byte length of the valid value [start, end) once whitespace outside strings is removed.
 * (Not a validator: on invalid input the result is meaningless, but it always terminates.)
 */
export function compactLength(buf: Uint8Array, start: number, end: number): number {
  let ws = 0;
  let pos = start;
  while (pos < end) {
    const c = buf[pos]!;
    if (c === QUOTE) {
      pos++;
      while (pos < end) {
        const d = buf[pos]!;
        if (d === QUOTE) break;
        pos += d === BACKSLASH ? 2 : 1;
      }
      pos++;
    } else {
      if (IS_WS[c] === 1) ws++;
      pos++;
    }
  }
  return end - start - ws;
}

/**
 * Writes the valid value [start, end) of src into dst at dstOff with whitespace outside strings
 * removed; returns the number of bytes written. If the caller already knows the compact length
 * (e.g. from scanStats after scanValue) it can pass it: when it equals end - start the copy is a
 * single dst.set.
 */
export function copyCompact(src: Uint8Array, start: number, end: number, dst: Uint8Array, dstOff: number, compactLen?: number): number {
  const n = end - start;
  if (compactLen === n) {
    dst.set(src.subarray(start, end), dstOff);
    return n;
  }
  // Find the first whitespace byte outside strings.
  let pos = start;
  for (;;) {
    if (pos >= end) {
      dst.set(src.subarray(start, end), dstOff);
      return n;
    }
    const c = src[pos]!;
    if (c === QUOTE) {
      pos++;
      while (pos < end) {
        const d = src[pos]!;
        if (d === QUOTE) break;
        pos += d === BACKSLASH ? 2 : 1;
      }
      pos++;
    } else if (IS_WS[c] === 1) break;
    else pos++;
  }
  // Slow path: copy the whitespace-free prefix, then one pass byte by byte.
  let out = dstOff;
  const head = pos - start;
  if (head > 32) {
    dst.set(src.subarray(start, pos), out);
    out += head;
  } else {
    for (let i = start; i < pos; i++) dst[out++] = src[i]!;
  }
  while (pos < end) {
    const c = src[pos++]!;
    if (c === QUOTE) {
      dst[out++] = c;
      while (pos < end) {
        const d = src[pos++]!;
        dst[out++] = d;
        if (d === QUOTE) break;
        if (d === BACKSLASH && pos < end) dst[out++] = src[pos++]!;
      }
    } else if (IS_WS[c] === 0) dst[out++] = c;
  }
  return out - dstOff;
}

/**
 * The whole buffer must be exactly one JSON value with optional surrounding whitespace; throws
 * JsonScanError otherwise.
 */
export function validateDocument(buf: Uint8Array): void {
  const end = buf.length;
  const pos = skipWs(buf, 0, end);
  if (pos >= end) throw new JsonScanError('Empty JSON document', pos);
  try {
    const e = skipWs(buf, scanValue(buf, pos, end, 0), end);
    if (e !== end) throw new JsonScanError('Unexpected data after JSON value', e);
  } finally {
    releaseWordView();
  }
}

/** Number of members of the object value starting at start (duplicates counted as written). */
export function countTopLevelKeys(buf: Uint8Array, start: number, end: number): number {
  if (buf[start] !== LBRACE) throw new JsonScanError('Expected an object', start);
  try {
    scanValue(buf, start, end, 0);
  } finally {
    releaseWordView();
  }
  return scanStats.top;
}

/**
 * Walks the object whose '{' is at pos, validating as it goes, and calls onMember for each
 * member with the key literal's extent (quotes included) and the offset of the value's first
 * byte; onMember must consume the value and return its exclusive end (e.g. via scanValue with
 * depth + 1, or by walking it itself). `end` is the scan limit; returns the offset after '}'.
 * `depth` is the number of containers open around this object.
 */
export function walkObject(
  buf: Uint8Array,
  pos: number,
  end: number,
  depth: number,
  onMember: (keyStart: number, keyEnd: number, valStart: number) => number,
): number {
  if (pos >= end || buf[pos] !== LBRACE) fail('Expected "{"', pos, end);
  if (depth + 1 > MAX_DEPTH) tooDeep(pos);
  pos = skipWs(buf, pos + 1, end);
  if (pos < end && buf[pos] === RBRACE) return pos + 1;
  for (;;) {
    const ks = pos;
    const ke = scanString(buf, pos, end);
    pos = skipWs(buf, ke, end);
    if (pos >= end || buf[pos] !== COLON) fail('Expected ":" after object key', pos, end);
    pos = skipWs(buf, pos + 1, end);
    pos = skipWs(buf, onMember(ks, ke, pos), end);
    if (pos >= end) fail('Unterminated object', pos, end);
    const c = buf[pos];
    if (c === RBRACE) return pos + 1;
    if (c !== COMMA) fail('Expected "," or "}"', pos, end);
    pos = skipWs(buf, pos + 1, end);
    if (pos >= end || buf[pos] !== QUOTE) fail('Expected object key string', pos, end);
  }
}

/**
 * Array counterpart of walkObject: onElement receives the element's first byte and its index and
 * returns the element's exclusive end. Returns the offset after ']'.
 */
export function walkArray(
  buf: Uint8Array,
  pos: number,
  end: number,
  depth: number,
  onElement: (valStart: number, index: number) => number,
): number {
  if (pos >= end || buf[pos] !== LBRACKET) fail('Expected "["', pos, end);
  if (depth + 1 > MAX_DEPTH) tooDeep(pos);
  pos = skipWs(buf, pos + 1, end);
  if (pos < end && buf[pos] === RBRACKET) return pos + 1;
  for (let i = 0; ; i++) {
    pos = skipWs(buf, onElement(pos, i), end);
    if (pos >= end) fail('Unterminated array', pos, end);
    const c = buf[pos];
    if (c === RBRACKET) return pos + 1;
    if (c !== COMMA) fail('Expected "," or "]"', pos, end);
    pos = skipWs(buf, pos + 1, end);
  }
}

/**
 * Calls cb for each member of the object starting at start ('{'), scanning every value exactly
 * once; returns the object's end. Key offsets cover the key literal including quotes. The value
 * is validated before cb runs, so scanStats describes it inside cb. `end` may be the object's end
 * or any larger scan limit.
 */
export function forEachMember(
  buf: Uint8Array,
  start: number,
  end: number,
  cb: (keyStart: number, keyEnd: number, valStart: number, valEnd: number) => void,
  depth = 0,
): number {
  return walkObject(buf, start, end, depth, (ks, ke, vs) => {
    const ve = scanValue(buf, vs, end, depth + 1);
    cb(ks, ke, vs, ve);
    return ve;
  });
}

/** Calls cb for each element of the array starting at start ('['); returns the array's end. */
export function forEachElement(
  buf: Uint8Array,
  start: number,
  end: number,
  cb: (valStart: number, valEnd: number, index: number) => void,
  depth = 0,
): number {
  return walkArray(buf, start, end, depth, (vs, i) => {
    const ve = scanValue(buf, vs, end, depth + 1);
    cb(vs, ve, i);
    return ve;
  });
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

/** Text of bytes [start, end) (known valid UTF-8). */
export function bytesToString(buf: Uint8Array, start: number, end: number): string {
  // Short pure-ASCII fast path avoids the decoder call overhead.
  if (end - start <= 64) {
    let s = '';
    for (let i = start; i < end; i++) {
      const c = buf[i]!;
      if (c >= 0x80) return utf8.decode(buf.subarray(start, end));
      s += String.fromCharCode(c);
    }
    return s;
  }
  return utf8.decode(buf.subarray(start, end));
}

/**
 * Decodes a valid string literal [start, end) (quotes included) to a JS string.
 */
export function decodeStringLiteral(buf: Uint8Array, start: number, end: number): string {
  let esc = false;
  for (let i = start + 1; i < end - 1; i++) {
    if (buf[i] === BACKSLASH) {
      esc = true;
      break;
    }
  }
  if (!esc) return bytesToString(buf, start + 1, end - 1);
  return JSON.parse(bytesToString(buf, start, end)) as string;
}

/** True if bytes [start, end) equal the ASCII string `lit` (no escapes considered). */
export function bytesEqualAscii(buf: Uint8Array, start: number, end: number, lit: string): boolean {
  if (end - start !== lit.length) return false;
  for (let i = 0; i < lit.length; i++) if (buf[start + i] !== lit.charCodeAt(i)) return false;
  return true;
}
