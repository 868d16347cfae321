/**
 * Operator commands over the purchase-service client: quote, balance, orders, order, tracking, webhook.
 * Arguments are checked here before anything starts; any failure is one line on stderr and exit code 1.
 */
import type { Command } from 'commander';
import type { PurchaseClient } from '../api/index.js';
// The wire's value lists alone, eagerly: help names them, and the api index loads the HTTP client.
import { ORDER_STATUSES, WEBHOOK_EVENT_KINDS, type WebhookEventKind } from '../api/types.js';
import type { Settings } from '../config/index.js';
import {
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
}

/** Parses the arguments first (so a typo starts nothing), then runs against the service. */
async function runApiCommand<A>(parse: () => A, work: (session: ApiSession, args: A) => Promise<void>) {
  let secrets: string[] = [];
  try {
    const args = parse();
    await withApiSession(async (session) => {
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
    .action((symbol: string, amountText: string, flags: JsonFlag) =>
      runApiCommand(
        () => ({ symbol: parseSymbol(symbol), amount: parseAmount(amountText) }),
        async (session, args) => {
          const quote = await session.client.getQuote(args);
          printResult(flags.json, quote, () => renderRecord(quote), session.secrets);
        },
      ),
    );

  program
    .command('balance')
    .description('fiat and crypto balances and the credit limit')
    .option('--json', 'print one JSON document on stdout')
    .action((flags: JsonFlag) =>
      runApiCommand(
        () => undefined,
        async (session) => {
          const balance = await session.client.getBalance();
          printResult(flags.json, balance, () => renderRecord(balance), session.secrets);
        },
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
    .action(
      (
        flags: JsonFlag & Record<'status' | 'symbol' | 'from' | 'to' | 'limit' | 'page', string | undefined>,
      ) =>
        runApiCommand(
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
            const page = await session.client.listOrders(args);
            printResult(
              flags.json,
              page,
              () => [
                ...renderTable(
                  ['id', 'status', 'symbol', 'amount', 'price', 'timestamp', 'quoteId'],
                  page.data.map((o) =>
                    [o.id, o.status, o.symbol, o.amount, o.price, o.timestamp, o.quoteId].map(cell),
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
      .action((id: string, flags: JsonFlag) =>
        runApiCommand(
          () => id,
          async (session, orderId) => {
            const record =
              name === 'order'
                ? await session.client.getOrder(orderId)
                : await session.client.getTracking(orderId);
            printResult(flags.json, record, () => renderRecord(record), session.secrets);
          },
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
    .action((flags: JsonFlag) =>
      runApiCommand(
        () => undefined,
        async (session) => {
          const config = await session.client.getWebhookConfig();
          printResult(flags.json, config, () => configLines(config), session.secrets);
        },
      ),
    );

  webhook
    .command('set')
    .description('set the URL and switch one event kind on or off')
    .requiredOption('--url <url>', 'where the service posts events')
    .requiredOption('--event <kind>', WEBHOOK_EVENT_KINDS.join(' | '))
    .requiredOption('--active <bool>', 'true | false')
    .option('--json', 'print one JSON document on stdout')
    .action((flags: JsonFlag & { url: string; event: string; active: string }) =>
      runApiCommand(
        () => ({
          url: flags.url,
          methodId: parseChoice('--event', flags.event, WEBHOOK_EVENT_KINDS),
          active: parseChoice('--active', flags.active, ['true', 'false'] as const) === 'true',
        }),
        async (session, args) => {
          const config = await session.client.setWebhookConfig(args);
          printResult(flags.json, config, () => configLines(config), session.secrets);
        },
      ),
    );

  webhook
    .command('logs')
    .description('delivery attempts, newest first; of one event kind with --event')
    .option('--event <kind>', WEBHOOK_EVENT_KINDS.join(' | '))
    .option('--page <n>', 'page number from 1')
    .option('--limit <n>', 'entries per page (1 to 100 with --event; default 20)')
    .option('--json', 'print one JSON document on stdout')
    .action((flags: JsonFlag & { event?: string; page?: string; limit?: string }) =>
      runApiCommand(
        () => ({
          kind:
            flags.event === undefined
              ? undefined
              : (parseChoice('--event', flags.event, WEBHOOK_EVENT_KINDS) as WebhookEventKind),
          page: parseCount('--page', flags.page),
          limit: parseCount('--limit', flags.limit, flags.event === undefined ? 1_000 : 100),
        }),
        async (session, { kind, page, limit }) => {
          const logs =
            kind === undefined
              ? await session.client.getAllWebhookLogs({ page, pageSize: limit })
              : await session.client.getWebhookLogs(kind, { page, limit });
          printResult(
            flags.json,
            logs,
            () => [
              ...renderTable(
                ['createdAt', 'event', 'attempt', 'status', 'success', 'url'],
                logs.data.map((e) =>
                  [e.createdAt, e.methodId, e.attempt, e.statusCode, e.success, e.url].map(cell),
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

function configLines(config: { url: string; events: { methodId: string; active: boolean }[] }): string[] {
  const active = config.events.filter((event) => event.active).map((event) => event.methodId);
  return [`url     ${config.url || '-'}`, `active  ${active.length > 0 ? active.join(', ') : 'none'}`];
}

function pageLine(
  p: { page: number; totalPages: number; total: number },
  one: string,
  many = `${one}s`,
): string {
  return `page ${p.page} of ${Math.max(p.totalPages, 1)} (${p.total} ${p.total === 1 ? one : many})`;
}

/**
 * Opens a purchase-service client for one operator command: from the settings, or, when no service
 * address is configured, against the built-in sandbox started in this process (demo mode).
 */
export interface ApiSession {
  client: PurchaseClient;
  settings: Settings;
  /** Values that must not reach the terminal (token, webhook secret). */
  secrets: string[];
}

export async function withApiSession<T>(run: (session: ApiSession) => Promise<T>): Promise<T> {
  const { openService } = await import('../app.js');
  const { createClientFromSettings, loadSettings } = await import('../config/index.js');
  const settings = loadSettings({ env: process.env });
  const service = await openService(settings);
  if (service.demo) process.stderr.write(`treasury-bot: ${service.demo.notice}\n`);
  const client = createClientFromSettings(settings, { baseUrl: service.baseUrl, token: service.token });
  const secrets = [service.token, settings.webhook.secret].filter(
    (value): value is string => value !== undefined,
  );
  try {
    return await run({ client, settings, secrets });
  } finally {
    await client.close();
    await service.demo?.close();
  }
}
