// The one place Comlink is used: control calls (list, stats, recovery, checkpoints, drain) from
// the main thread to the worker and WAL threads. Topic requests take the batched request channel
// (src/protocol/requestChannel.ts); streams (WAL acks, replay chunks, pushes) use raw MessagePorts.
// Swapping Comlink out is a change to this file only.
import * as Comlink from 'comlink';
import type { MessagePort } from 'node:worker_threads';

export type Remote<T> = Comlink.Remote<T>;

type Handler = ((ev: MessageEvent) => void) | { handleEvent(ev: MessageEvent): void };

/** Adapts a Node MessagePort (on/off) to the DOM-style endpoint Comlink expects. */
function endpoint(port: MessagePort): Comlink.Endpoint {
  const listeners = new WeakMap<object, (data: unknown) => void>();
  return {
    postMessage: (msg: unknown, transfer?: unknown[]) => port.postMessage(msg, transfer as never),
    addEventListener: (_type: string, handler: Handler) => {
      const l = (data: unknown) => {
        const ev = { data } as MessageEvent;
        if (typeof handler === 'function') handler(ev);
        else handler.handleEvent(ev);
      };
      port.on('message', l);
      listeners.set(handler, l);
    },
    removeEventListener: (_type: string, handler: Handler) => {
      const l = listeners.get(handler);
      if (l) port.off('message', l);
      listeners.delete(handler);
    },
    start: () => port.start(),
  } as Comlink.Endpoint;
}

export function expose(api: object, port: MessagePort): void {
  Comlink.expose(api, endpoint(port));
}

export function wrap<T>(port: MessagePort): Remote<T> {
  return Comlink.wrap<T>(endpoint(port));
}

/** Marks buffers to be transferred (not copied) with a call's argument or return value. */
export function transfer<T>(value: T, buffers: ArrayBuffer[]): T {
  return Comlink.transfer(value, buffers);
}

/**
 * Gives a remote up: its pending calls are dropped (they never settle) and it cannot be used
 * again. For a world abandoned after a simulated crash: a call left pending would otherwise keep
 * the whole world reachable (Comlink's finalization registry holds the endpoint strongly).
 */
export function release(remote: Remote<unknown>): void {
  remote[Comlink.releaseProxy]();
}
