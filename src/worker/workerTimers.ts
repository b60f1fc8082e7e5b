// Every timer a topic worker's actors have armed (long-polls, lease wakes, dead-letter retries),
// kept in one place so stop() can clear them all without reaching into each actor's effects.
// Runs on the worker thread. After stop() no timer is armed again.
export class WorkerTimers {
  private readonly live = new Set<NodeJS.Timeout>();
  private stopped = false;

  /** Runs `fn` after `delayMs`; undefined once stopped. */
  after(delayMs: number, fn: () => void): NodeJS.Timeout | undefined {
    if (this.stopped) return undefined;
    const t = setTimeout(() => {
      this.live.delete(t);
      fn();
    }, delayMs);
    this.live.add(t);
    return t;
  }

  clear(t: NodeJS.Timeout): void {
    clearTimeout(t);
    this.live.delete(t);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.live) clearTimeout(t);
    this.live.clear();
  }
}
