import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import { Decimal } from '../../src/money.js';
import { createReceiverServer, listen } from '../../src/observability/http-server.js';
import { registerReportRoutes } from '../../src/reports/index.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/** The report routes of the ops listener over HTTP, on a real listener (port 0), database and sandbox. */
describe('GET /api/reports/...', () => {
  let now = Date.parse('2026-05-04T12:00:00Z');
  let sandbox: RunningSandbox;
  let client: PurchaseClient;
  let test: TestDatabase;
  let app: ReturnType<typeof createReceiverServer>;
  let base: string;
  let orderId: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0, now: () => now });
    client = createPurchaseClient({ baseUrl: sandbox.url, token: DEMO_TOKEN, retry: { maxAttempts: 1 } });
    test = await createTestDatabase();
    const quote = await client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('250.00') });
    const order = await client.createOrder({ quoteId: quote.quoteId });
    orderId = order.id;
    await test.database.orders.recordExternal(order);
    now += 60_000;
    app = createReceiverServer();
    registerReportRoutes(app, { database: test.database, client, timeZone: 'America/Sao_Paulo' });
    base = `http://127.0.0.1:${await listen(app, '127.0.0.1', 0)}`;
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
    const report = (await response.json()) as {
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
    const rows = parse(await response.text(), { columns: true }) as Record<string, string>[];
    expect(rows.map((row) => [row.orderId, row.origin, row.amount])).toEqual([
      [orderId, 'external', '250.00'],
    ]);
  });

  it('answers the reconciliation, with its differences, as JSON', async () => {
    const response = await fetch(`${base}/api/reports/reconciliation?from=2026-05-01&to=2026-06-01`);
    expect(response.status).toBe(200);
    const result = (await response.json()) as {
      orders: unknown;
      agrees: boolean;
      differences: { kind: string }[];
    };
    expect(result.orders).toEqual({ ours: 1, service: 1, matched: 1 });
    // No balance snapshots were taken: the balance could not be checked, and the report says so.
    expect(result.agrees).toBe(false);
    expect(result.differences.map((d) => d.kind)).toEqual(['balance_unverified']);
  });

  it('refuses a bad argument with 400 naming it', async () => {
    const response = await fetch(`${base}/api/reports/summary?from=2026-05-01&to=2026-06-01&by=year`);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toBe(
      'by must be one of day, week, month, strategy (got "year")',
    );
    const zone = await fetch(`${base}/api/reports/orders?from=2026-05-01&to=2026-06-01&tz=Nowhere`);
    expect(zone.status).toBe(400);
  });
});
