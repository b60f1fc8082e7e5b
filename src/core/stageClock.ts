// The stage clock (debug setting SERVICE_STAGE_CLOCK; docs/PERFORMANCE.md "Stage clock"): each
// thread stamps the stages of a topic request it sees with one process-wide monotonic clock
// (uv_hrtime, the same on every thread), so a request's stamps from main, its topic worker and
// the WAL link can be subtracted. Off by default: every stamp site is behind `stageClock.on`, and
// nothing is allocated or carried when it is off. Measured time only: nothing an actor decides
// reads it (docs/ARCHITECTURE.md "Two kinds of time").

/** The stamps a topic worker adds to a result (µs on the shared clock). */
export interface WorkerStamps {
  /** The request batch arrived on the worker's port. */
  wrecv: number;
  /** The request's first actor step ran (its frame queued, or its read answered or parked). */
  stepped: number;
  /** The step's frame left for the WAL thread (appends only). */
  walSubmit?: number;
  /** The WAL thread reported that frame written (appends only). */
  walWritten?: number;
  /** The result batch was posted back to main. */
  replyPost: number;
}

/** Every stamp of one request, main's and its worker's. */
export interface RequestStamps extends Partial<WorkerStamps> {
  /** Fastify's onRequest: the head is parsed. */
  recv: number;
  /** The body is complete and the handler runs. */
  body?: number;
  /** The request batch was posted to the worker. */
  post?: number;
  /** Its result batch arrived on main. */
  mrecv?: number;
  /** The response is written (onResponse). */
  sent?: number;
}

const origin = process.hrtime.bigint();

export const stageClock = {
  /** Set once at each thread's entry point from the setting; never changes afterwards. */
  on: false,
  /** µs on the process-wide clock (since this module loaded on main; see `originUs`). */
  now(): number {
    return Number(process.hrtime.bigint() - origin) / 1000 + this.offsetUs;
  },
  /** Added to every stamp of this thread, so that every thread counts from main's origin. */
  offsetUs: 0,
};

/** This thread's origin in ns of the shared clock, handed to the other threads at spawn. */
export function stageOriginNs(): bigint {
  return origin;
}

/** Turns the clock on for this thread, counting from `mainOriginNs` (main's origin). */
export function startStageClock(mainOriginNs: bigint): void {
  stageClock.on = true;
  stageClock.offsetUs = Number(origin - mainOriginNs) / 1000;
}
