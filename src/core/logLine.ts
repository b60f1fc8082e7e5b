// A JSON log line in the main logger's shape (src/log.ts), for the worker and WAL threads,
// which have no pino instance of their own: what they log are faults, at error by default.
export function threadLogLine(thread: string, msg: string, level: 'error' | 'warn' | 'info' = 'error'): string {
  return `${JSON.stringify({ level, time: new Date().toISOString(), pid: process.pid, thread, msg: msg.replace(/^spool: /, '') })}\n`;
}
