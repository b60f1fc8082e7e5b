// Appenders for crash tests: `n` loops posting batches of 10 records to a real server until
// stopped (or until the server is gone), counting the records acknowledged.
import { client, type Server } from '../helpers/server.js';

export interface Appenders {
  /** Records acknowledged so far. */
  acked(): number;
  /** Stops the loops and waits for their requests to end. */
  stop(): Promise<void>;
}

/** `topicOf(w, b)`: the topic writer `w` sends its batch `b` to; each record's data is padded with `padBytes`. */
export function appenders(s: Server, n: number, topicOf: (w: number, b: number) => string, padBytes: number, padChar = 'x'): Appenders {
  const c = client(s.url);
  let acked = 0;
  let stopped = false;
  const pad = padChar.repeat(padBytes);
  const loops = Array.from({ length: n }, async (_, w) => {
    for (let b = 0; !stopped; b++) {
      const r = await c
        .post(`/v0/topics/${topicOf(w, b)}`, { records: Array.from({ length: 10 }, (_, i) => ({ data: { w, b, i, pad } })) })
        .catch(() => undefined);
      if (r?.status === 200) acked += 10;
      else if (r === undefined) return; // the server is gone
    }
  });
  return {
    acked: () => acked,
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
    },
  };
}
