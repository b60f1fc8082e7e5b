// Shared output chunks for one pacer flush (main thread; docs/PERFORMANCE.md "Watch fan-out"). When many SSE
// connections queued the same frames since the last flush (every single-topic watch stream of a
// topic with the same options gets the very same frame Buffers), the bytes each of them writes
// are identical: they are built once per flush, HTTP/1.1 chunk framing included, and every
// connection writes the same Buffer with one `socket.write`. Before, each connection concatenated
// its own copy and `res.write` framed it again (four corked writes, a writev): `concat`,
// `clearBuffer`/`doWrite` and `_send` were a fifth of the HTTP thread at 1000 watchers.
//
// Lives for one flush: the pacer makes one, hands it to every connection it flushes, and drops
// it. Keys are the identity of the queued Buffers, never their contents, so a lookup costs one
// Map get and a pointer comparison per queued frame. Bound: one entry per distinct queue.

/** Frames above this (a big backlog pull) are not copied into a chunk: they go out as a writev. */
export const SHARED_CHUNK_BYTES_MAX = 64 * 1024;

const CRLF = Buffer.from('\r\n', 'latin1');

interface Entry {
  parts: readonly Buffer[];
  bytes: number;
  /** `<hex size>\r\n<frames>\r\n`: one HTTP/1.1 chunk. */
  chunked: Buffer | undefined;
  /** The frames alone (HTTP/1.0: the connection's end delimits the body). */
  plain: Buffer | undefined;
}

export class SharedChunks {
  private readonly byFirst = new Map<Buffer, Entry[]>();

  /** The bytes that write `parts` (total `bytes`) as one chunk (or plain), shared by identity. */
  get(parts: readonly Buffer[], bytes: number, chunked: boolean): Buffer {
    const e = this.entry(parts, bytes);
    if (chunked) return (e.chunked ??= frameChunk(parts, bytes));
    return (e.plain ??= parts.length === 1 ? parts[0]! : Buffer.concat(parts as Buffer[], bytes));
  }

  private entry(parts: readonly Buffer[], bytes: number): Entry {
    const first = parts[0]!;
    let list = this.byFirst.get(first);
    if (list) {
      for (const e of list) if (sameParts(e.parts, parts)) return e;
    } else this.byFirst.set(first, (list = []));
    // The connection hands its queue over (it starts a new one), so keeping it is safe.
    const e: Entry = { parts, bytes, chunked: undefined, plain: undefined };
    list.push(e);
    return e;
  }
}

function sameParts(a: readonly Buffer[], b: readonly Buffer[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** One HTTP/1.1 chunk holding `parts`. */
export function frameChunk(parts: readonly Buffer[], bytes: number): Buffer {
  const head = `${bytes.toString(16)}\r\n`;
  const out = Buffer.allocUnsafe(head.length + bytes + 2);
  let p = out.write(head, 0, 'latin1');
  for (const part of parts) p += part.copy(out, p);
  CRLF.copy(out, p);
  return out;
}

/** The size line and trailer of one chunk, for frames written as a writev instead. */
export function chunkHead(bytes: number): Buffer {
  return Buffer.from(`${bytes.toString(16)}\r\n`, 'latin1');
}
export const CHUNK_END = CRLF;
