// Headless Chromium for browser tests: Debian's `chromium` package (installed by .ci/run) driven by
// playwright-core through executablePath. Playwright never downloads a browser here. A missing
// Chromium is a test failure with a clear message, never a silent skip: CI installs it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Override with SPOOL_CHROMIUM for a non-Debian machine. */
export const CHROMIUM_PATH = process.env.SPOOL_CHROMIUM || '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Launches Chromium with a fresh user data dir (removed on close). */
export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM_PATH}. The browser tests need Debian's chromium package: ` +
        `run \`apt-get install -y --no-install-recommends chromium\` (as .ci/run does), or set SPOOL_CHROMIUM.`,
    );
  }
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-chromium-'));
  let context: BrowserContext;
  try {
    // launchPersistentContext is how playwright takes a user data dir (it rejects --user-data-dir in args).
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: 20_000,
    });
  } catch (e) {
    fs.rmSync(userDataDir, { recursive: true, force: true });
    throw new Error(`could not launch Chromium at ${CHROMIUM_PATH}: ${(e as Error).message}`);
  }
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
