// Request loggers made on first use (main thread; issue 12). Fastify gives every request a
// child of the process logger carrying its `req_id`; pino builds a child by serializing its
// bindings through `redact`, which was ~18 µs per request on the HTTP thread (`stringify` under
// pino's `asChindings`, the top frame of a catch-up read's Fastify work after the socket
// write). Most requests never log at an enabled level: the request line is `debug`, errors are
// rare. This factory hands Fastify a logger whose methods make the real child only when a line
// is actually written at an enabled level, so the output is the same, line for line.
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level } from 'pino';

const LEVELS: readonly Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

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
  if (opts.level !== undefined || opts.serializers !== undefined || typeof parent.isLevelEnabled !== 'function') return parent.child(bindings, opts);
  let real: FastifyBaseLogger | undefined;
  const child = (): FastifyBaseLogger => (real ??= parent.child(bindings, opts));
  const lazy: Record<string, unknown> = {
    child: (b: Bindings, o?: ChildLoggerOptions) => child().child(b, o),
    silent: () => undefined,
    isLevelEnabled: (level: string) => parent.isLevelEnabled(level),
  };
  for (const level of LEVELS) {
    lazy[level] = (...args: unknown[]) => {
      if (!parent.isLevelEnabled(level)) return;
      (child()[level] as LogFn)(...args);
    };
  }
  Object.defineProperty(lazy, 'level', {
    get: () => (real ?? parent).level,
    set: (v: string) => (child().level = v),
    enumerable: true,
  });
  return lazy as unknown as FastifyBaseLogger;
}
