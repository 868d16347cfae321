/** The admin that demo mode (`npm start`) creates, with a password printed once. */
import type { ConsoleStore } from '../db/index.js';
import { generatePassword, hashPassword } from './passwords.js';

export const DEMO_ADMIN = 'demo-admin';

/**
 * Created on first start, given a fresh password on every start, which the caller prints once. Nothing real
 * can be bought in demo mode, but the console still never has a fixed password.
 */
export async function resetDemoAdmin(store: ConsoleStore): Promise<string> {
  const password = generatePassword();
  const passwordHash = await hashPassword(password);
  const existing = await store.people.findByName(DEMO_ADMIN);
  if (existing) await store.people.setPassword(DEMO_ADMIN, passwordHash, 'demo-mode');
  else await store.people.add({ name: DEMO_ADMIN, role: 'admin', passwordHash }, 'demo-mode');
  return password;
}

/** On stderr, never through the logger: log lines are kept and shipped, this password must not be. */
export function printDemoAdmin(password: string, url: string): void {
  process.stderr.write(
    `\n  DEMO MODE web console: ${url}\n  log in as ${DEMO_ADMIN} with the one-time password ${password}\n  (a new one is made at every start; add real people with \`treasury-bot user add\`)\n\n`,
  );
}
