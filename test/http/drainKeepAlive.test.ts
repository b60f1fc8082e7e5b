// The drain's step 2 (docs/ARCHITECTURE.md "Startup and shutdown"): the listener closes, but a
// keep-alive connection already open stays until the drain's requests are done, and its next
// request is answered: 200 from health, 503 shutting_down (Retry-After, Connection: close) from
// the rest. Closing the idle connections at once (as http.Server.close does) answered them
// with nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startServer, client } from '../helpers/server.js';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One keep-alive connection that sends a request and reads one whole response at a time. */
class KeepAlive {
  private buf = '';
  private waiter: (() => void) | undefined;
  closed = false;
  private constructor(readonly socket: net.Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      this.buf += d;
      this.waiter?.();
    });
    socket.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
    socket.on('error', () => {});
  }

  static open(port: number): Promise<KeepAlive> {
    return new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(new KeepAlive(s)));
      s.once('error', reject);
    });
  }

  request(method: string, path: string): Promise<RawResponse> {
    this.socket.write(`${method} ${path} HTTP/1.1\r\nHost: spool\r\n\r\n`);
    return this.response(`${method} ${path}`);
  }

  async response(what: string): Promise<RawResponse> {
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [statusLine, ...lines] = this.buf.slice(0, end).split('\r\n');
        const headers: Record<string, string> = {};
        for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
        const length = Number(headers['content-length'] ?? 0);
        if (this.buf.length >= end + 4 + length) {
          const body = this.buf.slice(end + 4, end + 4 + length);
          this.buf = this.buf.slice(end + 4 + length);
          return { status: Number(statusLine!.split(' ')[1]), headers, body };
        }
      }
      if (this.closed) throw new Error(`connection closed before a response to ${what}`);
      await new Promise<void>((r) => (this.waiter = r));
    }
  }
}

test('keep-alive connections open at SIGTERM get their answers while the drain runs', async () => {
  const srv = await startServer({ env: { SERVICE_SHUTDOWN_GRACE_MS: '5000' } });
  try {
    assert.equal((await client(srv.url).put('/v0/topics/dk')).status, 201);
    const [health, other, ready] = await Promise.all([KeepAlive.open(srv.port), KeepAlive.open(srv.port), KeepAlive.open(srv.port)]);
    for (const c of [health, other, ready]) assert.equal((await c.request('GET', '/v0/health')).status, 200);
    // A request still running (its body half sent) keeps the drain in its request phase.
    const upload = await KeepAlive.open(srv.port);
    const body = JSON.stringify({ records: [{ data: 'x' }] });
    upload.socket.write(
      `POST /v0/topics/dk HTTP/1.1\r\nHost: spool\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((r) => setTimeout(r, 100));
    srv.proc.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 400));

    assert.equal((await health.request('GET', '/v0/health')).status, 200, 'health stays 200 while draining');
    const refused = await other.request('GET', '/v0/topics/dk');
    assert.equal(refused.status, 503);
    assert.equal(JSON.parse(refused.body).error.code, 'shutting_down');
    assert.equal(refused.headers['retry-after'], '1');
    assert.equal(refused.headers['connection'], 'close');
    const notReady = await ready.request('GET', '/v0/ready');
    assert.equal(notReady.status, 503);
    assert.equal(JSON.parse(notReady.body).error.code, 'shutting_down');
    // New connections are not accepted.
    await assert.rejects(KeepAlive.open(srv.port), /ECONNREFUSED/);

    // The running request finishes normally, then the drain completes.
    upload.socket.write(body.slice(5));
    assert.equal((await upload.response('the upload')).status, 200, 'a request running at SIGTERM finishes');
    assert.equal(await srv.stop(), 0, srv.stderr());
  } finally {
    await srv.stop();
  }
});
