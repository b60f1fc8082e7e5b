// HotCache: the byte budget for record texts held in memory by one topic worker
// (SERVICE_SEGMENT_CACHE_BYTES). Ranges enter once their frames are safely in a segment (or were
// read back from one); the oldest leave first, and the host tells the owning actor to drop
// their texts. Records not yet in a segment are never evicted, so they never count here.

/**
 * What one hot record is charged beyond its bytes, for the budget: its slot in the chunk's text
 * array and its frame's share of buffer objects (a single-record frame is a Buffer over a slice
 * of a shared pool slab). Kept at the figure of the object per record it replaced, so the budget
 * holds as many records as before.
 */
export const RECORD_TEXT_OVERHEAD_BYTES = 96;

interface Entry {
  topicId: number;
  from: number;
  to: number;
  bytes: number;
}

export class HotCache {
  private readonly fifo: Entry[] = [];
  private head = 0;
  private bytes = 0;
  private readonly victims: Entry[] = [];
  private scheduled = false;

  constructor(
    private readonly budget: number,
    private readonly evict: (topicId: number, from: number, to: number) => void,
  ) {}

  add(topicId: number, from: number, to: number, bytes: number): void {
    this.fifo.push({ topicId, from, to, bytes });
    this.bytes += bytes;
    while (this.bytes > this.budget && this.head < this.fifo.length) {
      const e = this.fifo[this.head++]!;
      this.bytes -= e.bytes;
      if (e.bytes > 0) this.victims.push(e);
    }
    // Evictions are inputs to actors; never run one inside the step that caused it.
    if (this.victims.length > 0 && !this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => {
        this.scheduled = false;
        for (const v of this.victims.splice(0)) this.evict(v.topicId, v.from, v.to);
      });
    }
    if (this.head > 4096 && this.head * 2 > this.fifo.length) {
      this.fifo.splice(0, this.head);
      this.head = 0;
    }
  }

  dropTopic(topicId: number): void {
    for (let i = this.head; i < this.fifo.length; i++) {
      const e = this.fifo[i]!;
      if (e.topicId === topicId && e.bytes > 0) {
        this.bytes -= e.bytes;
        e.bytes = 0;
      }
    }
  }

  get usedBytes(): number {
    return this.bytes;
  }
}
