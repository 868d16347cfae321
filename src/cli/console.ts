/**
 * `treasury-bot console`: the web console alone, on the ops address, reading and acting on the database
 * without running cycles (for a host that should not trade, or while the worker is stopped). With
 * TREASURY_API_URL set it also reads the purchase service, which adopting an order needs; without it there
 * is no service to read (demo mode's sandbox would be a new, empty one). SIGINT and SIGTERM stop it.
 */
import type { Command } from 'commander';
import type { FastifyInstance } from 'fastify';
import type { PurchaseClient } from '../api/index.js';
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
  let client: PurchaseClient | undefined;
  let server: FastifyInstance | undefined;
  let secrets: string[] = [];
  try {
    const { openDatabaseFromSettings, secretsOf } = await import('../app.js');
    const { clearTextWarnings, consoleHosts, createClientFromSettings, loadSettings, planListeners } =
      await import('../config/index.js');
    const { registerConsole } = await import('../console/server.js');
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
    const { url, token } = settings.api;
    // Reading pages needs no service: a URL without its token only turns adopting off, said once here.
    if (url !== undefined && token !== undefined)
      client = createClientFromSettings(settings, { baseUrl: url, token });
    else if (url !== undefined)
      logger.warn('TREASURY_API_URL is set without a token: adopting orders from the console is off');
    const ops = planListeners(settings).ops;
    const store = openConsoleStore(database, clock);
    // Before the console answers: a demo admin left on this database must not open it (README, Demo mode).
    await settleDemoAdmin(store, {
      command: 'console',
      demo: url === undefined,
      embedded: database.kind === 'pglite',
    });
    registerConsole(server, {
      database,
      store,
      clock,
      logger,
      ...(client ? { client } : {}),
      hosts: consoleHosts(settings, ops),
      reports: { timeZone: settings.reports.timezone },
      requireTotp: settings.console.requireTotp,
      ...(settings.console.oidc ? { oidc: settings.console.oidc } : {}),
      localLogin: settings.console.localLogin,
    });
    const { host, port } = ops;
    const bound = await listen(server, host, port);
    logger.info({ host, port: bound }, 'web console listening (no cycles run in this process)');
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
    await client?.close();
    await database?.close();
  }
}
