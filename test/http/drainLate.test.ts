// The drain and waits that reach a topic after it began (docs/ARCHITECTURE.md "Startup and
// shutdown"): parked long-polls and blocking claims answer at once, and so does one main let in
// before the SIGTERM that reaches its topic only after the drain released the parked ones (held
// here in the pressure gate's collection window, or in a queue's jitter window). Such a request
// used to wait out its whole wait_ms: the drain ran to its grace and the client's connection was
// reset without an answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, client } from '../helpers/server.js';

const GRACE_MS = 8000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** SIGTERM `ms` after `sent`, then how long after the signal its answer came, and the exit code. */
async function answeredAfterTerm(
  srv: Awaited<ReturnType<typeof startServer>>,
  sent: Promise<{ status: number }>,
  ms: number,
): Promise<{ afterMs: number; status: number; code: number | null }> {
  await sleep(ms);
  const t0 = Date.now();
  const stopping = srv.stop();
  const r = await sent;
  const afterMs = Date.now() - t0;
  return { afterMs, status: r.status, code: await stopping };
}

test('a long-poll and a blocking claim held in the pressure window past the release answer at once', async () => {
  for (const kind of ['diff', 'claim'] as const) {
    const srv = await startServer({
      env: { SERVICE_SHUTDOWN_GRACE_MS: String(GRACE_MS), SERVICE_PRESSURE_FORCE: '1', SERVICE_PRESSURE_WINDOW_MS: '400' },
    });
    const c = client(srv.url);
    assert.equal((await c.put('/v0/topics/t', kind === 'claim' ? { type: 'queue' } : {})).status, 201);
    const sent =
      kind === 'claim'
        ? c.post('/v0/topics/t/claim', { node: 'w', wait_ms: 30_000 })
        : c.post('/v0/topics/t/diff', { from_seq: 0, wait_ms: 30_000 });
    const r = await answeredAfterTerm(srv, sent, 150);
    assert.equal(r.status, 200, kind);
    assert.ok(r.afterMs < GRACE_MS / 2, `${kind}: answered ${r.afterMs} ms after SIGTERM`);
    assert.equal(r.code, 0);
  }
});

test("a blocking claim in a queue's jitter window answers at once on SIGTERM", async () => {
  const srv = await startServer({ env: { SERVICE_SHUTDOWN_GRACE_MS: String(GRACE_MS) } });
  const c = client(srv.url);
  assert.equal((await c.put('/v0/topics/q', { type: 'queue', claim_jitter_ms: 5000 })).status, 201);
  const sent = c.post('/v0/topics/q/claim', { node: 'w', max: 1, wait_ms: 30_000 });
  const r = await answeredAfterTerm(srv, sent, 300);
  assert.equal(r.status, 200);
  assert.ok(r.afterMs < 2500, `answered ${r.afterMs} ms after SIGTERM, not at the jitter window's end`);
  assert.equal(r.code, 0);
});
