// `spool backup <dest>`: an online backup of a running server (GET /v0/backup), consistent as of
// one WAL position. `-` writes the tar to stdout, a name ending in .tar writes a tar file
// (complete or absent: temp file + rename), anything else is a directory, new or empty, that
// becomes a data directory a server can start on.
import { Command } from 'commander';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CliError, EXIT, note, withClientOptions, type ClientOpts, type Outcome } from './common.js';

async function fetchBackup(o: ClientOpts): Promise<Readable> {
  let res: Response;
  try {
    res = await fetch(`${o.url.replace(/\/$/, '')}/v0/backup`, { headers: o.key ? { authorization: `Bearer ${o.key}` } : {} });
  } catch (err) {
    throw new CliError(`cannot reach ${o.url}: ${(err as Error).message}`, EXIT.unavailable);
  }
  if (!res.ok || !res.body) {
    const text = await res.text().catch(() => '');
    throw new CliError(
      `backup refused: HTTP ${res.status} ${text}`,
      res.status === 503 ? EXIT.unavailable : res.status === 404 ? EXIT.notFound : EXIT.rejected,
    );
  }
  note(`backup as of WAL position ${res.headers.get('spool-backup-point') ?? '?'}`);
  return Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
}

export function backupCommand(outcome: Outcome): Command {
  return withClientOptions(
    new Command('backup')
      .description('back up a running server, consistent as of one point: to a directory, a .tar file, or - (tar on stdout)')
      .argument('<dest>', 'a new or empty directory, a file name ending in .tar, or -'),
  ).action(async (dest: string, o: ClientOpts) => {
    const { assertEmptyTarget, untar } = await import('./untar.js');
    if (dest === '-') {
      await pipeline(await fetchBackup(o), process.stdout);
    } else if (dest.endsWith('.tar')) {
      if (fs.existsSync(dest)) throw new CliError(`${dest} exists`, EXIT.usage);
      const tmp = path.join(path.dirname(dest), `.${path.basename(dest)}.${process.pid}.tmp`);
      try {
        await pipeline(await fetchBackup(o), fs.createWriteStream(tmp));
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
