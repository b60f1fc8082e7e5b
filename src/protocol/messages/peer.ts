// The worker ↔ worker peer ports (raw, docs/ARCHITECTURE.md "Thread crossings"): one actor's request to another topic's actor
// when the two live on different workers (dead-letter appends and terms; a redrive's reads and
// deletes of the dead-letter topic; router forwards, which are appends carrying a `forward`
// header, and `routerProbe`s, src/protocol/messages/router.ts), and its result. Plain data; request
// bodies are transferred.
import type { TopicRequest, TopicResult } from './rpc.js';

export type PeerMessage =
  /** `id` is the sender's, unique per peer port; the answer carries it back. */
  { t: 'req'; id: number; req: TopicRequest } | { t: 'res'; id: number; result: TopicResult };
