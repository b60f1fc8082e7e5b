// `/work` refills over HTTP, at the level of the bytes on the wire (docs/QUEUES.md
// "`GET /v0/topics/:q/work`"; docs/PERFORMANCE.md "Queues: claim, ack and `/work`"): the jobs of
// one refill leave in ONE HTTP chunk (one write on the connection), their frames in ascending
// $seq; after an ack of all of them, the next refill is again one chunk holding the next `max`
// jobs, whose lease ids ack cleanly. A raw socket client keeps the chunk boundaries that the
// shared SSE helpers decode away.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { ack, appendJobs, mkQueue } from './queueUtil.js';
import { httpSuite } from '../support/httpSuite.js';

const { srv, c } = httpSuite();

/** A `/work` stream read as raw chunks: each entry is one chunk's bytes (latin1). */
class ChunkReader {
  readonly chunks: string[] = [];
  private raw = Buffer.alloc(0);
  private headDone = false;
  private readonly sock: net.Socket;

  constructor(port: number, path: string) {
    this.sock = net.connect(port, '127.0.0.1');
    this.sock.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`);
    this.sock.on('data', (b: Buffer) => this.push(b));
  }

  private push(b: Buffer): void {
    this.raw = Buffer.concat([this.raw, b]);
    if (!this.headDone) {
      const end = this.raw.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = this.raw.subarray(0, end).toString('latin1');
      assert.match(head, /^HTTP\/1\.1 200/);
      assert.match(head, /transfer-encoding: chunked/i);
      this.raw = this.raw.subarray(end + 4);
      this.headDone = true;
    }
    for (;;) {
      const nl = this.raw.indexOf('\r\n');
      if (nl < 0) return;
      const size = parseInt(this.raw.subarray(0, nl).toString('latin1'), 16);
      if (this.raw.length < nl + 2 + size + 2) return;
      this.chunks.push(this.raw.subarray(nl + 2, nl + 2 + size).toString('latin1'));
      this.raw = this.raw.subarray(nl + 2 + size + 2);
    }
  }

  /** Waits until some chunk holds a job frame for `seq`; returns that chunk's index. */
  async chunkWith(seq: number, timeoutMs = 5000): Promise<number> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const i = this.chunks.findIndex((ch) => ch.includes(`id: ${seq}\nevent: job\n`));
      if (i >= 0) return i;
      assert.ok(Date.now() < until, `no job frame for seq ${seq}; chunks so far ${JSON.stringify(this.chunks)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  close(): void {
    this.sock.destroy();
  }
}

interface WireJob {
  seq: number;
  leaseId: string;
}

/** The job frames in one chunk, in the order they were sent. */
function jobsIn(chunk: string): WireJob[] {
  const out: WireJob[] = [];
  for (const m of chunk.matchAll(/id: (\d+)\nevent: job\ndata: (.*)\n\n/g)) {
    const d = JSON.parse(Buffer.from(m[2]!, 'latin1').toString('utf8'));
    assert.equal(d.$seq, Number(m[1]));
    out.push({ seq: d.$seq, leaseId: d.lease_id });
  }
  return out;
}

test('a refill of max jobs is one chunk, ascending; after an ack of all, the next max jobs are one chunk again', async () => {
  const q = 'batch-q';
  await mkQueue(c, q, { lease_ms: 60_000, durability: 'disk' });
  await appendJobs(c, q, 35);
  const r = new ChunkReader(srv.port, `/v0/topics/${q}/work?node=w-a&max=10`);
  try {
    let want = 1;
    for (let round = 0; round < 3; round++) {
      const i = await r.chunkWith(want + 9);
      const got = jobsIn(r.chunks[i]!);
      assert.deepEqual(
        got.map((j) => j.seq),
        Array.from({ length: 10 }, (_, k) => want + k),
        `round ${round}: the refill's 10 jobs in one chunk, ascending (chunks ${JSON.stringify(r.chunks)})`,
      );
      const a = await ack(c, q, { node: 'w-a', seqs: got.map((j) => j.seq), lease_ids: got.map((j) => j.leaseId) });
      assert.deepEqual([a.acked, a.skipped], [10, []]);
      want += 10;
    }
    // The last 5: one chunk of 5.
    const i = await r.chunkWith(35);
    assert.deepEqual(
      jobsIn(r.chunks[i]!).map((j) => j.seq),
      [31, 32, 33, 34, 35],
    );
  } finally {
    r.close();
  }
});
