/**
 * The REST API's bearer tokens from the command line: `token add`, `token list` and `token revoke`. A token
 * is printed once, by `add`, and stored only as the hash of its secret (src/rest-api/tokens.ts). Changes are
 * written with their audit row; the actor is TREASURY_ACTOR, or the login name of whoever runs the command.
 * An error is one line on stderr and exit 1.
 */
import type { Command } from 'commander';
import type { ApiToken, ConsoleStore, Role } from '../db/index.js';
import { parseDuration } from '../strategy/duration.js';
import { withCommandDatabase } from './command-database.js';
import { commandLineActor } from './people.js';
import { CliArgumentError, cell, printErrorLine, printJson, printLines, renderTable } from './terminal.js';

interface AddFlags {
  role: string;
  expires?: string;
  accounts?: string;
  json?: boolean;
}

export function registerTokenCommands(program: Command): void {
  const token = program.command('token').description('bearer tokens of the REST API (/api/v1)');
  token
    .command('add')
    .description('add a token with a role; it is printed once, here, and stored only hashed')
    .argument('<name>', 'the name every act through the token is audited under (letters, digits, . _ - @)')
    // Spelled out rather than ROLES, whose module is the database layer that help must not load.
    .requiredOption('--role <role>', 'one of viewer, operator, approver, admin')
    .option('--expires <duration>', 'refused after this long, such as 90d or 12h (default: never)')
    .option('--accounts <names>', 'only these accounts, comma-separated (default: every account)')
    .option('--json', 'print one JSON document on stdout')
    .action((name: string, flags: AddFlags) =>
      withStore(async (store) => {
        const { PERSON_NAME } = await import('../control/index.js');
        const { ROLES } = await import('../db/index.js');
        const { newApiToken } = await import('../rest-api/tokens.js');
        if (!PERSON_NAME.test(name)) {
          throw new CliArgumentError(`name "${name}" is not 1 to 64 letters, digits, ., _, - or @`);
        }
        if (!(ROLES as readonly string[]).includes(flags.role)) {
          throw new CliArgumentError(`--role must be one of ${ROLES.join(', ')} (got "${flags.role}")`);
        }
        const expiresAt = expiryOf(flags.expires, new Date());
        const { loadSettings } = await import('../config/index.js');
        const configured = loadSettings({ env: process.env }).accounts.map((account) => account.name);
        const accounts = accountsOf(flags.accounts, configured);
        const made = newApiToken();
        const added = await store.apiTokens.add(
          { name, role: flags.role as Role, accounts, expiresAt, ...made },
          commandLineActor(),
        );
        if (flags.json) {
          printJson({ ...view(added), token: made.token }, []);
          return;
        }
        printLines(
          [
            `token ${added.name} added as ${added.role} for ${accounts?.join(', ') ?? 'every account'}, ${
              expiresAt ? `expiring ${expiresAt.toISOString()}` : 'never expiring'
            }; it is shown this once, keep it in a secret store:`,
            made.token,
          ],
          [],
        );
      }),
    );
  token
    .command('list')
    .description('every token, live and revoked (never the token itself)')
    .option('--json', 'print one JSON document on stdout')
    .action((flags: { json?: boolean }) =>
      withStore(async (store) => {
        const tokens = (await store.apiTokens.list()).map(view);
        if (flags.json) {
          printJson(tokens, []);
          return;
        }
        printLines(
          renderTable(
            ['name', 'role', 'accounts', 'starts', 'created', 'expires', 'lastUsed', 'revoked'],
            tokens.map((t) => [
              t.name,
              t.role,
              t.accounts?.join(',') ?? 'all',
              t.starts,
              cell(t.createdAt),
              cell(t.expiresAt),
              cell(t.lastUsedAt),
              cell(t.revokedAt),
            ]),
          ),
          [],
        );
      }),
    );
  token
    .command('revoke')
    .description('revoke the live token of that name: refused from its next request, on every replica')
    .argument('<name>')
    .action((name: string) =>
      withStore(async (store) => {
        const revoked = await store.apiTokens.revoke(name, commandLineActor());
        printLines([`token ${revoked.name} revoked`], []);
      }),
    );
}

/** What is shown of a token: its first characters (enough to tell which one a script holds), never more. */
function view(token: ApiToken) {
  const { id: _id, lookup, ...shown } = token;
  return { ...shown, starts: `tbk_${lookup}` };
}

function expiryOf(text: string | undefined, now: Date): Date | null {
  if (text === undefined) return null;
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) {
    throw new CliArgumentError(`--expires must be a duration such as 90d, 12h or 1d12h (got "${text}")`);
  }
  return new Date(now.getTime() + ms);
}

/** The accounts named, each one of the settings' (a typo would make a token that reads nothing). */
function accountsOf(text: string | undefined, configured: readonly string[]): string[] | null {
  if (text === undefined) return null;
  const names = [...new Set(text.split(',').map((name) => name.trim()))];
  const unknown = names.filter((name) => !configured.includes(name));
  if (unknown.length > 0) {
    throw new CliArgumentError(
      `--accounts: ${unknown.map((name) => JSON.stringify(name)).join(', ')} is no account of the settings (accounts: ${configured.join(', ')})`,
    );
  }
  return names;
}

async function withStore(work: (store: ConsoleStore) => Promise<void>): Promise<void> {
  try {
    const { openConsoleStore } = await import('../db/index.js');
    await withCommandDatabase((database) => work(openConsoleStore(database)));
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  }
}
