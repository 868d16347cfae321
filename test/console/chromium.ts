/**
 * The system's Chromium for the console's browser tests: CHROMIUM_PATH, or `chromium` / `chromium-browser`
 * on PATH, launched headless with what a container needs. Absent, a test file skips with a loud banner.
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH)
    return existsSync(process.env.CHROMIUM_PATH) ? process.env.CHROMIUM_PATH : undefined;
  for (const folder of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      if (existsSync(join(folder, name))) return join(folder, name);
    }
  }
  return undefined;
}

/** The Chromium to use, or undefined after saying loudly that `file`'s browser tests are skipped. */
export function chromiumFor(file: string): string | undefined {
  const found = findChromium();
  if (!found) {
    process.stderr.write(
      `\n!!! ${file}: the web console browser tests SKIPPED, no Chromium (apt-get install -y chromium, or set CHROMIUM_PATH)\n\n`,
    );
  }
  return found;
}

export const LAUNCH_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
