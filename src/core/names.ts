// Name rules of docs/API.md "Conventions", shared by the HTTP layer and the actors.
const TOPIC_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$/;
const ROUTER_RE = /^[A-Za-z0-9][A-Za-z0-9._:>-]{0,254}$/;

export function isTopicName(s: unknown): s is string {
  return typeof s === 'string' && TOPIC_RE.test(s);
}

export function isRouterName(s: unknown): s is string {
  return typeof s === 'string' && ROUTER_RE.test(s);
}

/** fnv1a32 over the UTF-8 bytes of a name (names are ASCII, so over its chars). */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Placement: the worker that owns a topic name. Never persisted, so N may change across restarts. */
export function workerOf(name: string, workers: number): number {
  return fnv1a32(name) % workers;
}
