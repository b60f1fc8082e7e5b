// Load-generator side of the watch benchmarks (bench/watch-fanout.ts, bench/watch-idle-memory.ts):
// many SSE watch connections held by one process, as cheaply as possible.
//
// Each watcher is a raw `net` socket with a hand-written `GET <stream_url>` (no node:http parser,
// no agent). Frames are not parsed as SSE or JSON: the bytes of a chunk are scanned for
// `"$seq":<digits>` and, after it, for the `"wt":<digits>` the writer put in `data` (its
// process.hrtime.bigint() send time, in ns since a base shared with the writer). `data` is
// `{"wt":N,"m":1,…}` for measured records and `{"wt":N,…}` without `m` for warm-up ones. HTTP
// chunk-size lines never split a record: the server writes each frame's payload as one chunk,
// so only a TCP read boundary can, and the bytes from the cut record on are kept for the next read.
//
// Per watcher: a bitmap of the seqs seen (duplicates and losses are exact); per group: one
// latency histogram (1 µs bins up to 1 s, exact values above) of measured records.
//
// Run as a child (`fork(dist/bench/watch-client.js)`) the group is driven over IPC; the parent
// can also use WatcherGroup in-process.
import net from 'node:net';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const SEQ_KEY = Buffer.from('"$seq":');
const WT_KEY = Buffer.from('"wt":');
const CAUGHT_UP = 'event: caught-up';
const HEAD_END = '\r\n\r\n';

/** Latency histogram: 1 µs bins below 1 s, exact values at or above. */
export class Hist {
  static readonly BINS = 1_000_000;
  bins = new Uint32Array(Hist.BINS);
  over: number[] = [];
  count = 0;
  maxNs = 0;

  add(ns: number): void {
    const b = ns < 0 ? 0 : Math.floor(ns / 1000);
    if (b < Hist.BINS) this.bins[b]!++;
    else this.over.push(ns);
    this.count++;
    if (ns > this.maxNs) this.maxNs = ns;
  }

  toJSON(): HistJson {
    const sparse: number[] = [];
    for (let i = 0; i < Hist.BINS; i++) if (this.bins[i]! > 0) sparse.push(i, this.bins[i]!);
    return { sparse, over: this.over, count: this.count, maxNs: this.maxNs };
  }

  merge(j: HistJson): void {
    for (let i = 0; i < j.sparse.length; i += 2) this.bins[j.sparse[i]!]! += j.sparse[i + 1]!;
    for (const v of j.over) this.over.push(v);
    this.count += j.count;
    if (j.maxNs > this.maxNs) this.maxNs = j.maxNs;
  }

  /** Nearest-rank percentile in ms (bin upper edge below 1 s). */
  percentileMs(p: number): number {
    if (this.count === 0) return NaN;
    const rank = Math.max(1, Math.ceil((p / 100) * this.count));
    let seen = 0;
    for (let i = 0; i < Hist.BINS; i++) {
      seen += this.bins[i]!;
      if (seen >= rank) return (i + 1) / 1000;
    }
    const over = [...this.over].sort((a, b) => a - b);
    return over[Math.min(over.length - 1, rank - seen - 1)]! / 1e6;
  }
}

export interface HistJson {
  sparse: number[];
  over: number[];
  count: number;
  maxNs: number;
}

export interface GroupResult {
  watchers: number;
  /** Records with `m` (measured) received, all watchers. */
  measured: number;
  /** All records received, all watchers (duplicates included). */
  received: number;
  /** Seqs 1..expectSeqs missing, summed over watchers. */
  lost: number;
  dup: number;
  /** Seqs above the bitmap (more records than the writer sent). */
  unexpected: number;
  /** Connections that closed or failed before the end. */
  dropped: number;
  errors: string[];
  hist: HistJson;
}

class Watcher {
  sock: net.Socket | undefined;
  headDone = false;
  caughtUp = false;
  closedEarly = false;
  pre = '';
  pending: Buffer | null = null;
  readonly seen: Uint8Array;
  distinct = 0;
  dup = 0;
  unexpected = 0;

  constructor(
    readonly group: WatcherGroup,
    readonly url: string,
    maxSeq: number,
  ) {
    this.seen = new Uint8Array(maxSeq + 1);
  }

  onData(chunk: Buffer): void {
    const now = Number(process.hrtime.bigint() - this.group.base);
    let buf = chunk;
    if (this.pending) {
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = null;
    }
    let i = 0;
    if (!this.caughtUp) {
      // Setup only: the response head, `retry:` and the first caught-up frame.
      this.pre += buf.toString('latin1');
      if (!this.headDone) {
        const e = this.pre.indexOf(HEAD_END);
        if (e < 0) return;
        if (!this.pre.startsWith('HTTP/1.1 200')) {
          this.group.fail(this, `GET ${this.url}: ${this.pre.slice(0, this.pre.indexOf('\r\n'))}`);
          return;
        }
        this.headDone = true;
      }
      const c = this.pre.indexOf(CAUGHT_UP);
      if (c < 0) return;
      this.caughtUp = true;
      i = Math.max(0, c - (this.pre.length - buf.length)); // latin1: one char per byte
      this.pre = '';
      this.group.onCaughtUp();
    }
    const len = buf.length;
    for (;;) {
      const s = buf.indexOf(SEQ_KEY, i);
      if (s < 0) {
        // A key cut by the read boundary: keep the last few bytes.
        const keep = Math.max(i, len - SEQ_KEY.length);
        if (keep < len) this.pending = buf.subarray(keep);
        return;
      }
      let p = s + SEQ_KEY.length;
      let seq = 0;
      let c = 0;
      while (p < len && (c = buf[p]!) >= 0x30 && c <= 0x39) {
        seq = seq * 10 + (c - 0x30);
        p++;
      }
      if (p >= len) {
        this.pending = buf.subarray(s);
        return;
      }
      const w = buf.indexOf(WT_KEY, p);
      if (w < 0) {
        this.pending = buf.subarray(s);
        return;
      }
      p = w + WT_KEY.length;
      let wt = 0;
      while (p < len && (c = buf[p]!) >= 0x30 && c <= 0x39) {
        wt = wt * 10 + (c - 0x30);
        p++;
      }
      if (p + 2 >= len) {
        this.pending = buf.subarray(s);
        return;
      }
      // `,"m":1` follows the number for measured records.
      if (c === 0x2c && buf[p + 2] === 0x6d) this.group.record(now - wt);
      this.group.received++;
      if (seq < this.seen.length) {
        if (this.seen[seq]) this.dup++;
        else {
          this.seen[seq] = 1;
          this.distinct++;
        }
      } else this.unexpected++;
      i = p;
    }
  }
}

export class WatcherGroup {
  readonly watchers: Watcher[] = [];
  readonly hist = new Hist();
  received = 0;
  measured = 0;
  private caughtUpCount = 0;
  private errors: string[] = [];
  private dropped = 0;
  private closing = false;
  private waitCaughtUp: (() => void) | undefined;

  constructor(
    private readonly port: number,
    /** hrtime ns the writer's `wt` values are relative to. */
    readonly base: bigint,
    private readonly maxSeq: number,
  ) {}

  record(ns: number): void {
    this.measured++;
    this.hist.add(ns);
  }

  onCaughtUp(): void {
    this.caughtUpCount++;
    if (this.caughtUpCount === this.watchers.length) this.waitCaughtUp?.();
  }

  fail(w: Watcher, msg: string): void {
    if (this.errors.length < 10) this.errors.push(msg);
    w.sock?.destroy();
  }

  /** Opens one connection per stream URL (`concurrency` at a time) and waits for every caught-up. */
  async open(urls: string[], concurrency = 64, timeoutMs = 60_000): Promise<{ caughtUp: number; errors: string[] }> {
    const all = new Promise<void>((r) => (this.waitCaughtUp = r));
    const ws = urls.map((u) => new Watcher(this, u, this.maxSeq));
    this.watchers.push(...ws);
    let next = 0;
    const connectOne = (w: Watcher) =>
      new Promise<void>((resolve) => {
        const sock = net.connect({ port: this.port, host: '127.0.0.1', noDelay: true });
        w.sock = sock;
        sock.on('connect', () => {
          sock.write(`GET ${w.url} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`);
        });
        sock.on('data', (d: Buffer) => {
          const was = w.caughtUp;
          w.onData(d);
          if (!was && w.caughtUp) resolve();
        });
        sock.on('error', (e) => {
          if (!this.closing && this.errors.length < 10) this.errors.push(`${w.url}: ${e.message}`);
        });
        sock.on('close', () => {
          if (!this.closing) {
            w.closedEarly = true;
            this.dropped++;
          }
          resolve();
        });
      });
    const worker = async () => {
      while (next < ws.length) await connectOne(ws[next++]!);
    };
    const timer = setTimeout(() => this.waitCaughtUp?.(), timeoutMs);
    await Promise.all(Array.from({ length: Math.min(concurrency, ws.length) }, worker));
    if (this.caughtUpCount < this.watchers.length && this.dropped === 0) await all;
    clearTimeout(timer);
    return { caughtUp: this.caughtUpCount, errors: this.errors };
  }

  /** Watchers that have every seq in 1..upTo. */
  complete(upTo: number): number {
    let n = 0;
    for (const w of this.watchers) {
      if (w.distinct < upTo) continue;
      let ok = true;
      for (let s = 1; s <= upTo && ok; s++) if (!w.seen[s]) ok = false;
      if (ok) n++;
    }
    return n;
  }

  result(expectSeqs: number): GroupResult {
    let lost = 0;
    let dup = 0;
    let unexpected = 0;
    for (const w of this.watchers) {
      for (let s = 1; s <= expectSeqs && s < w.seen.length; s++) if (!w.seen[s]) lost++;
      dup += w.dup;
      unexpected += w.unexpected;
    }
    return {
      watchers: this.watchers.length,
      measured: this.measured,
      received: this.received,
      lost,
      dup,
      unexpected,
      dropped: this.dropped,
      errors: this.errors,
      hist: this.hist.toJSON(),
    };
  }

  close(): void {
    this.closing = true;
    for (const w of this.watchers) w.sock?.destroy();
  }
}

// ---- child process entry -----------------------------------------------------------------------

export type ToChild =
  | { type: 'open'; port: number; base: string; maxSeq: number; urls: string[] }
  | { type: 'complete'; upTo: number }
  | { type: 'result'; expectSeqs: number }
  | { type: 'close' };

export type FromChild =
  | { type: 'opened'; caughtUp: number; errors: string[] }
  | { type: 'complete'; n: number }
  | { type: 'result'; result: GroupResult }
  | { type: 'error'; message: string };

function childMain(): void {
  let group: WatcherGroup | undefined;
  const send = (m: FromChild) => process.send!(m);
  process.on('message', (m: ToChild) => {
    void (async () => {
      try {
        switch (m.type) {
          case 'open':
            group = new WatcherGroup(m.port, BigInt(m.base), m.maxSeq);
            send({ type: 'opened', ...(await group.open(m.urls)) });
            break;
          case 'complete':
            send({ type: 'complete', n: group?.complete(m.upTo) ?? 0 });
            break;
          case 'result':
            send({ type: 'result', result: group!.result(m.expectSeqs) });
            break;
          case 'close':
            group?.close();
            process.disconnect();
            setTimeout(() => process.exit(0), 100).unref();
            break;
        }
      } catch (err) {
        send({ type: 'error', message: (err as Error).stack ?? String(err) });
      }
    })();
  });
  // The parent went away: do not linger.
  process.on('disconnect', () => {
    group?.close();
    setTimeout(() => process.exit(0), 100).unref();
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.send) childMain();
