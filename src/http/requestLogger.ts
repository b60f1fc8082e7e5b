// Each request's logger (main thread), made only when the request logs a line. Fastify gives
// every request a pino child bound to its request id; making one costs pino's bindings
// serialization and redaction setup, ~2% of the HTTP thread under single-record appends (a
// --cpu-prof run: asChindings, redactPaths, stringify), for a logger that almost never writes
// (request lines are at debug, and a 5xx is rare). This one holds the parent and the bindings,
// and makes the pino child on the first line at an enabled level.
import type { FastifyBaseLogger } from 'fastify';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/** pino's isLevelEnabled; a logger without one (Fastify's null logger) has every level off. */
export function levelEnabled(logger: FastifyBaseLogger, level: Level): boolean {
  const l = logger as unknown as { isLevelEnabled?: (level: string) => boolean };
  return typeof l.isLevelEnabled === 'function' && l.isLevelEnabled(level);
}

export class RequestLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Record<string, unknown>,
    private readonly opts: object,
  ) {}

  get level(): string {
    return this.parent.level;
  }

  set level(level: string) {
    this.real().level = level;
  }

  private real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.opts));
  }

  /** A line at `level` (pino's argument forms), dropped at once when the level is off. */
  private line(level: Level, args: unknown[]): void {
    if (!levelEnabled(this.parent, level)) return;
    (this.real()[level] as (...a: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]): void {
    this.line('fatal', args);
  }
  error(...args: unknown[]): void {
    this.line('error', args);
  }
  warn(...args: unknown[]): void {
    this.line('warn', args);
  }
  info(...args: unknown[]): void {
    this.line('info', args);
  }
  debug(...args: unknown[]): void {
    this.line('debug', args);
  }
  trace(...args: unknown[]): void {
    this.line('trace', args);
  }
  silent(): void {}

  child(bindings: Record<string, unknown>, opts?: object): FastifyBaseLogger {
    return this.real().child(bindings, opts);
  }
}

/**
 * Fastify's `childLoggerFactory`: a RequestLogger in place of an eager pino child, unless the
 * parent cannot say which levels are on (Fastify's null logger) or the route sets its own level.
 */
export function requestLoggerFactory(logger: FastifyBaseLogger, bindings: Record<string, unknown>, opts: { level?: string }): FastifyBaseLogger {
  if (typeof (logger as unknown as { isLevelEnabled?: unknown }).isLevelEnabled !== 'function' || opts.level !== undefined) return logger.child(bindings, opts);
  return new RequestLogger(logger, bindings, opts) as unknown as FastifyBaseLogger;
}
