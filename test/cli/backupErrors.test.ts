// How `spool backup` and `spool restore` fail (docs/CLI.md "Exit codes"): a server that answers
// 503 for a while is retried like every other command's requests; a refusal is one line with the
// server's code, not its raw body; a .tar whose directory is missing is written there (its
// parents made, as for a directory backup); a reader of `backup -` that goes away before the end
// fails the backup (exit 1), where `spool read | head` stops quietly; a full disk behind stdout is
// one line, no stack trace; a directory given to `restore` is a usage error, not "damaged".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startServer, killServersAfterFile, tempDir, CLI } from '../helpers/server.js';

killServersAfterFile();

const JSON_CT = { 'content-type': 'application/json' };

interface Ran {
  code: number | null;
  stderr: string;
}

/** Runs the CLI; `stdout` is where its output goes: ignored, a file descriptor, or a pipe read for `readBytes` bytes then closed. */
function run(args: string[], stdout: 'ignore' | number | { readBytes: number } = 'ignore'): Promise<Ran> {
  return new Promise((resolve) => {
    const out = typeof stdout === 'object' ? 'pipe' : stdout;
    const p = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', out, 'pipe'] });
    let stderr = '';
    p.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    if (typeof stdout === 'object') {
      let got = 0;
      p.stdout!.on('data', (d: Buffer) => {
        got += d.length;
        if (got >= stdout.readBytes) p.stdout!.destroy();
      });
    }
    p.on('exit', (code) => resolve({ code, stderr }));
  });
}

const noTrace = (r: Ran) => assert.doesNotMatch(r.stderr, /\n\s+at /, `no stack trace: ${r.stderr}`);

test('backup: 503 retried, refusals in one line, missing parents made, an early reader or a full disk fails it', async () => {
  const srv = await startServer();
  const dir = tempDir('spool-backup-errors-');
  const whole = path.join(dir, 'whole.tar');
  try {
    // Big enough that a reader gone after its first bytes leaves the backup unwritten.
    for (let i = 0; i < 4; i++)
      await fetch(`${srv.url}/v0/topics/errs.a`, {
        method: 'POST',
        headers: JSON_CT,
        body: JSON.stringify({ records: [{ data: 'x'.repeat(200_000) }] }),
      });
    const ok = await run(['backup', whole, '--url', srv.url]);
    assert.equal(ok.code, 0, ok.stderr);
  } finally {
    await srv.stop();
  }
  const tar = fs.readFileSync(whole);
  assert.ok(tar.length > 512 * 1024, `a tar of ${tar.length} bytes`);
  // A stand-in for the server: the statuses to answer first, then the whole tar.
  let refusals: { status: number; code: string }[] = [];
  let asked = 0;
  const fake = http.createServer((_req, res) => {
    asked++;
    const r = refusals.shift();
    if (r) {
      res.writeHead(r.status, { 'content-type': 'application/json', 'retry-after': '0' });
      return res.end(JSON.stringify({ error: { code: r.code, message: `refused for the test (${r.code})` } }));
    }
    res.writeHead(200, { 'content-type': 'application/x-tar', 'spool-backup-point': '1:0' });
    res.end(tar);
  });
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(fake.address() as { port: number }).port}`;
  try {
    refusals = [
      { status: 503, code: 'not_ready' },
      { status: 503, code: 'not_ready' },
    ];
    asked = 0;
    const retried = path.join(dir, 'retried.tar');
    const r1 = await run(['backup', retried, '--url', url]);
    assert.equal(r1.code, 0, r1.stderr);
    assert.equal(asked, 3, 'two 503s, then the backup');
    assert.deepEqual(fs.readFileSync(retried), tar);

    refusals = [{ status: 403, code: 'forbidden' }];
    const r2 = await run(['backup', path.join(dir, 'refused.tar'), '--url', url]);
    assert.equal(r2.code, 3, r2.stderr);
    assert.match(r2.stderr, /^spool backup: refused for the test \(forbidden\) \(HTTP 403 forbidden\)\n$/);

    refusals = Array.from({ length: 5 }, () => ({ status: 503, code: 'not_ready' }));
    const r3 = await run(['backup', path.join(dir, 'never.tar'), '--url', url]);
    assert.equal(r3.code, 5, r3.stderr);
    assert.match(r3.stderr, /\(HTTP 503 not_ready\)\n$/);
    assert.deepEqual(refusals, [], 'five attempts: the first and four retries');

    const nested = path.join(dir, 'no', 'such', 'dir', 'b.tar');
    const r4 = await run(['backup', nested, '--url', url]);
    assert.equal(r4.code, 0, r4.stderr);
    assert.deepEqual(fs.readFileSync(nested), tar);

    const early = await run(['backup', '-', '--url', url], { readBytes: 1 });
    assert.equal(early.code, 1, `a reader gone early fails the backup: ${early.stderr}`);
    assert.match(early.stderr, /went away before its end/);
    noTrace(early);

    const full = fs.openSync('/dev/full', 'w');
    try {
      const r5 = await run(['backup', '-', '--url', url], full);
      assert.equal(r5.code, 1, r5.stderr);
      assert.match(r5.stderr, /^spool: cannot write to stdout: .*ENOSPC/m);
      noTrace(r5);
    } finally {
      fs.closeSync(full);
    }

    const unpacked = path.join(dir, 'unpacked');
    assert.equal((await run(['backup', unpacked, '--url', url])).code, 0);
    const r6 = await run(['restore', unpacked, path.join(dir, 'restored')]);
    assert.equal(r6.code, 2, r6.stderr);
    assert.match(r6.stderr, /is a directory/);
    assert.equal(fs.existsSync(path.join(dir, 'restored')), false, 'nothing made');
  } finally {
    fake.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
