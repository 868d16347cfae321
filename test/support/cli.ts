/**
 * How tests start `treasury-bot` as a child process. Global setup transpiles the program once per run into
 * plain JavaScript (test/support/global-setup.ts), so each child starts in a fraction of a second instead of
 * compiling TypeScript on the fly; the suite spawns dozens of them.
 */
import { inject } from 'vitest';

export const REPO_ROOT = new URL('../../', import.meta.url).pathname;

/** `node <transpiled cli.js> ...args`: pass to spawn/execFile as (command, args). */
export function cliInvocation(args: readonly string[]): [string, string[]] {
  return [process.execPath, ['--enable-source-maps', inject('treasuryCli'), ...args]];
}
