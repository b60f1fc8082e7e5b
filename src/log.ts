// The process logger (main thread): pino, JSON lines on stderr, also Fastify's logger. Written
// synchronously, so the line before a process.exit is never lost. Redaction is by construction
// (request lines carry method, url, status and id, never headers or bodies) and by pino's
// `redact` for the paths that could carry a key or record data if someone logs an object.
// Worker and WAL threads format their lines the same way (src/core/logLine.ts).
import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

/** Paths censored wherever they appear in a logged object. */
export const REDACT_PATHS = [
  'apiKeys',
  '*.apiKeys',
  'SERVICE_API_KEYS',
  '*.SERVICE_API_KEYS',
  'headers.authorization',
  'headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'body',
  '*.body',
  'data',
  '*.data',
  'meta',
  '*.meta',
];

export function createLogger(level: string, dest: pino.DestinationStream = pino.destination({ fd: 2, sync: true })): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    dest,
  );
}
