// `spool append <topic> [data...]`: one batch from the arguments, or NDJSON from stdin / --file in
// batches. Each line is one record's `data` (or, with --records, a whole record object). Lines are
// checked with JSON.parse (so one line can never turn into two records) but sent as their own
// text: the server stores data verbatim (docs/API.md "Conventions"), so `1e400` or a 20-digit integer
// arrives exactly as written. One request is in flight while the next batch is built; batches go
// in input order, so seqs follow the input. Retried batches carry an idempotency key (no
// duplicates). A bad line ends the input after the records before it are appended (exit 2).
import { Command } from 'commander';
import {
  CliError,
  EXIT,
  clientFor,
  note,
  onStopSignal,
  parsePositive,
  printJson,
  usageError,
  withClientOptions,
  type ClientOpts,
  type Outcome,
} from './common.js';
import { isBlank, openLines } from './lines.js';
import { Progress } from './progress.js';
import { SpoolError } from '../client/errors.js';
import type { Spool } from '../client/spool.js';

/** The server's records-per-append cap (docs/API.md "Limits"). */
const RECORDS_MAX = 10_000;
const BATCH_BYTES_DEFAULT = 4 << 20;

interface AppendOpts extends ClientOpts {
  file?: string;
  records?: boolean;
  string?: boolean;
  tag?: string;
  node?: string;
  create?: boolean;
  batch: number;
  batchBytes: number;
  idempotencyKey?: string;
  progress?: boolean;
}

interface Batch {
  texts: string[];
  bytes: number;
  firstLineNo: number;
  lastLineNo: number;
}

/** An input line (or argument) that is not what the command takes: a usage error. */
class BadLine extends CliError {
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}

/** Checks one input line and returns the text that goes into the body. */
function checkLine(text: string, where: () => string, records: boolean): string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new BadLine(`${where()}: not valid JSON (${(e as Error).message})`);
  }
  if (records) {
    if (v === null || typeof v !== 'object' || Array.isArray(v))
      throw new BadLine(`${where()}: with --records each one must be a record object {"data":…}`);
    const why = recordShapeProblem(v as Record<string, unknown>);
    if (why) throw new BadLine(`${where()}: not a record object: ${why}`);
  }
  return text;
}

/**
 * The shape a record object must have (docs/API.md "Records"), so that a line the server would
 * refuse ends the input here, with the lines before it appended, instead of failing its whole
 * batch; sizes are left to the server.
 */
function recordShapeProblem(r: Record<string, unknown>): string | undefined {
  if (!('data' in r)) return '"data" is required';
  for (const k of ['tag', 'node'] as const) if (k in r && typeof r[k] !== 'string') return `"${k}" must be a string`;
  if ('meta' in r && (r.meta === null || typeof r.meta !== 'object' || Array.isArray(r.meta))) return '"meta" must be an object';
  return undefined;
}

/** Sends the batch being built, after the one in flight, and waits for it (`flush` twice). */
async function sendWhatWasRead(flush: () => Promise<void>): Promise<void> {
  await flush();
  await flush(); // nothing left to send: waits for that batch
}

/**
 * Ends the input at a bad line: the records read before it are appended (the batch being built
 * is sent first), none after it, and the message says how many landed. `flush` sends the batch
 * being built (it waits for the one in flight); an earlier batch that failed is the error then.
 */
async function endAtBadLine(e: BadLine, flush: () => Promise<void>, totals: Totals): Promise<BadLine> {
  await sendWhatWasRead(flush);
  const n = totals.count;
  const landed =
    n === 0
      ? 'nothing was appended'
      : n === 1
        ? `the record before it was appended (seq ${totals.firstSeq}), none after it`
        : `the ${n} records before it were appended (seqs ${totals.firstSeq}..${totals.lastSeq}), none after it`;
  e.message = `${e.message}; ${landed}`;
  e.detail = { appended: totals.count, first_seq: totals.firstSeq ?? null, last_seq: totals.lastSeq ?? null };
  return e;
}

class BodyBuilder {
  private readonly tail: string;
  private readonly sep: string;
  private readonly open: string;
  private readonly close: string;

  constructor(o: AppendOpts) {
    const extra: string[] = [];
    if (o.node !== undefined) extra.push(`"node":${JSON.stringify(o.node)}`);
    if (o.create !== undefined) extra.push(`"create":${o.create}`);
    if (o.idempotencyKey !== undefined) extra.push(`"idempotency_key":${JSON.stringify(o.idempotencyKey)}`);
    this.tail = `]${extra.map((e) => `,${e}`).join('')}}`;
    if (o.records) {
      this.open = '';
      this.close = '';
      this.sep = ',';
    } else {
      const tag = o.tag === undefined ? '' : `,"tag":${JSON.stringify(o.tag)}`;
      this.open = '{"data":';
      this.close = `${tag}}`;
      this.sep = `${this.close},${this.open}`;
    }
  }

  body(texts: string[]): string {
    return `{"records":[${this.open}${texts.join(this.sep)}${this.close}${this.tail}`;
  }
}

interface Totals {
  count: number;
  batches: number;
  firstSeq: bigint | undefined;
  lastSeq: bigint | undefined;
  /** The (one) batch matched an earlier one by its --idempotency-key: nothing was appended. */
  deduped: boolean;
  /** The input line of the last record appended (0: none). */
  lastLineNo: number;
}

/**
 * SIGINT/SIGTERM while NDJSON input is appended: no more input is read, the lines read so far are
 * appended (the batch in flight, then the one being built), and the message says how far the
 * input got, so a script can resume after that line (exit 130 / 143).
 */
function interrupted(signal: NodeJS.Signals, totals: Totals, label: string): CliError {
  const n = totals.count;
  const landed =
    n === 0
      ? 'nothing was appended'
      : `${n} record${n === 1 ? '' : 's'} through ${label} line ${totals.lastLineNo} ${n === 1 ? 'was' : 'were'} appended (seqs ${totals.firstSeq}..${totals.lastSeq}), none after`;
  const e = new CliError(`interrupted by ${signal}: ${landed}`, signal === 'SIGINT' ? EXIT.sigint : EXIT.sigterm, 'interrupted');
  e.detail = { appended: n, first_seq: totals.firstSeq ?? null, last_seq: totals.lastSeq ?? null, last_line: totals.lastLineNo };
  return e;
}

async function send(spool: Spool<'bigint'>, topic: string, builder: BodyBuilder, b: Batch, totals: Totals, o: AppendOpts): Promise<void> {
  let r;
  try {
    r = await spool.appendRaw(topic, builder.body(b.texts), {
      return_seqs: false,
      keyInBody: o.idempotencyKey !== undefined,
      idempotency_key: o.idempotencyKey,
    });
  } catch (e) {
    const where = b.firstLineNo === b.lastLineNo ? `record ${b.firstLineNo}` : `records ${b.firstLineNo}..${b.lastLineNo}`;
    const before = totals.count ? `${totals.count} records appended before it; ` : '';
    if (e instanceof SpoolError)
      throw new SpoolError({
        code: e.code,
        status: e.status,
        detail: e.detail,
        retryAfterMs: e.retryAfterMs,
        message: `${before}${where} not appended: ${e.message}`,
      });
    throw e;
  }
  if (r.count !== b.texts.length)
    throw new CliError(`the server appended ${r.count} records for a batch of ${b.texts.length}`, EXIT.failure);
  totals.count += r.count;
  totals.batches++;
  if (r.deduped) totals.deduped = true;
  totals.firstSeq ??= r.first_seq;
  totals.lastSeq = r.last_seq;
  totals.lastLineNo = b.lastLineNo;
}

async function run(topic: string, args: string[], o: AppendOpts): Promise<Totals> {
  const spool = clientFor(o);
  const builder = new BodyBuilder(o);
  const totals: Totals = { count: 0, batches: 0, firstSeq: undefined, lastSeq: undefined, deduped: false, lastLineNo: 0 };
  if (args.length) {
    if (o.file !== undefined) throw usageError('give records as arguments or with --file, not both');
    const texts = args.map((a, i) => (o.string ? JSON.stringify(a) : checkLine(a, () => `argument ${i + 1}`, o.records === true)));
    for (let i = 0; i < texts.length; i += o.batch) {
      const part = texts.slice(i, i + o.batch);
      await send(spool, topic, builder, { texts: part, bytes: 0, firstLineNo: i + 1, lastLineNo: i + part.length }, totals, o);
    }
    return totals;
  }
  if (o.file === undefined && process.stdin.isTTY)
    throw usageError('no records: give them as arguments, or pipe NDJSON into stdin (or use --file)');
  if (o.idempotencyKey !== undefined)
    throw usageError('--idempotency-key applies to one batch: use it with arguments, not with NDJSON input');
  const source = openLines(o.file);
  const label = o.file === undefined || o.file === '-' ? 'stdin' : o.file;
  const progress = new Progress(o.progress ?? (process.stderr.isTTY === true && !o.json), source.totalBytes);
  let inflight: Promise<void> | undefined;
  let batch: Batch = { texts: [], bytes: 0, firstLineNo: 0, lastLineNo: 0 };
  const flush = async () => {
    const b = batch;
    batch = { texts: [], bytes: 0, firstLineNo: 0, lastLineNo: 0 };
    await inflight; // one request at a time keeps seqs in input order
    inflight = b.texts.length ? send(spool, topic, builder, b, totals, o) : undefined;
    inflight?.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
    progress.update(totals.count, source.readBytes());
  };
  const stop = onStopSignal();
  let stopped: NodeJS.Signals | undefined;
  const signalled = stop.promise.then((sig) => void (stopped = sig));
  const chunks = source.chunks()[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await Promise.race([chunks.next(), signalled]);
      if (stopped !== undefined) {
        void chunks.return?.(undefined);
        // What was read is appended (from a pipe it cannot be read again), nothing more.
        await sendWhatWasRead(flush).catch(() => undefined); // a failed batch: not in the totals
        throw interrupted(stopped, totals, label);
      }
      if (!next || next.done) break;
      const { lines, firstLineNo } = next.value;
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i]!;
        if (isBlank(line)) continue;
        const lineNo = firstLineNo + i;
        const text = o.string ? JSON.stringify(line) : checkLine(line, () => `${label} line ${lineNo}`, o.records === true);
        if (batch.texts.length > 0 && (batch.texts.length >= o.batch || batch.bytes + text.length > o.batchBytes)) await flush();
        if (batch.texts.length === 0) batch.firstLineNo = lineNo;
        batch.texts.push(text);
        batch.bytes += text.length + 12;
        batch.lastLineNo = lineNo;
      }
    }
    if (batch.texts.length) await flush();
    await inflight;
  } catch (e) {
    if (e instanceof BadLine) throw await endAtBadLine(e, flush, totals);
    if (inflight) await inflight.catch(() => undefined);
    throw e;
  } finally {
    stop.dispose();
    progress.clear();
  }
  return totals;
}

export function appendCommand(outcome: Outcome): Command {
  return withClientOptions(new Command('append'))
    .description('append records: the arguments as one batch, or NDJSON lines from stdin / --file (one record per line)')
    .argument('<topic>')
    .argument('[data...]', 'JSON values, one record each (strings need quotes: \'"text"\', or use --string)')
    .option('--file <path>', "read NDJSON from this file ('-' = stdin)")
    .option('--records', 'each line / argument is a record object {"data", "tag", "meta", "node"}, not the data')
    .option('--string', 'each line / argument is a plain string, not JSON')
    .option('--tag <tag>', 'tag every record')
    .option('--node <node>', 'origin node of the batch')
    .option('--create', 'create the topic if absent (the default unless its auto_create is off)')
    .option('--no-create', 'fail with 404 (exit 4) if the topic does not exist')
    .option('--batch <n>', `records per request (at most ${RECORDS_MAX})`, parsePositive, RECORDS_MAX)
    .option('--batch-bytes <n>', 'request body size before a batch is sent', parsePositive, BATCH_BYTES_DEFAULT)
    .option('--idempotency-key <key>', 'dedupe key of the batch (arguments only)')
    .option('--progress', 'show progress on stderr (default: when stderr is a terminal)')
    .option('--no-progress', 'never show progress')
    .action(async (topic: string, args: string[], o: AppendOpts) => {
      if (o.batch > RECORDS_MAX) throw usageError(`--batch: at most ${RECORDS_MAX}`);
      if (o.records && (o.tag !== undefined || o.string))
        throw usageError('--records takes whole record objects: --tag and --string do not apply');
      const t0 = Date.now();
      const t = await run(topic, args, o);
      const ms = Date.now() - t0;
      const perSec = Math.round(t.count / Math.max(0.001, ms / 1000));
      if (o.json) {
        printJson({
          topic,
          count: t.count,
          first_seq: t.firstSeq ?? null,
          last_seq: t.lastSeq ?? null,
          batches: t.batches,
          deduped: t.deduped,
          elapsed_ms: ms,
          records_per_sec: perSec,
        });
      } else if (t.deduped) {
        note(
          `nothing appended to ${topic}: idempotency key ${o.idempotencyKey} matched an earlier batch (seqs ${t.firstSeq}..${t.lastSeq})`,
        );
      } else {
        const seqs = t.count ? ` (seqs ${t.firstSeq}..${t.lastSeq})` : '';
        note(
          `appended ${t.count} record${t.count === 1 ? '' : 's'} to ${topic}${seqs} in ${(ms / 1000).toFixed(2)} s, ${perSec.toLocaleString('en-US')} records/s`,
        );
      }
      outcome.code = EXIT.ok;
    });
}
