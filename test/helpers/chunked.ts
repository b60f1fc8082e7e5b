// An incremental decoder of an HTTP/1.1 chunked body, for the raw-socket test clients
// (test/helpers/sse.ts, workStream.ts) that must see exactly when the server's bytes arrive.

export class ChunkedDecoder {
  private pending: Buffer = Buffer.alloc(0);
  /** Bytes left in the current chunk; -1 while a size line is expected. */
  private chunkLeft = -1;
  private done = false;

  constructor(
    private readonly onData: (b: Buffer) => void,
    /** The terminating zero-size chunk arrived (or a size line was garbage). */
    private readonly onEnd: () => void,
  ) {}

  push(b: Buffer): void {
    if (this.done) return;
    this.pending = this.pending.length ? Buffer.concat([this.pending, b]) : b;
    for (;;) {
      if (this.chunkLeft < 0) {
        const nl = this.pending.indexOf('\r\n');
        if (nl < 0) return;
        const size = parseInt(this.pending.subarray(0, nl).toString('latin1').split(';')[0]!.trim(), 16);
        this.pending = this.pending.subarray(nl + 2);
        if (!(size > 0)) {
          this.done = true;
          this.onEnd();
          return;
        }
        this.chunkLeft = size;
      }
      if (this.chunkLeft > 0) {
        if (this.pending.length === 0) return;
        const take = Math.min(this.chunkLeft, this.pending.length);
        this.onData(this.pending.subarray(0, take));
        this.pending = this.pending.subarray(take);
        this.chunkLeft -= take;
      }
      if (this.chunkLeft === 0) {
        if (this.pending.length < 2) return;
        this.pending = this.pending.subarray(2); // CRLF after the chunk
        this.chunkLeft = -1;
      }
    }
  }
}
