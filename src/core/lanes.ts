// lanes: runs an async function over a list, a fixed number at a time. The file-system calls of
// recovery and checkpoints are round trips to libuv's pool; run one after another, tens of
// thousands of them (a topic directory each) took seconds that overlap when several are in flight.

/** Runs `fn` over `items`, `parallel` at a time; rejects with the first failure (after the lanes stop). */
export async function lanes<T>(parallel: number, items: readonly T[], fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, lane));
}
