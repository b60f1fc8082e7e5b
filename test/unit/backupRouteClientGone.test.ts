// GET /v0/backup when the client goes away (src/http/routes/backup.ts): before the stream starts
// (while the backup's checkpoint runs) and while it streams. The server must stay up and remove
// its staged hard links either way. An in-process Fastify app with the route, a data directory
// of real files and a backup source whose checkpoint waits until the test lets it go.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { backupRoutes } from '../../src/http/routes/backup.js';
import type { BackupSource } from '../../src/supervisor/backup.js';
import type { Supervisor } from '../../src/supervisor/supervisor.js';
import { metaDir, segmentFileName, topicDir, walDir, walFileName } from '../../src/format/layout.js';

const CUT = { fileNo: 1, offset: 0 };
const BIG = 8 * 1024 * 1024; // a segment file the tar stream takes a while to send

function dataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-bkgone-'));
  fs.mkdirSync(metaDir(dir), { recursive: true });
  fs.writeFileSync(
    path.join(metaDir(dir), `snapshot-${String(CUT.fileNo).padStart(20, '0')}-${String(CUT.offset).padStart(12, '0')}.snap`),
    'x',
  );
  fs.mkdirSync(walDir(dir), { recursive: true });
  fs.writeFileSync(path.join(walDir(dir), walFileName(1)), Buffer.alloc(4096));
  fs.mkdirSync(topicDir(dir, 1000000), { recursive: true });
  fs.writeFileSync(path.join(topicDir(dir, 1000000), segmentFileName(1)), Buffer.alloc(BIG, 7));
  return dir;
}

async function server(dir: string, checkpointDone: Promise<void>) {
  const source: BackupSource = {
    withFreshCheckpoint: async (fn) => (await checkpointDone, fn(CUT)),
    withRoutersHeld: (fn) => fn(),
    walPosition: async () => ({ fileNo: 1, offset: 4096 }),
  };
  const sup = { settings: { dataDir: dir }, backupSource: () => source } as unknown as Supervisor;
  const app = Fastify();
  backupRoutes(app, sup);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, port: (app.server.address() as net.AddressInfo).port };
}

/** A raw GET /v0/backup; resolves once the request is written. */
function request(port: number): Promise<net.Socket> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write('GET /v0/backup HTTP/1.1\r\nhost: x\r\n\r\n', () => resolve(s)));
    s.on('error', () => undefined);
  });
}

const staging = (dir: string) => fs.readdirSync(dir).filter((n) => !['meta', 'wal', 'topics'].includes(n));

async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond(), what);
}

test('a client gone while the checkpoint runs: nothing is sent, the staged links go, the server stays up', async () => {
  const dir = dataDir();
  let release!: () => void;
  const { app, port } = await server(dir, new Promise<void>((r) => (release = r)));
  try {
    const s = await request(port);
    await new Promise((r) => setTimeout(r, 50));
    s.destroy();
    await new Promise((r) => setTimeout(r, 50));
    release();
    await until('the staged links removed', () => staging(dir).length === 0);
    // Still serving: a second backup runs to its end.
    const res = await fetch(`http://127.0.0.1:${port}/v0/backup`);
    assert.equal(res.status, 200);
    assert.ok((await res.arrayBuffer()).byteLength > BIG);
    await until('removed after a whole backup', () => staging(dir).length === 0);
  } finally {
    await app.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a client gone while the tar streams: the server stays up and the staged links go', async () => {
  const dir = dataDir();
  const { app, port } = await server(dir, Promise.resolve());
  try {
    for (let round = 0; round < 5; round++) {
      const s = await request(port);
      await new Promise<void>((r) => s.once('data', () => r())); // the head and the first bytes
      s.destroy();
      await until('the staged links removed', () => staging(dir).length === 0);
    }
    const res = await fetch(`http://127.0.0.1:${port}/v0/backup`);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  } finally {
    await app.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
