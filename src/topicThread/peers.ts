// Peer requests between topic actors (docs/ARCHITECTURE.md "Thread crossings"): an actor's request to another topic's actor
// (dead-letter appends, terms, redrive reads and deletes, router forwards and probes) goes,
// after the step that made it, to the owning worker: this one (an ordinary request to the
// host; also a queue's redrive append to itself) or another over its peer port. The answer comes back as
// a `peerReply` input to the asking actor. Never through the HTTP thread. Runs on a worker.
import type { MessagePort } from 'node:worker_threads';
import type { PeerMessage } from '../protocol/messages/peer.js';
import type { TopicRequest, TopicResult } from '../protocol/messages/rpc.js';
import { workerOf } from '../core/names.js';
import type { TopicActor } from '../actors/topic/topicActor.js';

export interface PeerHost {
  request(req: TopicRequest): Promise<TopicResult>;
  peerReply(actor: TopicActor, token: number, result: TopicResult): void;
}

/** A copy that owns its whole buffer, so the original can be kept (retries) and the copy moved. */
function movable(req: TopicRequest): { req: TopicRequest; transfer: ArrayBuffer[] } {
  if (req.op !== 'append') return { req, transfer: [] };
  // A router forward's body is built for this one send (a retry builds a new one): when it owns
  // its whole ArrayBuffer (not a pool slice) it moves without a copy.
  const own = req.body.byteOffset === 0 && req.body.byteLength === req.body.buffer.byteLength;
  if (req.forward && own) return { req, transfer: [req.body.buffer as ArrayBuffer] };
  const body = req.body.slice();
  return { req: { ...req, body }, transfer: [body.buffer as ArrayBuffer] };
}

export class PeerLink {
  private nextId = 1;
  private readonly waiting = new Map<number, { actor: TopicActor; token: number }>();
  private queued: { actor: TopicActor; token: number; req: TopicRequest }[] = [];

  constructor(
    private readonly self: number,
    private readonly workers: number,
    /** Port to each other worker, by worker index (undefined for this one). */
    private readonly ports: readonly (MessagePort | undefined)[],
    private readonly host: PeerHost,
  ) {
    for (const p of ports) p?.on('message', (m: PeerMessage) => this.onMessage(p, m));
  }

  /** Queued now, sent after the current step (a step never runs another actor's step inside it). */
  send(actor: TopicActor, token: number, req: TopicRequest): void {
    this.queued.push({ actor, token, req });
    if (this.queued.length === 1) setImmediate(() => this.flush());
  }

  private flush(): void {
    const sends = this.queued;
    this.queued = [];
    for (const { actor, token, req } of sends) {
      const target = workerOf(req.topic, this.workers);
      if (target === this.self) {
        void this.host.request(req).then((result) => this.host.peerReply(actor, token, result));
        continue;
      }
      const id = this.nextId++;
      this.waiting.set(id, { actor, token });
      const m = movable(req);
      this.ports[target]!.postMessage({ t: 'req', id, req: m.req } satisfies PeerMessage, m.transfer);
    }
  }

  private onMessage(port: MessagePort, m: PeerMessage): void {
    switch (m.t) {
      case 'req':
        void this.host.request(m.req).then((result) => port.postMessage({ t: 'res', id: m.id, result } satisfies PeerMessage));
        return;
      case 'res': {
        const w = this.waiting.get(m.id);
        if (!w) return;
        this.waiting.delete(m.id);
        this.host.peerReply(w.actor, w.token, m.result);
        return;
      }
    }
  }
}
