/**
 * The people of the web console and the audit log, from the command line: `user add|list|disable|passwd`,
 * `user totp` (second-factor.ts) and `audit`. Changes are written with their audit row; the actor is TREASURY_ACTOR, or the login name of
 * whoever runs the command. An error is one line on stderr and exit 1.
 *
 * `user add --accounts a,b` limits a person to some of the settings' accounts: they see and act on those
 * accounts' rows only. An admin always sees every account, so `--accounts` with `--role admin` is refused
 * rather than ignored: the person adding them meant a limit that would not hold.
 */
import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import type { Command } from 'commander';
import type { Settings } from '../config/index.js';
import { hashPassword } from '../console/passwords.js';
import type { ConsoleStore, Role } from '../db/index.js';
import { withCommandDatabase } from './command-database.js';
import { registerSecondFactorCommands } from './second-factor.js';
import { cell, printErrorLine, printJson, printLines, renderTable } from './terminal.js';

export class PeopleArgumentError extends Error {
  override readonly name = 'PeopleArgumentError';
  readonly code = 'INVALID_ARGUMENT';
}

/** Who a command-line change is recorded as. */
export function commandLineActor(env: NodeJS.ProcessEnv = process.env): string {
  const declared = env.TREASURY_ACTOR?.trim();
  if (declared) return declared;
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
}

export function registerPeopleCommands(program: Command): void {
  const user = program.command('user').description('the people who may log in to the web console');
  user
    .command('add')
    .description('add a person with a role (the password is prompted, or read from --password-file)')
    .argument('<name>', 'login name: letters, digits, . _ - @ (up to 64)')
    // Spelled out rather than ROLES, whose module is the database layer that help must not load; a test of
    // `user add --help` (test/console/cli.test.ts) keeps the two lists the same.
    .requiredOption('--role <role>', 'one of viewer, operator, approver, admin')
    .option('--password-file <file>', 'read the password from the first line of this file')
    .option(
      '--accounts <names>',
      'limit the person to these accounts, comma-separated (default: every account; never for an admin)',
    )
    .action((name: string, flags: { role: string; passwordFile?: string; accounts?: string }) =>
      withStore(async (store, settings) => {
        const { PERSON_NAME } = await import('../control/index.js');
        const { ROLES } = await import('../db/index.js');
        if (!PERSON_NAME.test(name)) {
          throw new PeopleArgumentError(`name "${name}" is not 1 to 64 letters, digits, ., _, - or @`);
        }
        if (!(ROLES as readonly string[]).includes(flags.role)) {
          throw new PeopleArgumentError(`--role must be one of ${ROLES.join(', ')} (got "${flags.role}")`);
        }
        const accounts =
          flags.accounts === undefined ? null : accountsOf(flags.accounts, flags.role, settings);
        const passwordHash = await hashPassword(await readPassword(flags.passwordFile));
        const person = await store.people.add(
          { name, role: flags.role as Role, passwordHash, accounts },
          commandLineActor(),
        );
        const limit = person.accounts === null ? '' : `, limited to ${person.accounts.join(', ')}`;
        printLines([`user ${person.name} added as ${person.role}${limit}`], []);
      }),
    );
  user
    .command('list')
    .description('everyone with a console login, active or disabled')
    .option('--json', 'print one JSON document on stdout')
    .action((flags: { json?: boolean }) =>
      withStore(async (store) => {
        const people = await store.people.list();
        if (flags.json) printJson(people, []);
        else
          printLines(
            renderTable(
              ['name', 'role', 'accounts', 'created', 'disabled'],
              people.map((p) => [
                p.name,
                p.role,
                p.accounts === null ? 'all' : p.accounts.join(','),
                cell(p.createdAt),
                cell(p.disabledAt),
              ]),
            ),
            [],
          );
      }),
    );
  user
    .command('disable')
    .description('disable a person and end their sessions (the audit log keeps their name)')
    .argument('<name>')
    .action((name: string) =>
      withStore(async (store) => {
        await store.people.disable(name, commandLineActor());
        printLines([`user ${name} disabled; their sessions are revoked`], []);
      }),
    );
  user
    .command('passwd')
    .description("set a person's password (prompted, or from --password-file); ends their sessions")
    .argument('<name>')
    .option('--password-file <file>', 'read the password from the first line of this file')
    .action((name: string, flags: { passwordFile?: string }) =>
      withStore(async (store) => {
        const passwordHash = await hashPassword(await readPassword(flags.passwordFile));
        await store.people.setPassword(name, passwordHash, commandLineActor());
        printLines([`password of ${name} changed; their sessions are revoked`], []);
      }),
    );
  registerSecondFactorCommands(user, withStore);

  program
    .command('audit')
    .description('what people did: console actions, user changes and logins, oldest first')
    .option('--since <iso>', 'only entries at or after this instant (ISO 8601)')
    .option('--json', 'print one JSON document on stdout')
    .action((flags: { since?: string; json?: boolean }) =>
      withStore(async (store) => {
        const since = flags.since === undefined ? undefined : parseInstant(flags.since);
        const entries = [];
        for (let beforeId: number | undefined; ; ) {
          const page = await store.audit.list({ since, beforeId, limit: 1000 });
          entries.push(...page);
          if (page.length < 1000) break;
          beforeId = page.at(-1)?.id;
        }
        entries.reverse();
        if (flags.json) printJson(entries, []);
        else
          printLines(
            renderTable(
              ['at', 'actor', 'action', 'subject', 'before', 'after'],
              entries.map((e) => [
                cell(e.at),
                e.actor,
                e.action,
                e.subject ?? '',
                e.before === null ? '' : JSON.stringify(e.before),
                e.after === null ? '' : JSON.stringify(e.after),
              ]),
            ),
            [],
          );
      }),
    );
}

/** `--accounts a,b`: each one of the settings' accounts, for a role that can be limited. */
function accountsOf(list: string, role: string, settings: Settings): string[] {
  if (role === 'admin') {
    throw new PeopleArgumentError(
      '--accounts cannot limit an admin, who sees every account: give the person another role, or leave --accounts out',
    );
  }
  const names = list.split(',').map((name) => name.trim());
  const known = settings.accounts.map((account) => account.name);
  if (names.some((name) => name === '')) {
    throw new PeopleArgumentError(`--accounts takes names separated by commas (got "${list}")`);
  }
  const unknown = names.find((name) => !known.includes(name));
  if (unknown !== undefined) {
    throw new PeopleArgumentError(
      `--accounts: no account named "${unknown}" in the settings (accounts: ${known.join(', ')})`,
    );
  }
  return names;
}

function parseInstant(text: string): Date {
  const at = new Date(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(at.getTime())) {
    throw new PeopleArgumentError(
      `--since must be an ISO 8601 instant such as 2026-11-01T00:00:00Z (got "${text}")`,
    );
  }
  return at;
}

async function readPassword(file: string | undefined): Promise<string> {
  if (file !== undefined) {
    let content: string;
    try {
      content = await readFile(file, 'utf8');
    } catch (error) {
      throw new PeopleArgumentError(`--password-file ${file}: ${(error as Error).message}`);
    }
    const line = content.split(/\r?\n/, 1)[0] ?? '';
    if (line === '') throw new PeopleArgumentError(`--password-file ${file}: the first line is empty`);
    return line;
  }
  if (!process.stdin.isTTY) {
    throw new PeopleArgumentError('no terminal to prompt on: give the password with --password-file FILE');
  }
  const first = await prompt('password: ');
  const again = await prompt('again: ');
  if (first !== again) throw new PeopleArgumentError('the two passwords differ');
  return first;
}

/** Reads one line from the terminal without echoing it. */
function prompt(question: string): Promise<string> {
  process.stderr.write(question);
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  const reader = createInterface({ input: process.stdin, output: silent, terminal: true });
  return new Promise((resolve) =>
    reader.question('', (answer) => {
      reader.close();
      process.stderr.write('\n');
      resolve(answer);
    }),
  );
}

async function withStore(work: (store: ConsoleStore, settings: Settings) => Promise<void>): Promise<void> {
  try {
    const { openConsoleStore } = await import('../db/index.js');
    await withCommandDatabase((database, settings) => work(openConsoleStore(database), settings));
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  }
}
