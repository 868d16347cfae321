/**
 * `treasury-bot console`: the web console alone, on the ops address, reading and acting on the database
 * without running cycles (for a host that should not trade, or while the worker is stopped). It also reads
 * the purchase service of each account with an address and a token (TREASURY_API_URL for `default`), which
 * adopting an order and the reconciliation report need; an account without is shown but not read (demo
 * mode's sandbox would be a new, empty one). SIGINT and SIGTERM stop it.
 */
import type { Command } from 'commander';
import type { FastifyInstance } from 'fastify';
import type { ConsoleAccount } from '../console/context.js';
import type { Database } from '../db/index.js';
import { createLogger } from '../observability/logger.js';
import { printErrorLine } from './terminal.js';

export function registerConsoleCommands(program: Command): void {
  program
    .command('console')
    .description('serve the web console on the ops address without running cycles')
    .action(runConsole);
}

async function runConsole(): Promise<void> {
  let database: Database | undefined;
  const accounts = new Map<string, ConsoleAccount>();
  let server: FastifyInstance | undefined;
  let secrets: string[] = [];
  try {
    const { openDatabaseFromSettings, secretsOf } = await import('../app.js');
    const { clearTextWarnings, consoleHosts, createAccountClient, isDemo, loadSettings, planListeners } =
      await import('../config/index.js');
    const { registerConsole } = await import('../console/server.js');
    const { registerRestApi } = await import('../rest-api/server.js');
    const { settleDemoAdmin } = await import('../console/demo-admin.js');
    const { openConsoleStore } = await import('../db/index.js');
    const { handleSignals } = await import('../engine/index.js');
    const { createReceiverServer, listen } = await import('../observability/http-server.js');
    const settings = loadSettings({ env: process.env });
    server = createReceiverServer(undefined, settings.ops.trustedProxies);
    secrets = secretsOf(settings);
    const logger = createLogger({
      level: settings.log.level,
      secrets,
      name: 'treasury-bot',
    });
    for (const warning of clearTextWarnings(settings)) logger.warn(warning);
    ({ database } = await openDatabaseFromSettings(settings, { maxConnections: 4 }));
    server.get('/healthz', async () => ({ status: 'ok' }));
    const clock = () => new Date();
    // Reading pages needs no service: an address without its token only turns reading it off, said here.
    for (const account of settings.accounts) {
      const { url, token } = account.api;
      const client =
        url !== undefined && token !== undefined
          ? createAccountClient(account, { baseUrl: url, token })
          : undefined;
      if (url !== undefined && token === undefined)
        logger.warn(
          { account: account.name },
          'the account names a service without a token: adopting its orders from the console is off',
        );
      accounts.set(account.name, client ? { name: account.name, client } : { name: account.name });
    }
    const ops = planListeners(settings).ops;
    const store = openConsoleStore(database, clock);
    // Before the console answers: a demo admin left on this database must not open it (README, Demo mode).
    await settleDemoAdmin(store, {
      command: 'console',
      demo: isDemo(settings),
      embedded: database.kind === 'pglite',
    });
    registerConsole(server, {
      database,
      store,
      clock,
      logger,
      accounts,
      hosts: consoleHosts(settings, ops),
      reports: { timeZone: settings.reports.timezone },
      requireTotp: settings.console.requireTotp,
      ...(settings.console.oidc ? { oidc: settings.console.oidc } : {}),
      localLogin: settings.console.localLogin,
    });
    // The API of a process that runs no cycles: everything but `once`.
    registerRestApi(server, {
      database,
      store,
      clock,
      logger,
      accounts,
      hosts: consoleHosts(settings, ops),
      timeZone: settings.reports.timezone,
      requestsPerMinute: settings.console.apiRequestsPerMinute,
    });
    const { host, port } = ops;
    const bound = await listen(server, host, port);
    logger.info(
      { host, port: bound },
      'web console listening, with the REST API (no cycles run in this process)',
    );
    await new Promise<void>((resolve) => {
      const dispose = handleSignals(
        {
          stop: async () => {
            dispose();
            resolve();
          },
          reload: async () => undefined,
        },
        logger,
      );
    });
  } catch (error) {
    printErrorLine(error, secrets);
    process.exitCode = 1;
  } finally {
    await server?.close();
    await Promise.all([...accounts.values()].map((account) => account.client?.close()));
    await database?.close();
  }
}
