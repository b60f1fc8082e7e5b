// `spool rm-records <topic>`: permanent, silent delete by seq prefix and/or tag (docs/API.md "Record delete").
import { Command } from 'commander';
import { EXIT, clientFor, parseSeq, printJson, usageError, withClientOptions, type ClientOpts, type Outcome } from './common.js';
import type { TagMatch } from '../client/types.js';

interface RmOpts extends ClientOpts {
  before?: bigint;
  tag?: string;
  tagPrefix?: string;
}

export function rmRecordsCommand(outcome: Outcome): Command {
  return withClientOptions(new Command('rm-records'))
    .description('delete records for good: every seq below --before, and/or those whose tag matches (both: AND)')
    .argument('<topic>')
    .option('--before <seq>', 'delete records with $seq < this', parseSeq)
    .option('--tag <tag>', 'delete records with exactly this tag')
    .option('--tag-prefix <prefix>', 'delete records whose tag starts with this')
    .action(async (topic: string, o: RmOpts) => {
      if (o.tag !== undefined && o.tagPrefix !== undefined) throw usageError('give --tag or --tag-prefix, not both');
      if (o.before === undefined && o.tag === undefined && o.tagPrefix === undefined)
        throw usageError('give --before, --tag or --tag-prefix');
      if (o.tagPrefix !== undefined && o.tagPrefix.includes('*')) throw usageError('--tag-prefix is a literal prefix (no *)');
      const match: TagMatch | undefined =
        o.tag !== undefined ? ['tag', 'Eq', o.tag] : o.tagPrefix !== undefined ? ['tag', 'Glob', `${o.tagPrefix}*`] : undefined;
      const r = await clientFor(o).deleteRecords(topic, { before_seq: o.before, match });
      if (o.json) printJson(r);
      else
        process.stdout.write(
          `deleted ${r.deleted} record${r.deleted === 1 ? '' : 's'} from ${r.topic}; ${r.count} left (seqs from ${r.earliest_seq}, head ${r.head_seq})\n`,
        );
      outcome.code = EXIT.ok;
    });
}
