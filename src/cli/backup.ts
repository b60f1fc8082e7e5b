// `spool backup <dest>`: an online backup of a running server (GET /v0/backup), consistent as of
// one WAL position. `-` writes the tar to stdout, a name ending in .tar writes a tar file
// (complete or absent: temp file + rename; a stream that ends before the server's last entry is
// refused), anything else is a directory, new or empty, that becomes a data directory a server
// can start on.
import { Command } from 'commander';
import fs from 'node:fs';
import path from 'node:path';
import { Readable, Transform, Writable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { retryDelayMs, sleep } from '../client/backoff.js';
import { errorFromResponse } from '../client/errors.js';
import { CliError, EXIT, note, serverUrl, stdoutIsTheProduct, withClientOptions, type ClientOpts, type Outcome } from './common.js';

/** Retries of a 429 or 503 (a server still recovering, or busy), as every other command's requests. */
const BACKUP_RETRIES = 4;
const BACKUP_BACKOFF = { baseMs: 100, maxMs: 5000 };

async function fetchBackup(o: ClientOpts): Promise<Readable> {
  const url = serverUrl(o);
  for (let attempt = 0; ; attempt++) {
    let res: Response;
    try {
      res = await fetch(`${url.replace(/\/$/, '')}/v0/backup`, { headers: o.key ? { authorization: `Bearer ${o.key}` } : {} });
    } catch (err) {
      throw new CliError(`cannot reach ${o.url}: ${(err as Error).message}`, EXIT.unavailable);
    }
    if (res.ok && res.body) {
      note(`backup as of WAL position ${res.headers.get('spool-backup-point') ?? '?'}`);
      return Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
    }
    // Refused: one line with the server's code and message (reportError), after the retries for 429/503.
    const err = errorFromResponse(res.status, res.headers.get('retry-after'), await res.text().catch(() => ''), Date.now());
    if ((res.status !== 429 && res.status !== 503) || attempt >= BACKUP_RETRIES) throw err;
    await sleep(retryDelayMs(BACKUP_BACKOFF, attempt, err));
  }
}

/** Bytes of a tar's end the check keeps: BACKUP_POINT's header and content, and the two zero blocks after. */
const TAR_TAIL_BYTES = 4096;
const TAR_BLOCK = 512;

/**
 * Passes a backup's tar through and fails it unless it ended whole: a stream that stopped early
 * but cleanly (a proxy, a server killed between entries) must not leave a tar that looks
 * complete. Whole means the server's last entry, BACKUP_POINT, then the tar's two zero blocks.
 */
class WholeBackup extends Transform {
  private tail = Buffer.alloc(0);
  private total = 0;

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.total += chunk.length;
    const both = Buffer.concat([this.tail, chunk]);
    this.tail = both.subarray(Math.max(0, both.length - TAR_TAIL_BYTES));
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    const t = this.tail;
    const ended = this.total % TAR_BLOCK === 0 && t.length >= 2 * TAR_BLOCK && t.subarray(t.length - 2 * TAR_BLOCK).every((b) => b === 0);
    let point = false;
    // Headers sit at multiples of 512 from the tar's start; the tail ends on one.
    for (let at = t.length - 2 * TAR_BLOCK - TAR_BLOCK; ended && at >= 0 && !point; at -= TAR_BLOCK)
      point = t.toString('latin1', at, at + 13) === 'BACKUP_POINT\0';
    if (ended && point) return done();
    done(new CliError('the backup stream ended before its BACKUP_POINT entry: it was cut short, and nothing is kept', EXIT.failure));
  }
}

/** The backup piped into `sink` whole, or a CliError (a dropped connection included). */
async function streamBackup(o: ClientOpts, sink: NodeJS.WritableStream): Promise<void> {
  const source = await fetchBackup(o);
  try {
    await pipeline(source, new WholeBackup(), sink);
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`the backup stream broke off: ${(err as Error).message}`, EXIT.unavailable);
  }
}

export function backupCommand(outcome: Outcome): Command {
  return withClientOptions(
    new Command('backup')
      .description('back up a running server, consistent as of one point: to a directory, a .tar file, or - (tar on stdout)')
      .argument('<dest>', 'a new or empty directory, a file name ending in .tar, or -'),
  ).action(async (dest: string, o: ClientOpts) => {
    const { assertEmptyTarget, untar } = await import('./untar.js');
    if (dest === '-') {
      stdoutIsTheProduct('the reader of the backup went away before its end: what it got is not a whole backup');
      // Through a stand-in, so that a failed stream does not destroy stdout itself (its error
      // would surface as an uncaught one) and the refusal is one line, as for a file.
      const toStdout = new Writable({
        write: (chunk: Buffer, _enc, done) => (process.stdout.write(chunk) ? done() : process.stdout.once('drain', () => done())),
      });
      await streamBackup(o, toStdout);
    } else if (dest.endsWith('.tar')) {
      if (fs.existsSync(dest)) throw new CliError(`${dest} exists`, EXIT.usage);
      // Missing parents are made, as for a directory; the file is opened before the request, so a
      // path that cannot be written is one line (exit 2) and asks the server for nothing.
      fs.mkdirSync(path.dirname(dest), { recursive: true });
      const tmp = path.join(path.dirname(dest), `.${path.basename(dest)}.${process.pid}.tmp`);
      let fd: number;
      try {
        fd = fs.openSync(tmp, 'wx');
      } catch (err) {
        throw new CliError(`cannot write ${dest}: ${(err as Error).message}`, EXIT.usage);
      }
      try {
        await streamBackup(o, fs.createWriteStream('', { fd }));
        fs.renameSync(tmp, dest);
      } finally {
        fs.rmSync(tmp, { force: true });
      }
    } else {
      assertEmptyTarget(dest, () => undefined);
      const r = await untar(await fetchBackup(o), dest);
      note(`${r.files} files, ${r.bytes} bytes in ${dest}`);
    }
    outcome.code = EXIT.ok;
  });
}
