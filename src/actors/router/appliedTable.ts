// Per router id, the highest source seq a dest topic holds copies of and the router's
// forwarded total (docs/ARCHITECTURE.md "Routers", dest side); see applied.ts. Plain data, no imports of topic state.

import type { AppliedPart } from '../../format/topicPart.js';

export interface Applied {
  srcLast: number;
  total: number;
}

export class AppliedTable {
  private readonly byId = new Map<number, Applied>();

  get(routerId: number): Applied {
    return this.byId.get(routerId) ?? { srcLast: 0, total: 0 };
  }

  /** Progress only moves forward (replay of an older frame changes nothing). */
  note(routerId: number, srcLast: number, total: number): void {
    const cur = this.byId.get(routerId);
    if (!cur || srcLast > cur.srcLast) this.byId.set(routerId, { srcLast, total });
  }

  /**
   * The highest router id this topic holds progress of (0: none). Recovery gathers the maximum
   * over every topic, and the registry hands out no id at or below it (docs/ARCHITECTURE.md
   * "Routers": a lost or older meta/routers.json must not give an id with progress here again).
   */
  maxId(): number {
    let max = 0;
    for (const id of this.byId.keys()) if (id > max) max = id;
    return max;
  }

  part(): AppliedPart | undefined {
    if (this.byId.size === 0) return undefined;
    const out: AppliedPart = {};
    for (const [id, a] of this.byId) out[id] = [a.srcLast, a.total];
    return out;
  }

  load(part: AppliedPart | undefined): void {
    for (const [id, [s, t]] of Object.entries(part ?? {})) this.note(Number(id), s, t);
  }
}
