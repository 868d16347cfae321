import { Writable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import { hashPassword } from '../../src/console/passwords.js';
import { registerConsole } from '../../src/console/server.js';
import { openConsoleStore } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { createReceiverServer, listen } from '../../src/observability/http-server.js';
import { createLogger } from '../../src/observability/logger.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { ConsoleClient, PASSWORD, TEST_COST } from '../console/support.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/**
 * The report routes of the ops listener over HTTP, on a real listener (port 0), database and sandbox, in the
 * console's scope: a viewer's session reads the summary and the ledger, an operator's the reconciliation.
 */
describe('GET /api/reports/...', () => {
  let now = Date.parse('2026-05-04T12:00:00Z');
  let sandbox: RunningSandbox;
  let client: PurchaseClient;
  let test: TestDatabase;
  let app: ReturnType<typeof createReceiverServer>;
  let base: string;
  let orderId: string;
  let viewer: ConsoleClient;
  let operator: ConsoleClient;
  const fetch = (url: string) =>
    (url.includes('/reconciliation') ? operator : viewer).get(url.slice(base.length));

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0, now: () => now });
    client = createPurchaseClient({ baseUrl: sandbox.url, token: DEMO_TOKEN, retry: { maxAttempts: 1 } });
    test = await createTestDatabase();
    const quote = await client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('250.00') });
    const order = await client.createOrder({ quoteId: quote.quoteId });
    orderId = order.id;
    await test.database.orders.recordExternal({ ...order, account: 'default' });
    now += 60_000;
    app = createReceiverServer();
    const store = openConsoleStore(test.database, () => new Date(now));
    const passwordHash = await hashPassword(PASSWORD, TEST_COST);
    for (const role of ['viewer', 'operator'] as const)
      await store.people.add({ name: role, role, passwordHash }, 'test-setup');
    registerConsole(app, {
      database: test.database,
      store,
      clock: () => new Date(now),
      logger: createLogger({
        level: 'silent',
        destination: new Writable({ write: (_c, _e, done) => done() }),
      }),
      accounts: new Map([['default', { name: 'default', client }]]),
      reports: { timeZone: 'America/Sao_Paulo' },
    });
    base = `http://127.0.0.1:${await listen(app, '127.0.0.1', 0)}`;
    viewer = new ConsoleClient(base);
    operator = new ConsoleClient(base);
    expect((await viewer.login('viewer')).status).toBe(303);
    expect((await operator.login('operator')).status).toBe(303);
  });
  afterAll(async () => {
    await app?.close();
    await client?.close();
    await sandbox?.close();
    await test?.drop();
  });

  it('serves the summary as JSON with decimals as text, periods in the configured zone', async () => {
    const response = await fetch(`${base}/api/reports/summary?from=2026-05-01&to=2026-06-01&by=month`);
    expect(response.status).toBe(200);
    const report = JSON.parse(response.body) as {
      from: string;
      groups: unknown[];
      total: { orders: number; spent: string };
    };
    expect(report.from).toBe('2026-05-01T03:00:00.000Z');
    expect(report.groups).toHaveLength(1);
    expect(report.total.orders).toBe(1);
    expect(report.total.spent).toBe('250');
  });

  it('streams the orders as CSV', async () => {
    const response = await fetch(`${base}/api/reports/orders?from=2026-05-01&to=2026-06-01&format=csv`);
    expect(response.headers.get('content-type')).toContain('text/csv');
    const rows = parse(response.body, { columns: true }) as Record<string, string>[];
    expect(rows.map((row) => [row.orderId, row.origin, row.amount])).toEqual([
      [orderId, 'external', '250.00'],
    ]);
  });

  it('answers the reconciliation, with its differences, as JSON', async () => {
    const response = await fetch(`${base}/api/reports/reconciliation?from=2026-05-01&to=2026-06-01`);
    expect(response.status).toBe(200);
    const result = JSON.parse(response.body) as {
      agrees: boolean;
      accounts: { account: string; orders: unknown; differences: { account: string; kind: string }[] }[];
    };
    expect(result.accounts.map((one) => one.account)).toEqual(['default']);
    expect(result.accounts[0]!.orders).toEqual({ ours: 1, service: 1, matched: 1 });
    // No balance snapshots were taken: the balance could not be checked, and the report says so.
    expect(result.agrees).toBe(false);
    expect(result.accounts[0]!.differences.map((d) => [d.account, d.kind])).toEqual([
      ['default', 'balance_unverified'],
    ]);
  });

  it('refuses a bad argument with 400 naming it', async () => {
    const response = await fetch(`${base}/api/reports/summary?from=2026-05-01&to=2026-06-01&by=year`);
    expect(response.status).toBe(400);
    expect((JSON.parse(response.body) as { error: string }).error).toBe(
      'by must be one of day, week, month, strategy (got "year")',
    );
    const zone = await fetch(`${base}/api/reports/orders?from=2026-05-01&to=2026-06-01&tz=Nowhere`);
    expect(zone.status).toBe(400);
  });

  it('answers 401 as JSON without a session, and 403 to a role without the permission', async () => {
    const stranger = await new ConsoleClient(base).get('/api/reports/orders?from=2026-05-01&to=2026-06-01');
    expect(stranger.status).toBe(401);
    expect(JSON.parse(stranger.body)).toEqual({ error: 'log in first' });
    const refused = await viewer.get('/api/reports/reconciliation?from=2026-05-01&to=2026-06-01');
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).error).toContain('needs operate');
  });
});
