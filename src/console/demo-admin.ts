/**
 * The admin that demo mode (`npm start`) creates, with a password printed once. It exists only as long as
 * the demo: its password goes to stderr, which log collectors keep, so it must never open a console that
 * governs real money or real people.
 */
import type { ConsoleStore } from '../db/index.js';
import { generatePassword, hashPassword } from './passwords.js';

export const DEMO_ADMIN = 'demo-admin';

/** Who records the demo admin's changes in the audit log. */
const DEMO_ACTOR = 'demo-mode';

export interface DemoStart {
  /** `run` makes the demo admin; the console alone only ever retires it. */
  command: 'run' | 'console';
  /** No purchase service configured: the built-in sandbox (or, for the console, none). */
  demo: boolean;
  /** The embedded database, which one process owns, rather than a server others share. */
  embedded: boolean;
}

/**
 * What a start means for the demo admin, returning the password to print when one was made:
 * - `run` in demo mode on the embedded database that has nobody else: created, or given a fresh password;
 * - a start against a real service, on a database server, or beside people of the database's own: disabled,
 *   which ends its sessions, and never enabled again by a later demo;
 * - the console alone in demo mode on the embedded database: left as it is (the demo's next `run` owns it).
 */
export async function settleDemoAdmin(store: ConsoleStore, start: DemoStart): Promise<string | undefined> {
  const people = await store.people.list();
  const demoAdmin = people.find((person) => person.name === DEMO_ADMIN);
  const demoDatabase = start.demo && start.embedded && people.every((person) => person.name === DEMO_ADMIN);
  if (demoDatabase && start.command === 'console') return undefined;
  if (demoDatabase && demoAdmin?.disabledAt == null) {
    const password = generatePassword();
    const passwordHash = await hashPassword(password);
    if (demoAdmin) await store.people.setPassword(DEMO_ADMIN, passwordHash, DEMO_ACTOR);
    else await store.people.add({ name: DEMO_ADMIN, role: 'admin', passwordHash }, DEMO_ACTOR);
    return password;
  }
  if (demoAdmin && demoAdmin.disabledAt === null) await store.people.disable(DEMO_ADMIN, DEMO_ACTOR);
  return undefined;
}

/** On stderr, never through the logger: log lines are kept and shipped, this password must not be. */
export function printDemoAdmin(password: string, url: string): void {
  process.stderr.write(
    `\n  DEMO MODE web console: ${url}\n  log in as ${DEMO_ADMIN} with the one-time password ${password}\n  (a new one is made at every start; add real people with \`treasury-bot user add\`)\n\n`,
  );
}
