// The topic-request hot path between main and a topic worker (docs/ARCHITECTURE.md "Thread
// crossings"): every request main issues to one worker during one event-loop turn leaves as ONE
// message, and every result the worker settles during one turn comes back as ONE message,
// together with the watch and `/work` events of that turn, in the worker's order. Main's end is
// RequestClient (requestClient.ts), the worker's end serveRequests (requestServer.ts); this
// module holds what both ends agree on. Comlink stays for control calls (list, stats,
// checkpoints...); it costs one postMessage, one UUID and a proxy per call each way, which the
// profile of single-record appends showed as the top frames of both threads. Plain data only
// crosses; ids are per channel and never reused while pending.
// Bytes: the small append bodies of a batch cross in ONE transferred buffer (copied in back to
// back at the flush; the worker gets views), and so do the small replies of a result batch. A
// transferred ArrayBuffer per request or reply cost an allocation, a backing store and its sweep
// on both threads for a ~256-byte body. Big bodies (a whole buffer of their own) and reply pages
// are still transferred as they are, never copied. The hot requests and plain results cross on
// compact lanes of numbers and strings, not as cloned objects (hotLanes.ts). Claim and ack bodies
// cross unparsed like append bodies; the worker's end parses them (queueBodies.ts).

/**
 * Bodies and replies up to this size are copied into their batch's shared buffer; bigger ones
 * that own their whole buffer cross as they are (transferred, no copy).
 */
export const SHARED_BYTES_MAX = 16 * 1024;

/** True when `b` is the whole of a transferable ArrayBuffer. */
export function ownsBuffer(b: Uint8Array): boolean {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer;
}

/**
 * Requests whose bytes cross beside the object: appends and unparsed claim and ack bodies. For a
 * request as sent (ChannelRequest) and as received (WireRequest, `body` null until restored).
 */
export function hasBody<R extends { op: string }>(r: R): r is Extract<R, { op: 'append' | 'claimBody' | 'ackBody' }> {
  return r.op === 'append' || r.op === 'claimBody' || r.op === 'ackBody';
}
