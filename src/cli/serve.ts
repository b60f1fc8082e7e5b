// `spool serve`: runs the server in the foreground until SIGTERM/SIGINT (RESOLVED 1.2, 1.3).
// Loaded only when this command runs, so client commands never pull in server code.
import fs from 'node:fs';
import path from 'node:path';
import { readSettings, isLoopback, SettingsError } from '../config.js';
import { KeyRing, KeySyntaxError } from '../auth/keys.js';
import { Supervisor } from '../supervisor/supervisor.js';
import { buildServer } from '../http/server.js';
import { DataDirLockedError } from '../storage/lock.js';
import { WalCorruptionError } from '../wal/scan.js';

const log = {
  info: (m: string) => process.stderr.write(`${m}\n`),
  error: (m: string) => process.stderr.write(`${m}\n`),
};

function writePortFile(file: string, port: number): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  fs.writeFileSync(tmp, String(port));
  fs.renameSync(tmp, file);
}

export async function serve(): Promise<void> {
  const settings = readSettings();
  // RESOLVED 1.2: a malformed key entry (the message names the bad scope token, never the
  // secret), then the loopback check, both before anything binds.
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
  const sup = new Supervisor(settings, log);
  await sup.start();
  const { app, hub, work } = await buildServer(sup, keys);
  if (keys.enabled) log.info(`spool: auth enabled, ${keys.keys.length} API key(s)`);
  await app.listen({ host: settings.host, port: settings.port });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : settings.port;
  if (settings.portFile) writePortFile(settings.portFile, port);
  log.info(`spool: listening on http://${settings.host}:${port}`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`spool: ${signal}, draining`);
    const force = setTimeout(() => {
      log.error('spool: drain took too long, exiting');
      process.exit(0);
    }, settings.shutdownGraceMs);
    force.unref();
    sup.lifecycle = 'draining';
    app.server.close();
    // Requests already running finish; new ones on open connections get 503 shutting_down.
    await sup.releaseLongPolls();
    hub.closeAll(); // RESOLVED 1.3 step 3: a terminal error frame on every open stream
    await work.closeAll(); // ... and every /work stream's leases released before the final checkpoint
    await app.close();
    await sup.shutdown();
    log.info('spool: stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  if (settings.testRecoveryDelayMs > 0) await new Promise((r) => setTimeout(r, settings.testRecoveryDelayMs));
  try {
    await sup.recover();
  } catch (err) {
    log.error(`spool: recovery failed: ${(err as Error).message}`);
    process.exit(1);
  }
}

/** A server that could not start: a known cause is one line, anything else keeps its stack. Exit 1. */
export function reportServeFailure(err: unknown): number {
  if (err instanceof SettingsError || err instanceof DataDirLockedError || err instanceof WalCorruptionError) log.error(`spool: ${err.message}`);
  else log.error(`spool: fatal: ${(err as Error).stack ?? String(err)}`);
  return 1;
}
