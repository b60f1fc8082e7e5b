// GET /v0/backup (docs/OPERATIONS.md "Backup"): an online backup streamed as a tar of a data
// directory consistent as of one WAL position (src/supervisor/backup.ts), which `spool backup`
// saves and `spool restore` unpacks. The position is in the `spool-backup-point` header and in
// the last tar entry, BACKUP_POINT. Staged hard links are removed when the stream ends.
import fs from 'node:fs';
import type { FastifyInstance } from 'fastify';
import tar from 'tar-stream';
import type { Supervisor } from '../../supervisor/supervisor.js';
import { stageBackup, type StagedBackup } from '../../supervisor/backup.js';
import { withHttpErrors } from '../reply.js';

async function writeEntries(pack: tar.Pack, staged: StagedBackup): Promise<void> {
  for (const f of staged.files) {
    await new Promise<void>((resolve, reject) => {
      const cb = (err?: Error | null) => (err ? reject(err) : resolve());
      if (f.size === 0) return void pack.entry({ name: f.name, size: 0, mode: 0o644 }, Buffer.alloc(0), cb);
      const entry = pack.entry({ name: f.name, size: f.size, mode: 0o644 }, cb);
      const rs = fs.createReadStream(f.source, { start: 0, end: f.size - 1 });
      rs.on('error', reject);
      // A pack destroyed under it (the client went away) fails the entry too: without a listener
      // that error would end the process.
      entry.on('error', (err) => (rs.destroy(), reject(err)));
      rs.pipe(entry);
    });
  }
  pack.entry({ name: 'BACKUP_POINT', mode: 0o644 }, `${JSON.stringify(staged.point)}\n`);
  pack.finalize();
}

export function backupRoutes(app: FastifyInstance, sup: Supervisor): void {
  app.get(
    '/v0/backup',
    withHttpErrors(async (req, reply) => {
      const staged = await stageBackup(sup.settings.dataDir, sup.backupSource());
      if (reply.raw.destroyed || req.raw.destroyed) {
        // The client went away while the checkpoint ran: its 'close' has come and gone.
        staged.remove();
        req.log.warn({ point: staged.point }, 'backup not sent: the client went away before it started');
        return reply.hijack();
      }
      const pack = tar.pack();
      let closed = false;
      // However the reply ends (finished, client gone, HEAD), the tar stops and the links go.
      reply.raw.on('close', () => {
        closed = true;
        pack.destroy();
        staged.remove();
      });
      writeEntries(pack, staged).catch((err: Error) => {
        if (closed) return req.log.warn({ point: staged.point }, 'backup stream closed before the end (client went away)');
        req.log.error({ err }, 'backup stream failed');
        pack.destroy(err);
      });
      req.log.info({ point: staged.point, files: staged.files.length }, 'backup started');
      return reply
        .code(200)
        .header('content-type', 'application/x-tar')
        .header('spool-backup-point', `${staged.point.fileNo}:${staged.point.offset}`)
        .send(pack);
    }),
  );
}
