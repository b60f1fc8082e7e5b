// A progress line on stderr for long inputs, only when stderr is a terminal: a bar when the
// input size is known (a file), a running count otherwise. Redrawn at most every 200 ms.
const REDRAW_MS = 200;
const BAR = 24;

export class Progress {
  private last = 0;
  private drawn = false;
  private readonly started = Date.now();

  constructor(
    private readonly enabled: boolean,
    private readonly totalBytes: number | undefined,
  ) {}

  update(records: number, bytes: number): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (now - this.last < REDRAW_MS) return;
    this.last = now;
    const rate = Math.round(records / Math.max(0.001, (now - this.started) / 1000));
    let line = `${records.toLocaleString('en-US')} records, ${rate.toLocaleString('en-US')}/s`;
    if (this.totalBytes) {
      const f = Math.min(1, bytes / this.totalBytes);
      const n = Math.round(f * BAR);
      line = `[${'#'.repeat(n)}${'.'.repeat(BAR - n)}] ${(f * 100).toFixed(0).padStart(3)}% ${line}`;
    }
    process.stderr.write(`\r${line}\x1b[K`);
    this.drawn = true;
  }

  clear(): void {
    if (this.drawn) process.stderr.write('\r\x1b[K');
    this.drawn = false;
  }
}
