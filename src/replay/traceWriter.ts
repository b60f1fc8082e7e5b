// Trace recording for one topic worker (SERVICE_TRACE_DIR): a header line, then one line per
// actor step with its input, stamped time and query answers, and, with SERVICE_TRACE_OUTPUTS=1,
// its effects. SERVICE_TRACE_TOPICS (a name prefix) bounds the volume. Written through an async
// stream on the worker thread; a debugging aid, not a durability mechanism.
import fs from 'node:fs';
import path from 'node:path';
import { encodeTraceValue, TraceHeader, TraceLine } from '../core/traceCodec.js';
import { makeDirsSync } from '../storage/fs.js';

export class TraceWriter {
  private readonly out: fs.WriteStream;
  private n = 0;

  constructor(
    dir: string,
    header: TraceHeader,
    private readonly topicPrefix: string,
  ) {
    makeDirsSync(dir);
    const file = path.join(dir, `worker-${header.worker}-${process.pid}-${Date.now()}.trace.jsonl`);
    this.out = fs.createWriteStream(file, { flags: 'a' });
    this.out.write(encodeTraceValue(header) + '\n');
  }

  wants(actorName: string): boolean {
    return actorName.startsWith(this.topicPrefix);
  }

  private closed = false;

  write(line: Omit<TraceLine, 'n'>): void {
    if (this.closed) return;
    this.out.write(encodeTraceValue({ n: ++this.n, ...line }) + '\n');
  }

  close(): Promise<void> {
    this.closed = true;
    return new Promise((resolve) => this.out.end(resolve));
  }
}
