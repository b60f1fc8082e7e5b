// What every client command of the `spool` CLI shares (docs/CLI.md): the --url/--key/--json
// options, the client they build, exit codes, error output, argument parsers that fail as usage
// errors, and writing to stdout without losing the tail of a piped output.
import { Command, InvalidArgumentError, Option } from 'commander';
import os from 'node:os';
import { Spool } from '../client/spool.js';
import { SpoolError } from '../client/errors.js';
import { encodeJson } from '../client/json.js';
import type { LogRecord } from '../client/types.js';

/** Exit codes scripts can rely on (docs/CLI.md "Exit codes"). */
export const EXIT = {
  ok: 0,
  /** Anything unexpected, HTTP 5xx other than 503. */
  failure: 1,
  /** Bad arguments, a missing file, input that is not what the command takes. */
  usage: 2,
  /** The server refused the request: HTTP 4xx other than 404 and 429. */
  rejected: 3,
  /** HTTP 404: no such topic (or route). */
  notFound: 4,
  /** No answer, or 429 / 503 still after the retries. */
  unavailable: 5,
  /** Stopped by SIGINT (128 + 2) or SIGTERM (128 + 15) part-way, after saying how far it got. */
  sigint: 130,
  sigterm: 143,
} as const;

/** Each action stores its exit code here (commander actions cannot return one). */
export interface Outcome {
  code: number;
  /** Keep the process running after the action (serve). */
  keepAlive: boolean;
}

/** A failure the command already knows how to describe, with its exit code. */
export class CliError extends Error {
  /** With --json: the error's `detail` (what a script needs to go on, such as how far it got). */
  detail: Record<string, unknown> | undefined;

  constructor(
    message: string,
    readonly exitCode: number,
    /** With --json: the error's `code` (default `usage` for exit 2, else `failed`). */
    readonly code?: string,
  ) {
    super(message);
  }
}

export const usageError = (message: string) => new CliError(message, EXIT.usage);

/**
 * Makes `cmd` a group of subcommands (`names`, as its help lists them): run bare, or with a word
 * that is none of them, it is a usage error naming them. The optional argument lets an unknown
 * word reach the action instead of commander's "too many arguments"; `help <sub>` is added, which
 * commander leaves out for a command with an action.
 */
export function subcommandGroup(cmd: Command, names: string): Command {
  const known = `${names} (see spool ${cmd.name()} --help)`;
  return cmd
    .usage('<command> [options]')
    .argument('[subcommand]')
    .action((sub?: string) => {
      throw usageError(sub === undefined ? `a subcommand is required: ${known}` : `unknown subcommand '${sub}': ${known}`);
    })
    .helpCommand(true);
}

export interface ClientOpts {
  url: string;
  key?: string;
  json?: boolean;
}

export const DEFAULT_URL = 'http://127.0.0.1:4000';

/** Adds --url, --key and --json to a command. */
export function withClientOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--url <url>', 'server URL').env('SPOOL_URL').default(DEFAULT_URL))
    .addOption(new Option('--key <key>', 'API key (sent as a bearer token)').env('SPOOL_API_KEY'))
    .option('--json', 'machine-readable output (JSON on stdout, errors as JSON on stderr)');
}

/** --url, checked: a usage error (exit 2) unless it is an http:// or https:// URL. */
export function serverUrl(opts: ClientOpts): string {
  let url: URL;
  try {
    url = new URL(opts.url);
  } catch {
    throw usageError(`--url: not a URL: ${opts.url}`);
  }
  // `localhost:4000` parses, as a URL of scheme `localhost:`.
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw usageError(`--url: not an http:// or https:// URL: ${opts.url}`);
  return opts.url;
}

/** The client for a command. The CLI always reads seqs as bigints: nothing is ever rounded. */
export function clientFor(opts: ClientOpts): Spool<'bigint'> {
  serverUrl(opts);
  // A field the server ignored (a typo such as `ttl` for `ttl_ms`) is said on stderr.
  return new Spool({ url: opts.url, key: opts.key, int64: 'bigint', onWarning: (w) => note(`spool: warning: ${w}`) });
}

/** The worker identity for claim/ack/nack/work: --node, else SPOOL_NODE, else `cli@<host>`. */
export function nodeOption(): Option {
  return new Option('--node <node>', 'worker identity for leases').env('SPOOL_NODE').default(`cli@${os.hostname()}`);
}

// ---- argument parsers (commander calls them; InvalidArgumentError is a usage error) --------

export function parseCount(v: string): number {
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new InvalidArgumentError('expected a non-negative integer');
  return Number(v);
}

export function parsePositive(v: string): number {
  const n = parseCount(v);
  if (n === 0) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

/** A seq: a u64, kept exact as a bigint. */
export function parseSeq(v: string): bigint {
  if (!/^\d+$/.test(v) || BigInt(v) > 0xffff_ffff_ffff_ffffn) throw new InvalidArgumentError('expected a seq (a non-negative integer)');
  return BigInt(v);
}

export function parseJsonArg(v: string): unknown {
  try {
    return JSON.parse(v);
  } catch (e) {
    throw new InvalidArgumentError(`not valid JSON (${(e as Error).message})`);
  }
}

// ---- output --------------------------------------------------------------------------------

/** Set by a command whose stdout is its product (a backup): a reader gone early is a failure. */
let productOnStdout: string | undefined;

/** This command's stdout must reach its end: a reader that goes away early fails it with `why`. */
export function stdoutIsTheProduct(why: string): void {
  productOnStdout = why;
}

/**
 * What a failed write to stdout does (cli.ts listens for it). A reader that went away (`spool read
 * t | head`) is not an error: stop quietly, like other tools, unless stdout is the product. Any
 * other write error (a full disk behind a redirect) is one line and exit 1, not a stack trace.
 */
export function onStdoutError(e: NodeJS.ErrnoException): never {
  if (e.code === 'EPIPE' && productOnStdout === undefined) process.exit(EXIT.ok);
  const why = e.code === 'EPIPE' ? productOnStdout : `cannot write to stdout: ${e.message}`;
  process.stderr.write(`spool: ${why}\n`);
  process.exit(EXIT.failure);
}

/** Writes to stdout, waiting when the pipe is full (a slow reader makes us slow, never lossy). */
export function out(text: string): Promise<void> | void {
  if (!process.stdout.write(text)) return new Promise((r) => process.stdout.once('drain', () => r()));
}

/** Rows as aligned columns (the first row is the header); the last column is not padded. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

export function printJson(v: unknown): void {
  process.stdout.write(`${stringify(v)}\n`);
}

/** JSON.stringify with bigints as plain integers (the CLI's seqs). */
export const stringify = encodeJson;

export function note(text: string): void {
  process.stderr.write(`${text}\n`);
}

/**
 * One record as the server rendered it: `{"$seq":…,"$ts":…,"$node":…,"$tag":…,"data":…,"meta":…}`,
 * rebuilt from a raw record (data and meta are the verbatim texts), with `topic` first when given.
 */
export function recordLine(r: LogRecord<bigint, string, string>, topic?: string): string {
  let s = topic === undefined ? '{' : `{"topic":${JSON.stringify(topic)},`;
  s += `"$seq":${r.$seq},"$ts":${r.$ts}`;
  if (r.$node !== undefined) s += `,"$node":${JSON.stringify(r.$node)}`;
  if (r.$tag !== undefined) s += `,"$tag":${JSON.stringify(r.$tag)}`;
  if (r.data !== undefined) s += `,"data":${r.data}`;
  if (r.meta !== undefined) s += `,"meta":${r.meta}`;
  return `${s}}`;
}

/** Maps any error to its exit code and prints it as one line (or one JSON object with --json). */
export function reportError(err: unknown, command: string, json: boolean): number {
  let code: number = EXIT.failure;
  let text: string;
  let body: Record<string, unknown>;
  if (err instanceof CliError) {
    code = err.exitCode;
    text = err.message;
    body = {
      code: err.code ?? (code === EXIT.usage ? 'usage' : 'failed'),
      message: err.message,
      ...(err.detail ? { detail: err.detail } : {}),
    };
  } else if (err instanceof SpoolError) {
    code = exitCodeFor(err);
    const where = err.status ? `HTTP ${err.status} ${err.code}` : err.code;
    text = `${err.message} (${where})`;
    body = { code: err.code, status: err.status, message: err.message, ...(err.detail ? { detail: err.detail } : {}) };
  } else {
    text = err instanceof Error ? err.message : String(err);
    body = { code: 'failed', message: text };
  }
  if (json) process.stderr.write(`${stringify({ error: body })}\n`);
  else process.stderr.write(`spool${command ? ` ${command}` : ''}: ${text}\n`);
  return code;
}

export function exitCodeFor(err: SpoolError): number {
  if (err.status === 0)
    return err.code === 'seq_out_of_range' || err.code === 'bad_response' || err.code === 'stream_gap' ? EXIT.failure : EXIT.unavailable;
  if (err.status === 404) return EXIT.notFound;
  if (err.status === 429 || err.status === 503) return EXIT.unavailable;
  if (err.status >= 400 && err.status < 500) return EXIT.rejected;
  return EXIT.failure;
}

/** Resolves on the first SIGINT/SIGTERM (and removes its handlers); used by long-running commands. */
export function onStopSignal(): { promise: Promise<NodeJS.Signals>; dispose(): void } {
  let resolve!: (s: NodeJS.Signals) => void;
  const promise = new Promise<NodeJS.Signals>((r) => (resolve = r));
  const onInt = () => resolve('SIGINT');
  const onTerm = () => resolve('SIGTERM');
  process.once('SIGINT', onInt);
  process.once('SIGTERM', onTerm);
  return {
    promise,
    dispose() {
      process.removeListener('SIGINT', onInt);
      process.removeListener('SIGTERM', onTerm);
    },
  };
}
