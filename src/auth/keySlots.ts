// Per-key counters behind the docs/API.md "Limits" caps SERVICE_MAX_INFLIGHT_PER_KEY and
// SERVICE_MAX_SSE_CONNECTIONS_PER_KEY (main thread). A slot is taken before the work starts and
// given back exactly once, whatever ends it. Keyed by the key's id, never by its secret.

export class KeySlots {
  private readonly held = new Map<number, number>();

  /** `max` 0 = no cap. */
  constructor(readonly max: number) {}

  count(keyId: number): number {
    return this.held.get(keyId) ?? 0;
  }

  /** Takes a slot for the key; false (nothing taken) at the cap. */
  acquire(keyId: number): boolean {
    const n = this.count(keyId);
    if (this.max > 0 && n >= this.max) return false;
    this.held.set(keyId, n + 1);
    return true;
  }

  /** A release function that gives the slot back at most once. */
  releaser(keyId: number): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const n = this.count(keyId) - 1;
      if (n <= 0) this.held.delete(keyId);
      else this.held.set(keyId, n);
    };
  }
}
