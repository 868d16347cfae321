/**
 * Operator commands over the purchase-service client: quote, balance, orders, order, tracking, webhook.
 * Arguments are checked here before anything starts; any failure is one line on stderr and exit code 1.
 * Each talks to one account's service with that account's token only: `--account NAME`, required when the
 * settings have several accounts; what it prints names the account.
 */
import type { Command } from 'commander';
import type { PurchaseClient } from '../api/index.js';
// The wire's value lists alone, eagerly: help names them, and the api index loads the HTTP client.
import { ORDER_STATUSES, WEBHOOK_EVENT_KINDS, type WebhookEventKind } from '../api/types.js';
import type { Settings } from '../config/index.js';
import {
  accountScope,
  CliArgumentError,
  cell,
  parseAmount,
  parseChoice,
  parseCount,
  parseInstant,
  parseSymbol,
  printErrorLine,
  printResult,
  renderRecord,
  renderTable,
} from './terminal.js';

interface JsonFlag {
  json?: boolean;
  account?: string;
}

/** Parses the arguments first (so a typo starts nothing), then runs against the account's service. */
async function runApiCommand<A>(
  flags: JsonFlag,
  parse: () => A,
  work: (session: ApiSession, args: A) => Promise<void>,
) {
  let secrets: string[] = [];
  try {
    const args = parse();
    await withApiSession(flags.account, async (session) => {
      secrets = session.secrets;
      await work(session, args);
    });
  } catch (error) {
    printErrorLine(error, secrets);
    // exitCode rather than exit(): stdout may be a pipe that has not been flushed yet.
    process.exitCode = 1;
  }
}

export function registerApiCommands(program: Command): void {
  program
    .command('quote')
    .description('ask the service for a quote (it is not used)')
    .argument('<symbol>', 'trading pair, e.g. USDTBRL')
    .argument('<amount>', 'fiat amount to spend, decimal text, e.g. 2500.00')
    .option('--json', 'print one JSON document on stdout')
    .option(...SERVICE_ACCOUNT_OPTION)
    .action((symbol: string, amountText: string, flags: JsonFlag) =>
      runApiCommand(
        flags,
        () => ({ symbol: parseSymbol(symbol), amount: parseAmount(amountText) }),
        async (session, args) => printRecord(flags, session, await session.client.getQuote(args)),
      ),
    );

  program
    .command('balance')
    .description('fiat and crypto balances and the credit limit')
    .option('--json', 'print one JSON document on stdout')
    .option(...SERVICE_ACCOUNT_OPTION)
    .action((flags: JsonFlag) =>
      runApiCommand(
        flags,
        () => undefined,
        async (session) => printRecord(flags, session, await session.client.getBalance()),
      ),
    );

  program
    .command('orders')
    .description('list orders, newest first')
    .option('--status <status>', `one of ${ORDER_STATUSES.join(', ')}`)
    .option('--symbol <symbol>', 'trading pair')
    .option('--from <iso>', 'created at or after (ISO 8601)')
    .option('--to <iso>', 'created at or before (ISO 8601)')
    .option('--limit <n>', 'orders per page (default 20)')
    .option('--page <n>', 'page number from 1')
    .option('--json', 'print one JSON document on stdout')
    .option(...SERVICE_ACCOUNT_OPTION)
    .action(
      (
        flags: JsonFlag & Record<'status' | 'symbol' | 'from' | 'to' | 'limit' | 'page', string | undefined>,
      ) =>
        runApiCommand(
          flags,
          () => ({
            status:
              flags.status === undefined ? undefined : parseChoice('--status', flags.status, ORDER_STATUSES),
            symbol: flags.symbol === undefined ? undefined : parseSymbol(flags.symbol),
            from: parseInstant('--from', flags.from),
            to: parseInstant('--to', flags.to),
            limit: parseCount('--limit', flags.limit, 1_000),
            page: parseCount('--page', flags.page),
          }),
          async (session, args) => {
            const page = withAccount(session.account, await session.client.listOrders(args));
            printResult(
              flags.json,
              page,
              () => [
                ...renderTable(
                  ['account', 'id', 'status', 'symbol', 'amount', 'price', 'timestamp', 'quoteId'],
                  page.data.map((o) =>
                    [o.account, o.id, o.status, o.symbol, o.amount, o.price, o.timestamp, o.quoteId].map(
                      cell,
                    ),
                  ),
                ),
                pageLine(page.pagination, 'order'),
              ],
              session.secrets,
            );
          },
        ),
    );

  for (const [name, description] of [
    ['order', 'one order with its status'],
    ['tracking', 'settlement and withdrawal of one order'],
  ] as const) {
    program
      .command(name)
      .description(description)
      .argument('<id>', 'order id')
      .option('--json', 'print one JSON document on stdout')
      .option(...SERVICE_ACCOUNT_OPTION)
      .action((id: string, flags: JsonFlag) =>
        runApiCommand(
          flags,
          () => id,
          async (session, orderId) =>
            printRecord(
              flags,
              session,
              name === 'order'
                ? await session.client.getOrder(orderId)
                : await session.client.getTracking(orderId),
            ),
        ),
      );
  }

  registerWebhookCommands(program);
}

function registerWebhookCommands(program: Command): void {
  const webhook = program
    .command('webhook')
    .description('webhook configuration and delivery logs at the service');
  webhook
    .command('get')
    .description('the configured URL and which event kinds are active')
    .option('--json', 'print one JSON document on stdout')
    .option(...SERVICE_ACCOUNT_OPTION)
    .action((flags: JsonFlag) =>
      runApiCommand(
        flags,
        () => undefined,
        async (session) => printConfig(flags, session, await session.client.getWebhookConfig()),
      ),
    );

  webhook
    .command('set')
    .description('set the URL and switch one event kind on or off')
    .requiredOption('--url <url>', 'where the service posts events')
    .requiredOption('--event <kind>', WEBHOOK_EVENT_KINDS.join(' | '))
    .requiredOption('--active <bool>', 'true | false')
    .option('--json', 'print one JSON document on stdout')
    .option(...SERVICE_ACCOUNT_OPTION)
    .action((flags: JsonFlag & { url: string; event: string; active: string }) =>
      runApiCommand(
        flags,
        () => ({
          url: flags.url,
          methodId: parseChoice('--event', flags.event, WEBHOOK_EVENT_KINDS),
          active: parseChoice('--active', flags.active, ['true', 'false'] as const) === 'true',
        }),
        async (session, args) => printConfig(flags, session, await session.client.setWebhookConfig(args)),
      ),
    );

  webhook
    .command('logs')
    .description('delivery attempts, newest first; of one event kind with --event')
    .option('--event <kind>', WEBHOOK_EVENT_KINDS.join(' | '))
    .option('--page <n>', 'page number from 1')
    .option('--limit <n>', 'entries per page (1 to 100 with --event; default 20)')
    .option('--json', 'print one JSON document on stdout')
    .option(...SERVICE_ACCOUNT_OPTION)
    .action((flags: JsonFlag & { event?: string; page?: string; limit?: string }) =>
      runApiCommand(
        flags,
        () => ({
          kind:
            flags.event === undefined
              ? undefined
              : (parseChoice('--event', flags.event, WEBHOOK_EVENT_KINDS) as WebhookEventKind),
          page: parseCount('--page', flags.page),
          limit: parseCount('--limit', flags.limit, flags.event === undefined ? 1_000 : 100),
        }),
        async (session, { kind, page, limit }) => {
          const logs = withAccount(
            session.account,
            kind === undefined
              ? await session.client.getAllWebhookLogs({ page, pageSize: limit })
              : await session.client.getWebhookLogs(kind, { page, limit }),
          );
          printResult(
            flags.json,
            logs,
            () => [
              ...renderTable(
                ['account', 'createdAt', 'event', 'attempt', 'status', 'success', 'url'],
                logs.data.map((e) =>
                  [e.account, e.createdAt, e.methodId, e.attempt, e.statusCode, e.success, e.url].map(cell),
                ),
              ),
              pageLine(logs.pagination, 'entry', 'entries'),
            ],
            session.secrets,
          );
        },
      ),
    );
}

/** `--account` of the helpers: which account's service; the only one's when the settings have one. */
const SERVICE_ACCOUNT_OPTION = [
  '--account <name>',
  'the account whose service to ask (required when the settings have several)',
] as const;

/** One record of the account's service, the account named first. */
function printRecord(flags: JsonFlag, session: ApiSession, record: object): void {
  const named = { account: session.account, ...record };
  printResult(flags.json, named, () => renderRecord(named), session.secrets);
}

/** A page of the account's service, each row naming the account. */
function withAccount<T extends object>(
  account: string,
  page: { data: T[]; pagination: { page: number; totalPages: number; total: number } },
) {
  return { ...page, data: page.data.map((row) => ({ account, ...row })) };
}

function printConfig(
  flags: JsonFlag,
  session: ApiSession,
  config: { url: string; events: { methodId: string; active: boolean }[] },
): void {
  const named = { account: session.account, ...config };
  const active = config.events.filter((event) => event.active).map((event) => event.methodId);
  printResult(
    flags.json,
    named,
    () => [
      `account  ${session.account}`,
      `url      ${config.url || '-'}`,
      `active   ${active.length > 0 ? active.join(', ') : 'none'}`,
    ],
    session.secrets,
  );
}

function pageLine(
  p: { page: number; totalPages: number; total: number },
  one: string,
  many = `${one}s`,
): string {
  return `page ${p.page} of ${Math.max(p.totalPages, 1)} (${p.total} ${p.total === 1 ? one : many})`;
}

/** One account's service as an operator command talks to it. */
export interface ApiSession {
  account: string;
  client: PurchaseClient;
  settings: Settings;
  /** Values that must not reach the terminal (every token and secret of the settings, the demo's tokens). */
  secrets: string[];
}

/**
 * Opens a purchase-service client of the account `--account` names (the only one's when the settings have
 * one) for one operator command: at the account's service with its token, or, when no account names a
 * service, at the built-in sandbox started in this process (demo mode).
 */
export async function withApiSession<T>(
  accountFlag: string | undefined,
  run: (session: ApiSession) => Promise<T>,
): Promise<T> {
  const { loadSettings } = await import('../config/index.js');
  const settings = loadSettings({ env: process.env });
  const account = await serviceAccount(accountFlag, settings);
  return withAccountClients(settings, [account], ([opened], secrets) =>
    run({ account, client: opened!.client, settings, secrets }),
  );
}

/** The one account a helper talks to: the named one, or the only one. */
async function serviceAccount(flag: string | undefined, settings: Settings): Promise<string> {
  const names = settings.accounts.map((account) => account.name);
  if (flag === undefined && names.length > 1) {
    throw new CliArgumentError(
      `--account is required: the settings have several accounts (${names.join(', ')})`,
    );
  }
  const scope = await accountScope(flag, settings);
  return scope.accounts?.[0] ?? names[0]!;
}

/**
 * A client of each named account, each with its own address and token only (never another account's),
 * closed with the demo's sandbox once `run` ends.
 */
export async function withAccountClients<T>(
  settings: Settings,
  names: readonly string[],
  run: (clients: { name: string; client: PurchaseClient }[], secrets: string[]) => Promise<T>,
): Promise<T> {
  const { openService, secretsOf } = await import('../app.js');
  const { createAccountClient } = await import('../config/index.js');
  const service = await openService(settings);
  if (service.demo) process.stderr.write(`treasury-bot: ${service.demo.notice}\n`);
  const clients = service.accounts
    .filter((address) => names.includes(address.settings.name))
    .map((address) => ({
      name: address.settings.name,
      client: createAccountClient(address.settings, { baseUrl: address.baseUrl, token: address.token }),
    }));
  const secrets = [...secretsOf(settings), ...service.accounts.map((address) => address.token)];
  try {
    return await run(clients, secrets);
  } finally {
    await Promise.all(clients.map(({ client }) => client.close()));
    await service.demo?.close();
  }
}
