// `spool inspect <data-dir> [topic]`: topics by name with class, floors, reservation ceiling,
// segments and bytes on disk (src/storage/inspect.ts); one topic in detail when named. The
// server must be stopped (or --force).
import { Command } from 'commander';
import { CliError, EXIT, type Outcome } from './common.js';

export function inspectCommand(outcome: Outcome): Command {
  return new Command('inspect')
    .description('list the topics of a data directory: sizes, floors, segments (offline)')
    .argument('<dataDir>', 'the data directory (the server must be stopped)')
    .argument('[topic]', 'show this topic with its segments')
    .option('--force', 'read a directory a running server holds')
    .option('--json', 'print JSON')
    .action(async (dir: string, topic: string | undefined, o: { force?: boolean; json?: boolean }) => {
      const { offlineDataDir } = await import('./offline.js');
      offlineDataDir(dir, o.force);
      const { inspectDataDir } = await import('../storage/inspect.js');
      const { nodeFs } = await import('../storage/fs.js');
      const info = inspectDataDir(nodeFs, dir);
      if (topic !== undefined) {
        const t = info.topics.find((x) => x.name === topic);
        if (!t) throw new CliError(`no topic ${topic} in ${dir}`, EXIT.notFound);
        if (o.json) process.stdout.write(`${JSON.stringify(t)}\n`);
        else {
          process.stdout.write(
            `${t.name} (id ${t.id}) ${t.type} ${t.durability}${t.in_wal_only ? ', created after the newest snapshot' : ''}\n`,
          );
          process.stdout.write(
            `  reserved ${t.reserved ?? '-'}  evict_floor ${t.evict_floor ?? '-'}  dead_below ${t.dead_below ?? '-'}  deleted ranges ${t.deleted_ranges}\n`,
          );
          if (t.packed_bytes > 0) process.stdout.write(`  packed  ${t.packed_bytes} bytes in pack files\n`);
          for (const s of t.segments) process.stdout.write(`  seg-${s.first_seq}  ${s.bytes} bytes\n`);
        }
        outcome.code = EXIT.ok;
        return;
      }
      if (o.json) {
        process.stdout.write(`${JSON.stringify(info)}\n`);
        return;
      }
      process.stdout.write(
        `snapshot ${info.snapshot ?? '(none)'}; ${info.wal_files.length} WAL file(s), ${info.wal_files.reduce((a, w) => a + w.bytes, 0)} bytes\n`,
      );
      if (info.damaged_snapshots.length > 0)
        process.stderr.write(
          `spool inspect: damaged snapshot(s) skipped: ${info.damaged_snapshots.join(', ')} (spool verify says what is wrong)\n`,
        );
      const packBytes = info.packs.reduce((a, p) => a + p.bytes, 0);
      const packLive = info.packs.reduce((a, p) => a + p.live_bytes, 0);
      process.stdout.write(`${info.packs.length} pack file(s), ${packBytes} bytes, ${packLive} of them of listed topics\n`);
      process.stdout.write(
        `${'TOPIC'.padEnd(32)} ${'TYPE'.padEnd(5)} ${'CLASS'.padEnd(9)} ${'SEGS'.padStart(4)} ${'BYTES'.padStart(12)} ${'RESERVED'.padStart(10)} FLOORS\n`,
      );
      for (const t of info.topics) {
        const floors = `evict ${t.evict_floor ?? '-'} dead ${t.dead_below ?? '-'}`;
        process.stdout.write(
          `${t.name.padEnd(32)} ${t.type.padEnd(5)} ${t.durability.padEnd(9)} ${String(t.segments.length).padStart(4)} ${String(t.bytes_on_disk).padStart(12)} ${String(t.reserved ?? '-').padStart(10)} ${floors}\n`,
        );
      }
    });
}
