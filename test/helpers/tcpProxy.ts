// A tiny TCP proxy for tests (node:net) that sits between a client (e.g. a browser) and a server
// so the test can break the network in ways the server cannot tell from a normal client:
// - dropAll() destroys every proxied connection on both sides (a network drop),
// - hold(true) keeps new connections waiting, unforwarded, until hold(false),
// - blackhole(true) keeps connections open but silently discards server→client bytes (data the
//   server wrote and the kernel acknowledged, lost in flight before the client read it).
// It also sniffs the HTTP/1.1 request heads the client sends, so tests can assert on headers a
// browser adds by itself (e.g. EventSource's Last-Event-ID on reconnect).
import net from 'node:net';

export interface SniffedRequest {
  /** Proxied connection number (1-based, in accept order). */
  conn: number;
  method: string;
  path: string;
  /** Header names lower-cased; a repeated header keeps its last value. */
  headers: Record<string, string>;
  /** Date.now() when the head was complete. */
  at: number;
}

export interface TcpProxy {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  /** Every request head seen so far, in arrival order. */
  requests: SniffedRequest[];
  /** Start or stop discarding server→client bytes on all connections (open now or later). */
  blackhole(on: boolean): void;
  /**
   * While on, new connections are accepted but neither read nor connected upstream (a client
   * reconnecting into a network that is still down); turning it off splices them through.
   */
  hold(on: boolean): void;
  /** Everything discarded while blackholed, as latin1 text. */
  discarded(): string;
  /** Destroy every open proxied connection, both sides; returns how many were open. */
  dropAll(): number;
  /** Number of connections currently open. */
  open(): number;
  close(): Promise<void>;
}

const HEAD = /^([A-Z]+) (\S+) HTTP\/1\.[01]\r\n([\s\S]*?)\r\n\r\n/;

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  const requests: SniffedRequest[] = [];
  let holeOn = false;
  let hole = '';
  let nconn = 0;

  let holding = false;
  const held: (() => void)[] = [];

  const server = net.createServer((clientSock) => {
    const conn = ++nconn;
    if (!holding) return splice(clientSock, conn);
    // Held: the connection is accepted but nothing is read or forwarded until release.
    const onErr = () => clientSock.destroy();
    clientSock.on('error', onErr);
    held.push(() => {
      clientSock.off('error', onErr);
      if (!clientSock.destroyed) splice(clientSock, conn);
    });
  });

  function splice(clientSock: net.Socket, conn: number): void {
    const upstream = net.connect(targetPort, targetHost);
    const pair = { client: clientSock, upstream };
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      clientSock.destroy();
      upstream.destroy();
    };
    clientSock.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    clientSock.setNoDelay(true);
    upstream.setNoDelay(true);

    // client → server: forward, and pick request heads out of the byte stream. Bodies in these
    // tests are JSON, which never looks like a request line, so a regex scan is enough.
    let pending = '';
    clientSock.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      pending += chunk.toString('latin1');
      for (;;) {
        const i = pending.search(/[A-Z]+ \S+ HTTP\/1\.[01]\r\n/);
        if (i < 0) {
          pending = pending.slice(-64);
          break;
        }
        const m = HEAD.exec(pending.slice(i));
        if (!m) {
          pending = pending.slice(i);
          break;
        }
        const headers: Record<string, string> = {};
        for (const line of m[3].split('\r\n')) {
          const c = line.indexOf(':');
          if (c > 0) headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
        }
        requests.push({ conn, method: m[1], path: m[2], headers, at: Date.now() });
        pending = pending.slice(i + m[0].length);
      }
    });
    // server → client: forward unless blackholed.
    upstream.on('data', (chunk: Buffer) => {
      if (holeOn) hole += chunk.toString('latin1');
      else clientSock.write(chunk);
    });
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;

  const proxy: TcpProxy = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    blackhole(on: boolean) {
      holeOn = on;
    },
    discarded: () => hole,
    hold(on: boolean) {
      holding = on;
      if (!on) for (const start of held.splice(0)) start();
    },
    dropAll() {
      const n = pairs.size;
      for (const p of [...pairs]) {
        p.client.destroy();
        p.upstream.destroy();
      }
      pairs.clear();
      return n;
    },
    open: () => pairs.size,
    async close() {
      proxy.hold(false);
      proxy.dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
