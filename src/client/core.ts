// What the long-running helpers (watch, follow, work streams, workers) need from the client: the
// transport, the decoder and the few calls they make. `Spool` implements it; the helpers import
// only this interface, so no module under src/client imports spool.ts back (test/unit/imports).
import type { Transport } from './transport.js';
import type * as T from './types.js';

export interface ClientCore<S> {
  readonly transport: Transport;
  readonly bigint: boolean;
  decode<V>(text: string, raw?: boolean, topIsRecord?: boolean): V;
  createWatch(req: T.WatchRequest<S>, opts?: { lenient?: boolean; signal?: AbortSignal }): Promise<T.WatchSession<S>>;
  diff(topic: string, opts: T.DiffOptions<S> & { raw?: boolean }): Promise<T.DiffResult<S, unknown>>;
  getTopic(topic: string, opts?: { touch?: boolean; signal?: AbortSignal }): Promise<T.TopicState<S>>;
  claim(queue: string, opts: T.ClaimOptions): Promise<T.ClaimResult<S, unknown>>;
  ack(queue: string, req: T.SeqsRequest<S>): Promise<T.AckResult<S>>;
  nack(queue: string, req: T.SeqsRequest<S> & { delay_ms?: number }): Promise<T.NackResult<S>>;
  extend(queue: string, req: T.SeqsRequest<S> & { lease_ms: number }): Promise<T.ExtendResult<S>>;
  term(queue: string, req: T.TermRequest<S>): Promise<T.TermResult<S>>;
}
