// Every timer a topic worker's actors have armed (long-polls, lease wakes, dead-letter retries),
// kept in one place so stop() can clear them all without reaching into each actor's effects.
// Runs on the worker thread. After stop() no timer is armed again.
// Timers an owner (an actor) names by its own ids live in one table here, with a map per owner
// only while it has a timer armed: an idle actor holds no timer state at all.
export class WorkerTimers {
  private readonly live = new Set<NodeJS.Timeout>();
  private readonly byOwner = new Map<object, Map<number, NodeJS.Timeout>>();
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

  /** Arms `owner`'s timer `id` (an id is set at most once while armed). */
  setFor(owner: object, id: number, delayMs: number, fn: () => void): void {
    const t = this.after(delayMs, () => {
      this.forget(owner, id);
      fn();
    });
    if (!t) return;
    let m = this.byOwner.get(owner);
    if (!m) this.byOwner.set(owner, (m = new Map()));
    m.set(id, t);
  }

  cancelFor(owner: object, id: number): void {
    const t = this.byOwner.get(owner)?.get(id);
    if (t) this.clear(t);
    this.forget(owner, id);
  }

  /** `owner` has a timer armed. */
  hasAny(owner: object): boolean {
    return this.byOwner.has(owner);
  }

  /** Cancels every timer `owner` has armed (an actor being dropped). */
  cancelAllFor(owner: object): void {
    const m = this.byOwner.get(owner);
    if (!m) return;
    for (const t of m.values()) this.clear(t);
    this.byOwner.delete(owner);
  }

  private forget(owner: object, id: number): void {
    const m = this.byOwner.get(owner);
    if (m && m.delete(id) && m.size === 0) this.byOwner.delete(owner);
  }

  clear(t: NodeJS.Timeout): void {
    clearTimeout(t);
    this.live.delete(t);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.live) clearTimeout(t);
    this.live.clear();
    this.byOwner.clear();
  }
}
