// Request loggers made on first use (main thread; docs/PERFORMANCE.md). Fastify gives every request a
// child of the process logger carrying its `req_id`; pino builds a child by serializing its
// bindings through `redact`, which was ~18 µs per request on the HTTP thread (`stringify` under
// pino's `asChindings`, the top frame of a catch-up read's Fastify work after the socket
// write). Most requests never log at an enabled level: the request line is `debug`, errors are
// rare. This factory hands Fastify a logger whose methods make the real child only when a line
// is actually written at an enabled level, so the output is the same, line for line.
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level } from 'pino';

type LogFn = (...args: unknown[]) => void;
type Leveled = FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean };

/** Whether `log` writes at `level`; true when it cannot tell (a logger that is not pino). */
export function levelEnabled(log: FastifyBaseLogger, level: Level): boolean {
  const l = log as Leveled;
  return typeof l.isLevelEnabled === 'function' ? l.isLevelEnabled(level) : true;
}

export function lazyChildLogger(parentLog: FastifyBaseLogger, bindings: Bindings, opts: ChildLoggerOptions): FastifyBaseLogger {
  const parent = parentLog as Leveled & { isLevelEnabled: (level: string) => boolean };
  // A per-route level changes what the child writes, and a logger that is not pino cannot say
  // what it writes: make the child now, as Fastify would.
  if (opts.level !== undefined || opts.serializers !== undefined || typeof parent.isLevelEnabled !== 'function')
    return parent.child(bindings, opts);
  return new LazyLogger(parent, bindings, opts) as unknown as FastifyBaseLogger;
}

/**
 * One small object per request, its methods on the prototype. (The first version made a closure
 * per level and an accessor per request: ~3% of the HTTP thread on single-record appends.)
 */
class LazyLogger {
  private real: FastifyBaseLogger | undefined = undefined;

  constructor(
    private readonly parent: Leveled & { isLevelEnabled: (level: string) => boolean },
    private readonly bindings: Bindings,
    private readonly opts: ChildLoggerOptions,
  ) {}

  private made(): FastifyBaseLogger {
    return (this.real ??= this.parent.child(this.bindings, this.opts));
  }

  private write(level: Level, args: unknown[]): void {
    if (!this.parent.isLevelEnabled(level)) return;
    (this.made()[level] as LogFn)(...args);
  }

  get level(): string {
    return (this.real ?? this.parent).level;
  }

  set level(v: string) {
    this.made().level = v;
  }

  child(b: Bindings, o?: ChildLoggerOptions): FastifyBaseLogger {
    return this.made().child(b, o);
  }

  silent(): void {}

  isLevelEnabled(level: string): boolean {
    return this.parent.isLevelEnabled(level);
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
}
