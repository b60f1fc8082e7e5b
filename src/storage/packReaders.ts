// Read descriptors of pack files (cold reads, recovery), in a topic worker thread: a few packs
// stay open for reading, least recently used closed first, so many cold reads of small topics
// cost a pread each instead of open + pread + close. A descriptor in use is never closed under
// its reader (reference counts); a dropped pack's descriptor closes once its reads end.
import type { Fs, FsFile } from './fs.js';
import { CorruptionError } from '../core/corruption.js';

/** Pack read descriptors kept open per worker. */
export const PACK_READERS_MAX = 16;

interface Reader {
  fd: Promise<FsFile>;
  users: number;
  /** Close once the last user is done (the pack was dropped or evicted). */
  closing: boolean;
}

export class PackReaders {
  /** Least recently used first (a Map keeps insertion order). */
  private readonly open = new Map<number, Reader>();

  constructor(
    private readonly fsx: Fs,
    private readonly pathOf: (idx: number) => string,
  ) {}

  /** Reads exactly `len` bytes at `position` of pack `idx` into `buf` at `at`. */
  async read(idx: number, buf: Buffer, at: number, len: number, position: number): Promise<void> {
    const r = this.acquire(idx);
    try {
      const fd = await r.fd;
      for (let done = 0; done < len;) {
        const n = await fd.read(buf, at + done, len - done, position + done);
        // The file ends before bytes a snapshot's runs or a topic's index name: it was cut short,
        // which is damage (a start refuses it in one line naming the file and where it ends).
        if (n <= 0)
          throw new CorruptionError(
            this.pathOf(idx),
            `the file ends before the ${len - done} more bytes its records need (${len} from offset ${position}): cut short`,
            position + done,
          );
        done += n;
      }
    } catch (err) {
      // A failed open or read is not cached: the next read tries afresh.
      if (this.open.get(idx) === r) this.open.delete(idx);
      r.closing = true;
      throw err;
    } finally {
      r.users--;
      if (r.closing && r.users === 0) await close(r);
    }
  }

  private acquire(idx: number): Reader {
    let r = this.open.get(idx);
    if (r) this.open.delete(idx);
    else {
      r = { fd: this.fsx.open(this.pathOf(idx), 'r'), users: 0, closing: false };
      r.fd.catch(() => undefined); // reported to the reader that awaits it
    }
    this.open.set(idx, r);
    r.users++;
    if (this.open.size > PACK_READERS_MAX) {
      const [oldIdx, old] = this.open.entries().next().value as [number, Reader];
      this.open.delete(oldIdx);
      old.closing = true;
      if (old.users === 0) void close(old);
    }
    return r;
  }

  /** Closes the pack's descriptor (now, or when its reads end). */
  async drop(idx: number): Promise<void> {
    const r = this.open.get(idx);
    if (!r) return;
    this.open.delete(idx);
    r.closing = true;
    if (r.users === 0) await close(r);
  }

  async closeAll(): Promise<void> {
    for (const idx of [...this.open.keys()]) await this.drop(idx);
  }
}

async function close(r: Reader): Promise<void> {
  try {
    await (await r.fd).close();
  } catch {
    // an open that failed has nothing to close; a failed close loses nothing (read-only)
  }
}
