// The HTTP server's open connections, for the drain (docs/ARCHITECTURE.md "Startup and shutdown"
// step 2): it waits until none is in the middle of a request before Fastify's close, which
// closes the idle ones. Until then an idle keep-alive connection's next request is answered
// (health 200, anything else 503 shutting_down with Connection: close) instead of cut off.
// One set entry and one listener per connection, nothing per request. Runs on the main thread.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** How often the drain looks again while requests are still running. */
const POLL_MS = 20;

export class OpenConnections {
  private readonly sockets = new Set<Socket>();

  constructor(server: Server) {
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
  }

  /**
   * Connections with a request in progress: node:http gives a connection's socket the response
   * it is answering (`_httpMessage`) from the request's headers until the response is written,
   * and none while it idles between requests.
   */
  running(): number {
    let n = 0;
    for (const s of this.sockets) if ((s as Socket & { _httpMessage?: unknown })._httpMessage) n++;
    return n;
  }

  /** Resolves once no connection has a request in progress (the drain's grace bounds the wait). */
  async idle(): Promise<void> {
    while (this.running() > 0) await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
