// `spool serve`: runs the server in the foreground until SIGTERM/SIGINT (docs/ARCHITECTURE.md "Startup and shutdown").
// Loaded only when this command runs, so client commands never pull in server code. Logs are
// JSON lines on stderr (src/log.ts). Exit codes: 0 after a clean drain, 1 when recovery or the
// drain failed (a drain out of grace logs what was still open), 2 for a bad setting or an
// address it cannot listen on (a busy port).
import { startStageClock, stageOriginNs } from '../core/stageClock.js';
import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { readSettings, isLoopback, SettingsError, effectiveSettings, DRAIN_AFTER_GRACE_MS, type Settings } from '../config.js';
import { unknownSettings } from '../configSchema.js';
import { KeyRing, KeySyntaxError } from '../auth/keys.js';
import { Supervisor, type Logger as SupLogger } from '../supervisor/supervisor.js';
import { DataDirLockedError } from '../storage/lock.js';
import { CorruptionError } from '../core/corruption.js';
import { createLogger, type Logger } from '../log.js';
import { keepEarlyStops, takeEarlyStop } from './earlyStop.js';
import { makeDirsSync } from '../storage/fs.js';
import type { FrontEnd } from '../http/server.js';

/** Replaced by one at SERVICE_LOG_LEVEL once settings are read; errors before that use this. */
let logger: Logger = createLogger('info');

function supervisorLog(l: Logger): SupLogger {
  const strip = (m: string) => m.replace(/^spool: /, '');
  return {
    info: (m, fields) => l.info(fields ?? {}, strip(m)),
    warn: (m, fields) => l.warn(fields ?? {}, strip(m)),
    error: (m, fields) => l.error(fields ?? {}, strip(m)),
  };
}

function writePortFile(file: string, port: number): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    fs.writeFileSync(tmp, String(port));
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true }); // a directory where the file goes: no temp file left
    throw err;
  }
}

/** SERVICE_TRACE_DIR made and writable before any thread starts (the workers write traces there). */
function ensureTraceDir(dir: string | undefined): void {
  if (!dir) return;
  try {
    makeDirsSync(dir); // not { recursive: true }: on /proc/x it retries for ever
    fs.accessSync(dir, fs.constants.W_OK | fs.constants.X_OK);
  } catch (err) {
    throw pathRefusal(err, 'SERVICE_TRACE_DIR', dir) ?? err;
  }
}

export async function serve(): Promise<void> {
  // A stop asked for before the HTTP server is up (recovery may already be running: it starts
  // first) is kept and drained once it is, instead of the default action killing the process
  // (src/cli.ts keeps them from before this module loaded).
  keepEarlyStops();
  const settings = readSettings();
  logger = createLogger(settings.logLevel);
  for (const u of unknownSettings(process.env)) {
    logger.warn({ setting: u.name, closest: u.closest }, `unknown setting ${u.name} ignored (did you mean ${u.closest}?)`);
  }
  logger.info({ config: effectiveSettings(settings) }, 'effective config');
  const keys = apiKeys(settings);
  if (settings.stageClock) startStageClock(stageOriginNs()); // before the threads spawn
  ensureTraceDir(settings.traceDir);
  const sup = new Supervisor(settings, supervisorLog(logger));
  await sup.start().catch((err: unknown) => {
    throw pathRefusal(err, 'SERVICE_DATA_DIR', settings.dataDir) ?? err;
  });
  // Recovery starts now, and the HTTP server's modules load after (a dynamic import): loading and
  // building them is ~0.4 s of this thread, which the threads' own boot and the snapshot read
  // overlap instead of waiting behind (docs/ARCHITECTURE.md "Many topics": time to ready). A test's recovery delay still
  // counts from the port opening.
  let portOpen!: () => void;
  const listening = new Promise<void>((r) => (portOpen = r));
  const recovered = (async () => {
    if (settings.testRecoveryDelayMs > 0) {
      await listening;
      await new Promise((r) => setTimeout(r, settings.testRecoveryDelayMs));
    }
    await sup.recover();
  })().catch((err: Error) => {
    // Damage found by recovery (a CorruptionError, also as it comes back from a worker or the WAL
    // thread, where it keeps only its name) is a refused start: one line naming the file and
    // offset, no stack (docs/OPERATIONS.md "Exit codes"). Anything else keeps its stack.
    const layout = layoutRefusal(err);
    if (err instanceof CorruptionError || err?.name === 'CorruptionError')
      logger.error(`refused to start: recovery failed: ${err.message}`);
    else if (layout) logger.error(`refused to start: ${layout}`);
    else logger.error({ err }, `recovery failed: ${err.message}`);
    process.exit(1);
  });
  const { buildServer } = await import('../http/server.js');
  const front = await buildServer(sup, keys, logger);
  const { app } = front;
  if (keys.enabled) logger.info({ api_keys: keys.keys.length }, `auth enabled, ${keys.keys.length} API key(s)`);
  await app.listen({ host: settings.host, port: settings.port }).catch((err: unknown) => {
    throw bindRefusal(err, settings.host, settings.port) ?? err;
  });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : settings.port;
  if (settings.portFile) {
    try {
      writePortFile(settings.portFile, port);
    } catch (err) {
      throw pathRefusal(err, 'SERVICE_PORT_FILE', settings.portFile, { EISDIR: 'a directory is where the file should be' }) ?? err;
    }
  }
  logger.info({ host: settings.host, port }, `listening on http://${settings.host}:${port}`);

  const shutdown = drainer(settings, sup, front);
  // The drain's listeners first, the early ones off after: with no listener at all for a moment,
  // Node closes the signal's handle, and a SIGTERM pending then was dropped (the server served on).
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  const stopAsked = takeEarlyStop();
  if (stopAsked) void shutdown(stopAsked);

  portOpen();
  await recovered;
}

/**
 * The drain on SIGTERM/SIGINT (docs/ARCHITECTURE.md "Startup and shutdown"): the listener
 * closes, parked long-polls are answered, watch streams get their terminal frame, `/work` leases
 * go back, running requests finish, then the WAL is flushed and the final checkpoint written,
 * and the process exits 0. Past the grace the connections still open (a slow upload, a client
 * that never reads) are closed and the drain finishes; only a drain still running
 * DRAIN_AFTER_GRACE_MS later exits 1, naming the step it was in. A second signal does nothing.
 */
function drainer(
  settings: Settings,
  sup: Supervisor,
  { app, hub, work, metrics, slots, connections }: FrontEnd,
): (signal: string) => Promise<void> {
  let stopping = false;
  return async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const startedMs = Date.now();
    let phase = 'closing the listener';
    logger.info({ signal, grace_ms: settings.shutdownGraceMs }, 'draining');
    const force = setTimeout(() => {
      app.server.getConnections((_err, connections) => {
        const open = {
          phase,
          connections,
          sse_streams: slots.open,
          work_streams: work.size,
          watch_sessions: hub.registry.size,
          elapsed_ms: Date.now() - startedMs,
        };
        logger.warn(open, `drain ran out of its ${settings.shutdownGraceMs} ms grace while ${phase}; closing ${connections} connection(s)`);
        // Requests cut off here were not answered, so nothing they asked for was acknowledged.
        app.server.closeAllConnections();
        setTimeout(() => {
          logger.error(
            { ...open, elapsed_ms: Date.now() - startedMs },
            `drain still ${phase} ${DRAIN_AFTER_GRACE_MS} ms after its grace; exiting without a final checkpoint`,
          );
          process.exit(1);
        }, DRAIN_AFTER_GRACE_MS).unref();
      });
    }, settings.shutdownGraceMs);
    force.unref();
    sup.lifecycle = 'draining';
    // Only the listener: http.Server.close would also close the idle keep-alive connections,
    // whose next request is to get its 503 shutting_down (or health's 200) instead (step 2).
    // app.close() closes the idle ones left once no request runs.
    net.Server.prototype.close.call(app.server);
    // Requests already running finish; new ones on open connections get 503 shutting_down.
    phase = 'answering long-polls';
    await sup.releaseLongPolls();
    phase = 'closing watch streams';
    hub.closeAll(); // docs/ARCHITECTURE.md "Startup and shutdown" step 3: a terminal error frame on every open stream
    phase = 'releasing /work leases';
    await work.closeAll(); // ... and every /work stream's leases released before the final checkpoint
    phase = 'finishing HTTP requests';
    await connections.idle();
    await app.close();
    phase = 'stopping routers, flushing the WAL and the final checkpoint';
    await sup.shutdown(startedMs + settings.shutdownGraceMs - Date.now());
    logger.info(
      {
        signal,
        drain_ms: Date.now() - startedMs,
        uptime_s: Math.round(process.uptime()),
        ...metrics.requestTotals(),
        topics: sup.liveTopics(),
      },
      'stopped',
    );
    process.exit(0);
  };
}

/**
 * The API keys (docs/ARCHITECTURE.md "Startup and shutdown"): a malformed entry refuses the
 * start (the message names the bad scope token, never the secret), then so does a non-loopback
 * host without keys, both before anything binds.
 */
function apiKeys(settings: Settings): KeyRing {
  let keys: KeyRing;
  try {
    keys = KeyRing.parse(settings.apiKeys);
  } catch (err) {
    if (err instanceof KeySyntaxError) throw new SettingsError(err.message);
    throw err;
  }
  if (!isLoopback(settings.host) && !keys.enabled && !settings.allowInsecureNoAuth) {
    throw new SettingsError(`refusing to bind ${settings.host} without SERVICE_API_KEYS; set SERVICE_ALLOW_INSECURE_NO_AUTH=1 to override`);
  }
  // Every entry skipped (no secret before its first `:`): the setting's own rule leaves auth off,
  // which an operator who set it cannot have meant, so the start says so.
  if (!keys.enabled && (settings.apiKeys ?? '').replace(/[\s,]/g, '') !== '')
    logger.warn('SERVICE_API_KEYS is set, but none of its entries has a secret (each is skipped): auth is OFF (dev mode)');
  return keys;
}

/**
 * A listen error that a restart will not fix (the port is taken, needs privileges, or the host
 * is not this machine's) as a refused start: one line and exit 2, like a bad setting, so the
 * systemd unit does not restart it in a loop. Any other error keeps its stack.
 */
function bindRefusal(err: unknown, host: string, port: number): SettingsError | undefined {
  const code = (err as NodeJS.ErrnoException).code;
  const why =
    code === 'EADDRINUSE'
      ? `port ${port} on ${host} is already in use by another process`
      : code === 'EACCES'
        ? `listening on ${host}:${port} needs privileges this process lacks`
        : code === 'EADDRNOTAVAIL'
          ? `${host} is not an address of this machine`
          : code === 'ENOTFOUND'
            ? `${host} does not resolve`
            : undefined;
  return why === undefined ? undefined : new SettingsError(`${why} (SERVICE_HOST, SERVICE_PORT)`);
}

/**
 * A path setting the server cannot use (a file where a directory goes, a read-only or missing
 * place, no permission): one `refused to start` line and exit 2, as for a bad value, not a stack.
 */
function pathRefusal(err: unknown, setting: string, where: string, also: Record<string, string> = {}): SettingsError | undefined {
  const code = (err as NodeJS.ErrnoException).code;
  const why: Record<string, string> = {
    EEXIST: 'a file is in the way of a directory',
    ENOTDIR: 'a file is in the way of a directory',
    EROFS: 'it is on a read-only file system',
    EACCES: 'this process may not write there',
    EPERM: 'this process may not write there',
    ENOENT: 'a directory on its path is missing or cannot be made',
    ...also, // codes only this setting can meet (EISDIR at the data dir is the layout's line)
  };
  const reason = code === undefined ? undefined : why[code];
  // An entry inside it (a subdirectory another user made) is named too.
  const at = (err as NodeJS.ErrnoException).path;
  const inside = at !== undefined && at !== where && at.startsWith(`${where}${path.sep}`) ? `: ${at}` : '';
  return reason === undefined ? undefined : new SettingsError(`cannot use ${where} (${setting})${inside}: ${reason} (${code})`);
}

/**
 * An entry of the data directory of the wrong kind (a file where `wal/`, `meta/`, `packs/` or
 * `topics/` go, a directory where a file goes): one line naming it, or undefined. The error may
 * come back from a worker thread as its message only ("ENOTDIR: ..., scandir '<path>'").
 */
function layoutRefusal(err: unknown): string | undefined {
  const e = err as NodeJS.ErrnoException | undefined;
  const m = /^(ENOTDIR|EISDIR): [^,]*, \w+ '([^']+)'/.exec(e?.message ?? '');
  const code = e?.code ?? m?.[1];
  const where = e?.path ?? m?.[2];
  if (code === 'ENOTDIR') return `${where ?? 'the data directory'}: a file is where a directory should be (ENOTDIR)`;
  // A read of a directory's fd names no path: the one file read that way at the start is LOCK.
  if (code === 'EISDIR') return `${where ?? 'LOCK'}: a directory is where a file should be (EISDIR)`;
  return undefined;
}

/** A server that could not start, logged at error: a known cause is one line, anything else keeps its stack. */
export function reportServeFailure(err: unknown): number {
  if (err instanceof SettingsError) {
    logger.error({ refused: 'settings' }, `refused to start: ${err.message}`);
    return 2;
  }
  const layout = layoutRefusal(err);
  if (err instanceof DataDirLockedError || err instanceof CorruptionError) logger.error(`refused to start: ${err.message}`);
  else if (layout) logger.error(`refused to start: ${layout}`);
  else logger.error({ err }, `fatal: ${(err as Error).message}`);
  return 1;
}
