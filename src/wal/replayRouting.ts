// Which topic worker a replayed WAL frame goes to (recovery, on the WAL thread). A frame names
// its topic by id; the snapshot's ids come per worker from the main thread, and a topic created
// after the cut is placed by its name (its TOPIC_CREATE frame), as the supervisor places it.
// With one worker every frame goes to it and nothing is looked up (main sends no ids). With
// more, each worker's ids are kept sorted in a Float64Array and searched: a Map of a million ids
// took ~0.6 s to build before the scan could start (docs/ARCHITECTURE.md "Many topics"), a sort of the same ids ~0.1 s.
import { workerOf } from '../core/names.js';

export class ReplayRouting {
  /** Per worker, the snapshot's ids it holds, ascending (empty with one worker). */
  private readonly sorted: Float64Array[];
  /** Topics created after the cut: id -> worker. */
  private readonly created = new Map<number, number>();
  constructor(
    idsByWorker: readonly Float64Array[],
    private readonly workers: number,
    /** The snapshot's topic count (with one worker its ids are not sent). */
    private readonly snapshotTopics: number,
  ) {
    this.sorted = workers === 1 ? [] : idsByWorker.map((ids) => ids.slice().sort());
  }

  /** Topics known so far: the snapshot's and those created since (progress lines). */
  get size(): number {
    return this.snapshotTopics + this.created.size;
  }

  /** A topic created after the cut, by its name (`name` is called only with more than one worker). */
  create(topicId: number, name: () => string): number {
    const w = this.workers === 1 ? 0 : workerOf(name(), this.workers);
    this.created.set(topicId, w);
    return w;
  }

  /**
   * The worker holding `topicId`, or undefined when no worker knows it (a frame of an instance
   * deleted before the cut, or id 0: BOOT and other frames of no topic). With one worker, 0 for
   * every topic id: the worker skips ids it does not know.
   */
  workerOf(topicId: number): number | undefined {
    if (!(topicId > 0)) return undefined;
    if (this.workers === 1) return 0;
    const w = this.created.get(topicId);
    if (w !== undefined) return w;
    for (let i = 0; i < this.sorted.length; i++) if (contains(this.sorted[i]!, topicId)) return i;
    return undefined;
  }
}

function contains(ids: Float64Array, id: number): boolean {
  let lo = 0;
  let hi = ids.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = ids[mid]!;
    if (v === id) return true;
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}
