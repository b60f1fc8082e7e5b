// Node's own HTTP parser errors (bad request lines, bad headers, oversized headers) still get the
// spec's error body (docs/API.md "Errors"), written by the server's clientErrorHandler.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { httpSuite } from '../support/httpSuite.js';

const { srv } = httpSuite();

function raw(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.createConnection({ port, host: '127.0.0.1' }, () => sock.write(bytes));
    let out = '';
    sock.on('data', (d) => (out += d.toString('latin1')));
    sock.on('end', () => resolve(out));
    sock.on('error', reject);
    sock.setTimeout(5000, () => {
      sock.destroy();
      resolve(out);
    });
  });
}

function parse(res: string): { status: number; body: any } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(res)?.[1]);
  const body = JSON.parse(res.slice(res.indexOf('\r\n\r\n') + 4));
  return { status, body };
}

test('a garbage request line gets 400 with the spec error body', async () => {
  const r = parse(await raw(srv.port, 'NOT A REQUEST\r\n\r\n'));
  assert.equal(r.status, 400);
  assert.equal(r.body.error.code, 'invalid_request');
  assert.equal(typeof r.body.error.message, 'string');
});

test('an invalid header gets 400 with the spec error body', async () => {
  const r = parse(await raw(srv.port, 'GET /v0/health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'));
  assert.equal(r.status, 400);
  assert.equal(r.body.error.code, 'invalid_request');
});

test('oversized headers get 431 with the spec error body', async () => {
  const r = parse(await raw(srv.port, `GET /v0/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`));
  assert.equal(r.status, 431);
  assert.equal(r.body.error.code, 'invalid_request');
});

test('a conflicting Content-Length gets 400 and nothing is appended', async () => {
  const body = '{"records":[{"data":1}]}';
  const r = parse(
    await raw(
      srv.port,
      `POST /v0/topics/mal.t HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nContent-Length: 3\r\n\r\n${body}`,
    ),
  );
  assert.equal(r.status, 400);
  assert.equal(r.body.error.code, 'invalid_request');
  const st = await fetch(`${srv.url}/v0/topics/mal.t`);
  assert.equal(st.status, 404);
});
