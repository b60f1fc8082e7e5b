// SseSlots (main thread): the one count of open SSE streams, watch and `/work` alike, behind
// the SERVICE_MAX_SSE_CONNECTIONS cap (docs/API.md "Limits"). A stream takes a slot before it opens and
// gives it back exactly once when it closes for any reason.

export class SseSlots {
  private openCount = 0;

  /** `max` 0 = no cap. */
  constructor(readonly max: number) {}

  get open(): number {
    return this.openCount;
  }

  hasRoom(): boolean {
    return this.max === 0 || this.openCount < this.max;
  }

  /** Takes a slot; false (nothing taken) at the cap. */
  acquire(): boolean {
    if (!this.hasRoom()) return false;
    this.openCount++;
    return true;
  }

  release(): void {
    if (this.openCount > 0) this.openCount--;
  }
}
