// The `spool` command line (docs/CLI.md): one commander program, one module per command under
// src/cli/. Help and version go to stdout with exit 0; a bad argument or a missing file is one
// line on stderr and exit 2, never a stack trace; other failures map to the exit codes in
// common.ts. Server commands (serve, replay, wal-dump) load server code only when they run.
import { Command, CommanderError } from 'commander';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { EXIT, reportError, usageError, parseCount, type Outcome } from './common.js';
import { topicsCommand } from './topics.js';
import { routersCommand } from './routers.js';
import { appendCommand } from './append.js';
import { readCommand } from './read.js';
import { tailCommand } from './tail.js';
import { rmRecordsCommand } from './rmRecords.js';
import { claimCommand } from './claim.js';
import { ackCommand, nackCommand } from './settle.js';
import { workCommand } from './work.js';
import { leasesCommand, redriveCommand, termCommand } from './queueTools.js';
import { statsCommand } from './stats.js';
import { verifyCommand } from './verify.js';
import { inspectCommand } from './inspect.js';
import { backupCommand } from './backup.js';
import { restoreCommand } from './restore.js';

/** The package version (dist/src/cli/program.js → package.json). */
export function version(): string {
  return (createRequire(import.meta.url)('../../../package.json') as { version: string }).version;
}

function serverCommands(program: Command, outcome: Outcome): void {
  program
    .command('serve')
    .description('run the server in the foreground (settings: SERVICE_* environment variables, see README)')
    .action(async () => {
      const { serve, reportServeFailure } = await import('./serve.js');
      outcome.keepAlive = true;
      try {
        await serve();
      } catch (err) {
        outcome.keepAlive = false;
        outcome.code = reportServeFailure(err);
      }
    });
  program
    .command('replay')
    .description('replay a recorded actor trace and report the first divergence (exit 1 on one)')
    .argument('<trace>', 'a trace file written with SERVICE_TRACE_DIR')
    .option('--topic <topic>', 'only this topic')
    .option('--until <step>', 'stop after this step', parseCount)
    .action(async (file: string, o: { topic?: string; until?: number }) => {
      if (!fs.existsSync(file)) throw usageError(`no such trace file: ${file}`);
      const { replay } = await import('./replay.js');
      outcome.code = replay(file, o);
    });
  program
    .command('wal-dump')
    .description("list the WAL's frames, one a line (while the server is stopped)")
    .argument('[dataDir]', 'data directory (default SERVICE_DATA_DIR or ./data)')
    .option('--force', 'read a directory a running server holds')
    .action(async (dir: string | undefined, o: { force?: boolean }) => {
      if (dir !== undefined && !fs.existsSync(dir)) throw usageError(`no such data directory: ${dir}`);
      const { walDump } = await import('./walDump.js');
      outcome.code = walDump(dir, o.force);
    });
  // Offline tools and backups, one module each; their server code loads only when they run.
  for (const make of [verifyCommand, inspectCommand, backupCommand, restoreCommand]) program.addCommand(make(outcome));
}

/** The command at `path` below `root` (names or aliases), or undefined. */
function findCommand(root: Command, path: string[]): Command | undefined {
  let c: Command | undefined = root;
  for (const name of path) c = c?.commands.find((x) => x.name() === name || x.aliases().includes(name));
  return c;
}

/**
 * `spool help [command...]`: the help of any command, subcommands included (`spool help topics
 * put`); commander's own help command stops at the first name.
 */
function helpCommand(program: Command): Command {
  return new Command('help')
    .description('show the help of a command (e.g. spool help topics put)')
    .argument('[command...]', 'a command, with its subcommand')
    .action((path: string[]) => {
      const c = findCommand(program, path);
      if (!c) throw usageError(`unknown command '${path.join(' ')}' (see spool --help)`);
      process.stdout.write(c.helpInformation());
    });
}

export function buildProgram(outcome: Outcome): Command {
  const program = new Command('spool')
    .description('spool: a persistent append-only log service, and its command-line client')
    .version(version(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .addHelpText(
      'after',
      '\nEvery client command takes --url (SPOOL_URL), --key (SPOOL_API_KEY) and --json.\nExit codes: 0 ok, 1 failure, 2 usage, 3 request refused (4xx), 4 not found (404), 5 unavailable.',
    )
    .showSuggestionAfterError(true);
  serverCommands(program, outcome);
  for (const make of [
    topicsCommand,
    routersCommand,
    appendCommand,
    readCommand,
    tailCommand,
    rmRecordsCommand,
    claimCommand,
    ackCommand,
    nackCommand,
    workCommand,
    statsCommand,
  ]) {
    program.addCommand(make(outcome));
  }
  // The queue tools (docs/CLI.md "Queue tools").
  for (const make of [leasesCommand, termCommand, redriveCommand]) {
    program.addCommand(make(outcome));
  }
  program.addCommand(helpCommand(program));
  // Every command (and subcommand) reports usage errors through run() below, not by itself.
  const quiet = (c: Command): void => {
    c.exitOverride().configureOutput({ outputError: () => undefined });
    c.commands.forEach(quiet);
  };
  quiet(program);
  return program;
}

/** The command path for messages: `topics get`, `append`, ... */
function commandName(argv: string[], program: Command): string {
  const names: string[] = [];
  let c: Command | undefined = program;
  for (const a of argv) {
    const sub: Command | undefined = c?.commands.find((x) => x.name() === a || x.aliases().includes(a));
    if (!sub) break;
    names.push(sub.name());
    c = sub;
  }
  return names.join(' ');
}

/** Runs the CLI on `argv` (without node and script); resolves with the exit code. */
export async function run(argv: string[]): Promise<Outcome> {
  const outcome: Outcome = { code: EXIT.ok, keepAlive: false };
  const program = buildProgram(outcome);
  if (argv.length === 0) {
    process.stdout.write(program.helpInformation());
    return outcome;
  }
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode === 0) return outcome; // help or version, already written to stdout
      outcome.code = reportError(
        usageError(
          `${err.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ')} (see spool ${commandName(argv, program)} --help)`.replace(
            'spool  --help',
            'spool --help',
          ),
        ),
        commandName(argv, program),
        json,
      );
      return outcome;
    }
    const sys = err as NodeJS.ErrnoException;
    if (sys && typeof sys.code === 'string' && ['ENOENT', 'EACCES', 'EISDIR', 'ENOTDIR'].includes(sys.code) && sys.path) {
      outcome.code = reportError(
        usageError(`${sys.path}: ${sys.code === 'ENOENT' ? 'no such file or directory' : sys.code}`),
        commandName(argv, program),
        json,
      );
      return outcome;
    }
    outcome.code = reportError(err, commandName(argv, program), json);
  }
  return outcome;
}
