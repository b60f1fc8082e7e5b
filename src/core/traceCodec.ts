// JSON-lines encoding of actor traces (docs/ARCHITECTURE.md "Traces and replay"). Byte arrays travel as {"$b64": "..."} so a
// trace line is plain JSON; everything else is already plain data.

export function encodeTraceValue(v: unknown): string {
  return JSON.stringify(v, function (this: Record<string, unknown>, key: string, value: unknown) {
    const orig = this[key];
    if (orig instanceof Uint8Array) return { $b64: Buffer.from(orig.buffer, orig.byteOffset, orig.byteLength).toString('base64') };
    return value;
  });
}

export function decodeTraceValue<T>(s: string): T {
  return JSON.parse(s, (_key, value: unknown) => {
    if (value && typeof value === 'object' && typeof (value as { $b64?: unknown }).$b64 === 'string' && Object.keys(value).length === 1) {
      return Buffer.from((value as { $b64: string }).$b64, 'base64');
    }
    return value;
  }) as T;
}

export interface TraceHeader {
  v: 2;
  kind: 'spool-trace';
  worker: number;
  workers: number;
  actor: {
    maxLimit: number;
    segmentBytes: number;
    maxTopics: number;
    packBytes?: number;
    packFramesMax?: number;
    packFramesFromBytes?: number;
    walFileBytes?: number;
  };
  outputs: boolean;
}

/** One step: the input an actor got, at what time, what its queries answered, what it did. */
export interface TraceLine {
  n: number;
  a: string;
  at: number;
  in: unknown;
  /** Answers to ctx queries (credit, topic slots, new ids), in call order. */
  q?: unknown[];
  /** Boot seed, on the step that ends recovery (actors' RNGs are seeded from it). */
  seed?: string;
  out?: unknown[];
}
