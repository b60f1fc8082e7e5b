// lanes: runs an async function over a list, a fixed number at a time. The file-system calls of
// recovery and checkpoints are round trips to libuv's pool; run one after another, tens of
// thousands of them (a topic directory each) took seconds that overlap when several are in flight.

/**
 * Runs `fn` over `items`, `parallel` at a time. Rejects with the first failure; the other lanes
 * still take items until the list is done (callers that must stop early check for it in `fn`).
 */
export async function lanes<T>(parallel: number, items: readonly T[], fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, lane));
}
