// Router messages (docs/API.md "Routers"; docs/ARCHITECTURE.md "Routers"): what main's RouterRegistry tells a source topic's actor,
// what a forwarder sends a dest topic's actor (on the same worker or over a peer port) and what
// comes back. Plain data; the forward's copies ride in the append body as a record section.

/** The delete match language (docs/API.md "Record delete"): Eq tag, or Glob literal prefix (trailing `*` removed). */
export interface TagMatch {
  op: 'Eq' | 'Glob';
  value: string;
}

export type Guarantee = 'at_least_once' | 'exactly_once';

/** A router as the source actor runs it. `id` is minted by the registry, never reused. */
export interface RouterDef {
  name: string;
  id: number;
  source: string;
  dest: string;
  preserveNode: boolean;
  preserveTag: boolean;
  filter: TagMatch | null;
  allowCycle: boolean;
  guarantee: Guarantee;
}

/**
 * The highest router id some topic holds progress of (its `routers_applied`), and one topic that
 * holds it: what each worker reports at the end of recovery, so the registry never hands that id
 * out again (docs/ARCHITECTURE.md "Routers", the id floor).
 */
export interface RouterIdFloor {
  id: number;
  topic: string;
}

/** The larger of two floors (either may be absent). */
export function higherFloor(a: RouterIdFloor | null, b: RouterIdFloor | null): RouterIdFloor | null {
  if (a === null) return b;
  return b !== null && b.id > a.id ? b : a;
}

/** One run of forwarded records with the same origin topic and hop count. */
export type OriginRun = [count: number, origin: string, hops: number];

/**
 * The forward header of a router's copy batch (an `AppendRequest.forward`, never set from HTTP).
 * The dest writes `srcLast` and its running total into the batch's APPEND frame, so copies and
 * progress are one checksummed unit.
 */
export interface ForwardInfo {
  router: string;
  routerId: number;
  /** The dest instance the forwarder learnt from its probe (0: any); a recreated dest refuses. */
  destId: number;
  srcFirst: number;
  srcLast: number;
  /** Origin and hop count of each copy, in record order (run-length). */
  runs: OriginRun[];
  /**
   * A trim notice (docs/API.md "Routers" `source_trim`): this many source records in (srcFirst, srcLast]
   * were lost before they were forwarded; the batch is one marker record, not copies.
   */
  lost?: number;
  /** Copies (not a trim notice): the append's body is not JSON but a record section. */
  copies?: CopyLayout;
}

/**
 * Where a copy batch's records sit in its body: `count` records in the APPEND frame's record
 * layout (docs/FORMAT.md) at [offset, offset + bytes). The bytes before are room for the dest's
 * frame header and the 7 after for its padding, so the dest frames the batch where it lies.
 */
export interface CopyLayout {
  count: number;
  offset: number;
  bytes: number;
}

/** A dest's answer to a forward or a probe: how far it holds this router's copies. */
export interface ForwardAck {
  applied: number;
  total: number;
  destId: number;
}

/** Main → source actor: install or update a router (start null: a new one starts at the head). */
export interface RouterSetRequest {
  op: 'routerSet';
  topic: string;
  def: RouterDef;
  start: number | null;
}

export interface RouterRemoveRequest {
  op: 'routerRemove';
  topic: string;
  router: string;
}

/**
 * Main → source actor: answer once the named forwarders reached the head as of this request
 * (read-your-writes, docs/API.md "Routers"), or are blocked; `wait` false answers at once (stats).
 */
export interface RouterDrainRequest {
  op: 'routerDrain';
  topic: string;
  routers: string[];
  wait: boolean;
}

/** Forwarder → dest actor (peer): how far do you hold router `routerId`? */
export interface RouterProbeRequest {
  op: 'routerProbe';
  topic: string;
  routerId: number;
}

export type RouterRequest = RouterSetRequest | RouterRemoveRequest | RouterDrainRequest | RouterProbeRequest;

/** Per-router figures a source actor reports (drain replies, metrics). */
export interface RouterStats {
  router: string;
  forwarded_total: number;
  /** Source records not yet handled by the forwarder. */
  lag: number;
  last_error: string | null;
}
