// The pressure gate's preHandler (docs/ARCHITECTURE.md "Admission"): under pressure a request
// that only waits its turn (a diff, which may long-poll for up to 30 s) keeps no 'close'
// listener on its response once admitted, so a parked long-poll does not hold the hook's
// closures; a request that holds its slot keeps one, and gives the slot back on close.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Admission, ruleFor } from '../../src/http/admission.js';
import { KeyRing } from '../../src/auth/keys.js';
import { PressureMonitor } from '../../src/pressure/monitor.js';
import { PressureGate } from '../../src/pressure/gate.js';
import { PriorityBook } from '../../src/pressure/priorityBook.js';
import { newGauges } from '../../src/core/gauges.js';

function pressuredAdmission(): { admission: Admission; monitor: PressureMonitor } {
  const idle = { elu: 0.1, lagP99Ms: 1, sample() {}, stop() {} };
  const monitor = new PressureMonitor({ elu: 0.9, lagMs: 50, walQueueBytes: 1000, force: true }, newGauges(1), 1, idle);
  const gate = new PressureGate(monitor, { parkBoundMs: 500, maxParked: 100, inflightMax: 4, windowMs: 5, agingPerS: 1 }, Date.now);
  const opts = { probeAuth: false, maxInflightPerKey: 0, maxSseConnectionsPerKey: 0, maxTotalBytes: 0 };
  return { admission: new Admission(KeyRing.parse(undefined), opts, { gate, book: new PriorityBook(100), now: Date.now }), monitor };
}

/** Runs the route's gate hook on a fake request; resolves with its response once admitted. */
function admit(admission: Admission, method: string, url: string, body: string): Promise<EventEmitter> {
  const rule = ruleFor(method, url)!;
  const hook = admission.gateHookFor(rule, url === '/v0/topics/:topic' && method === 'POST');
  const raw = new EventEmitter();
  const req = { params: { topic: 't' }, url: url.replace(':topic', 't'), body: Buffer.from(body) } as unknown as FastifyRequest;
  const reply = { raw } as unknown as FastifyReply;
  return new Promise((resolve) => hook(req, reply, () => resolve(raw)));
}

test('under pressure, an admitted diff keeps no close listener; an append keeps one until its response closes', async () => {
  const { admission, monitor } = pressuredAdmission();
  assert.equal(monitor.pressured, true);
  const diff = await admit(admission, 'POST', '/v0/topics/:topic/diff', '{"from_seq":1,"wait_ms":30000}');
  assert.equal(diff.listenerCount('close'), 0, 'a parked long-poll holds nothing of the gate');
  const append = await admit(admission, 'POST', '/v0/topics/:topic', '{"records":[{"data":1}]}');
  assert.equal(append.listenerCount('close'), 1, 'a held slot is given back on close');
  append.emit('close');
  // The slot came back: four more appends (inflightMax 4) are admitted at once.
  const more = await Promise.all([1, 2, 3, 4].map(() => admit(admission, 'POST', '/v0/topics/:topic', '{"records":[]}')));
  for (const r of more) r.emit('close');
});
