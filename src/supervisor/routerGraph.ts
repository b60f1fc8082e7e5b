// The router graph's rules (docs/API.md "Routers"; docs/ARCHITECTURE.md "Routers"), pure functions over the edges
// source → dest of the existing routers: the cycle a new router would close (reported as the
// the `detail.cycle` path of docs/API.md "Routers"), fan-in into a dest, and the upstream order read-your-writes drains in.

export interface Edge {
  name: string;
  source: string;
  dest: string;
}

/**
 * The directed cycle `source → dest` would close, as the `detail.cycle` path of docs/API.md "Routers": the new router's source,
 * then the path through existing routers from its dest back to it; null when there is none.
 * With routers a→b, b→c, adding c→a gives ["c","a","b","c"].
 */
export function cycleThrough(edges: Iterable<Edge>, source: string, dest: string, except?: string): string[] | null {
  const out = new Map<string, string[]>();
  for (const e of edges) {
    if (e.name === except) continue;
    const l = out.get(e.source);
    if (l) l.push(e.dest);
    else out.set(e.source, [e.dest]);
  }
  for (const l of out.values()) l.sort();
  // Breadth-first from dest: the shortest path back to source (deterministic by name order).
  const prev = new Map<string, string | null>([[dest, null]]);
  const queue = [dest];
  while (queue.length > 0) {
    const t = queue.shift()!;
    if (t === source) {
      const path: string[] = [];
      for (let at: string | null = t; at !== null; at = prev.get(at)!) path.unshift(at);
      return [source, ...path];
    }
    for (const n of out.get(t) ?? []) {
      if (prev.has(n)) continue;
      prev.set(n, t);
      queue.push(n);
    }
  }
  return null;
}

/**
 * The longest chain of routers a copy could travel if `source → dest` were added, as its topics
 * (one more than its routers), cut off once it holds more than `maxHops` routers: the routers
 * into `source` back up the chain (fan-in is refused, so there is one such chain), the new
 * router, then the longest way on from `dest`; no topic twice (a cycle ends where it meets
 * itself, as the origin rule ends a copy there).
 */
export function longestChainThrough(edges: Iterable<Edge>, source: string, dest: string, maxHops: number): string[] {
  const into = new Map<string, string>();
  const out = new Map<string, Set<string>>();
  for (const e of edges) {
    if (!into.has(e.dest)) into.set(e.dest, e.source);
    let l = out.get(e.source);
    if (!l) out.set(e.source, (l = new Set()));
    l.add(e.dest);
  }
  const up = [source];
  const onChain = new Set([source, dest]);
  for (let at = into.get(source); at !== undefined && !onChain.has(at) && up.length <= maxHops; at = into.get(at)) {
    up.unshift(at);
    onChain.add(at);
  }
  // Depth-first from dest, stopping as soon as the chain is longer than the limit.
  let best: string[] = [];
  const path: string[] = [];
  const walk = (t: string): boolean => {
    path.push(t);
    if (path.length > best.length) best = [...path];
    if (up.length + best.length - 1 > maxHops) return true;
    for (const n of [...(out.get(t) ?? [])].sort()) {
      if (onChain.has(n)) continue;
      onChain.add(n);
      const done = walk(n);
      onChain.delete(n);
      if (done) return true;
    }
    path.pop();
    return false;
  };
  walk(dest);
  return [...up, ...best];
}

/** A router from another source into `dest` (fan-in is refused), or undefined. */
export function fanInConflict(edges: Iterable<Edge>, source: string, dest: string, except?: string): Edge | undefined {
  for (const e of edges) if (e.name !== except && e.dest === dest && e.source !== source) return e;
  return undefined;
}

/**
 * The routers whose pending forwards reach `topic`, upstream first: draining them in this order
 * makes every record appended anywhere upstream visible in `topic` (cycles end where they meet).
 */
export function upstreamOrder(byDest: (topic: string) => readonly Edge[], topic: string): Edge[] {
  const seen = new Set<string>();
  const order: Edge[] = [];
  const visit = (t: string, depth: number) => {
    if (depth > 64) return;
    for (const e of byDest(t)) {
      if (seen.has(e.name)) continue;
      seen.add(e.name);
      visit(e.source, depth + 1);
      order.push(e);
    }
  };
  visit(topic, 0);
  return order;
}
