// SubmitBuffers: the buffers a topic worker's WAL submissions are built in (docs/ARCHITECTURE.md
// "The life of an append"). A submission's buffer is transferred to the WAL thread, which hands
// it back once written (WalIn `handBack`, an ack's `spare`); the next turns are built in it
// again instead of in a fresh allocation, whose first-touch page faults cost ~70 µs per 270 KB
// turn. Sizes are powers of two from 64 KiB, so turns of similar size share buffers; a few are
// kept, none past 4 MiB. Runs on the worker thread.

const MIN_BYTES = 64 * 1024;
const KEEP_MAX_BYTES = 4 * 1024 * 1024;
const KEEP_COUNT = 8;

export class SubmitBuffers {
  private readonly spare: ArrayBuffer[] = [];

  /** A buffer of at least `bytes`: the smallest spare one that fits, else a new one. */
  take(bytes: number): ArrayBuffer {
    let best = -1;
    for (let i = 0; i < this.spare.length; i++) {
      const len = this.spare[i]!.byteLength;
      if (len >= bytes && (best < 0 || len < this.spare[best]!.byteLength)) best = i;
    }
    if (best >= 0) return this.spare.splice(best, 1)[0]!;
    let size = MIN_BYTES;
    while (size < bytes) size *= 2;
    // Every byte of a submission is written over before it is read: no zero-fill needed.
    return Buffer.allocUnsafeSlow(size).buffer as ArrayBuffer;
  }

  /** Buffers the WAL thread handed back. */
  give(bufs: ArrayBuffer[]): void {
    for (const b of bufs) {
      if (b.byteLength > KEEP_MAX_BYTES) continue;
      if (this.spare.length < KEEP_COUNT) this.spare.push(b);
    }
  }

  /** Spare buffers held (tests). */
  get count(): number {
    return this.spare.length;
  }
}
