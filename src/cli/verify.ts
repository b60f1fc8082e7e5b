// `spool verify <data-dir>`: the offline check of src/storage/verify.ts. Prints a report (or
// JSON with --json); exit 0 when nothing is damaged, 1 when anything is, 2 for a bad or live
// directory (--force reads a live one anyway).
import { Command } from 'commander';
import { EXIT, type Outcome } from './common.js';

export function verifyCommand(outcome: Outcome): Command {
  return new Command('verify')
    .description('check every WAL frame, segment, pack and snapshot of a data directory, and its routers file (exit 1 on damage)')
    .argument('<dataDir>', 'the data directory (the server must be stopped)')
    .option('--force', 'read a directory a running server holds')
    .option('--json', 'print the report as JSON')
    .action(async (dir: string, o: { force?: boolean; json?: boolean }) => {
      const { offlineDataDir } = await import('./offline.js');
      offlineDataDir(dir, o.force);
      const { verifyDataDir } = await import('../storage/verify.js');
      const { nodeFs } = await import('../storage/fs.js');
      const r = verifyDataDir(nodeFs, dir);
      if (o.json) process.stdout.write(`${JSON.stringify({ ok: r.problems.length === 0, ...r })}\n`);
      else {
        process.stdout.write(
          `${dir}: ${r.walFiles} WAL file(s), ${r.walFrames} frame(s); ${r.segments} segment(s), ${r.segmentFrames} frame(s); ${r.packs} pack(s), ${r.packFrames} frame(s); ${r.snapshots} snapshot(s), ${r.topics} topic(s)\n`,
        );
        for (const n of r.notes) process.stdout.write(`note: ${n}\n`);
        for (const p of r.problems) process.stdout.write(`DAMAGE: ${p}\n`);
        process.stdout.write(r.problems.length === 0 ? 'ok\n' : `${r.problems.length} problem(s) found\n`);
      }
      outcome.code = r.problems.length === 0 ? EXIT.ok : EXIT.failure;
    });
}
