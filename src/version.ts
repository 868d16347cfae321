/**
 * The package's version, read once from its package.json (found above this file, from src/ or dist/src/):
 * the client names itself with it (`User-Agent: treasury-bot/<version>`) and `--version` prints it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function readVersion(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level < 4; level++) {
    const file = join(directory, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'treasury-bot' && manifest.version) return manifest.version;
    }
    directory = dirname(directory);
  }
  return '0.0.0-unknown';
}

export const VERSION = readVersion();
export const USER_AGENT = `treasury-bot/${VERSION}`;
