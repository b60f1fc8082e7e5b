// Polls until a condition holds (every 20 ms), failing the test with `what` after `ms`.
import assert from 'node:assert/strict';

export async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
