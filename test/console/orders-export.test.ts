import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SettlementStatus } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { EXPORT_COLUMNS } from '../../src/reports/index.js';
import { type ConsoleClient, loggedIn, type RunningConsole, startTestConsole } from './support.js';

/**
 * The orders page's CSV download: every order its filters match (not just the page shown), in the ledger
 * format of `export orders`, to anyone who may read; a filter that is not one is refused, never widened.
 */
describe('console orders: CSV download', () => {
  let console: RunningConsole;
  let viewer: ConsoleClient;
  let slot = 0;

  /** An order of the strategy's, placed at the instant, in the settlement status given. */
  async function order(strategy: string, id: string, at: string, status: SettlementStatus) {
    const { database } = console.test;
    const cycle = await database.cycles.claimSlot({
      strategy,
      account: 'default',
      slot: new Date(Date.UTC(2026, 2, 1, 0, 0, slot++)),
      trigger: 'schedule',
      owner: 'test',
    });
    await database.cycles.transition(cycle!.id, 'claimed', 'submitting');
    await database.cycles.transition(cycle!.id, 'submitting', 'unsure');
    await database.orders.recordPlacedWithCycle(
      cycle!.id,
      {
        account: 'default',
        id,
        symbol: 'USDTBRL',
        amount: new Decimal('100'),
        price: new Decimal('5.4'),
        side: 'buy',
        timestamp: new Date(at),
        status,
      },
      { from: 'unsure', reasonCode: 'reconciled' },
    );
  }

  const rowsOf = (body: string) => parse(body, { columns: true }) as Record<string, string>[];

  beforeAll(async () => {
    console = await startTestConsole();
    await console.test.database.strategies.upsertSeen([
      { name: 'alpha', kind: 'dca', account: 'default', config: { name: 'alpha' }, hash: 'ha' },
      { name: 'beta', kind: 'dca', account: 'default', config: { name: 'beta' }, hash: 'hb' },
    ]);
    await order('alpha', 'A-MARCH-PENDING', '2026-03-02T10:00:00Z', 'pending');
    await order('alpha', 'A-MARCH-SETTLED', '2026-03-03T10:00:00Z', 'settled');
    await order('alpha', 'A-APRIL-SETTLED', '2026-04-03T10:00:00Z', 'settled');
    await order('beta', 'B-MARCH-SETTLED', '2026-03-04T10:00:00Z', 'settled');
    viewer = await loggedIn(console, 'viewer');
  }, 60_000);

  afterAll(async () => {
    await console?.close();
  });

  it('links the download with the filters the page shows', async () => {
    const page = await viewer.get('/orders?strategy=alpha&status=settled&from=2026-03-01');
    expect(page.body).toContain('href="/orders.csv?strategy=alpha&amp;status=settled&amp;from=2026-03-01"');
    expect((await viewer.get('/orders')).body).toContain('href="/orders.csv"');
  });

  it('downloads every order of the filters as the ledger CSV', async () => {
    const answer = await viewer.get(
      '/orders.csv?strategy=alpha&status=settled&from=2026-03-01&until=2026-04-01',
    );
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(answer.headers.get('content-disposition')).toBe('attachment; filename="orders.csv"');
    expect(answer.body.split('\r\n')[0]).toBe(EXPORT_COLUMNS.join(','));
    const rows = rowsOf(answer.body);
    expect(rows.map((row) => row.orderId)).toEqual(['A-MARCH-SETTLED']);
    expect(rows[0]).toMatchObject({
      strategy: 'alpha',
      amount: '100.00',
      price: '5.4000',
      status: 'settled',
    });
  });

  it('without filters downloads every order, oldest first; one strategy, or one state, narrows it', async () => {
    const ids = async (query: string) =>
      rowsOf((await viewer.get(`/orders.csv${query}`)).body).map((r) => r.orderId);
    expect(await ids('')).toEqual([
      'A-MARCH-PENDING',
      'A-MARCH-SETTLED',
      'B-MARCH-SETTLED',
      'A-APRIL-SETTLED',
    ]);
    expect(await ids('?strategy=beta')).toEqual(['B-MARCH-SETTLED']);
    expect(await ids('?status=pending')).toEqual(['A-MARCH-PENDING']);
    expect(await ids('?strategy=nobody')).toEqual([]);
  });

  it('refuses a filter that is not one, naming it, rather than downloading more', async () => {
    for (const [query, message] of [
      ['?from=yesterday', 'from: &quot;yesterday&quot; is not a date'],
      ['?status=lost', 'status: &quot;lost&quot; is not one of'],
      ['?from=2026-04-01&until=2026-03-01', 'from (2026-04-01) must be before until (2026-03-01)'],
    ] as const) {
      const answer = await viewer.get(`/orders.csv${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.body, query).toContain(message);
    }
  });

  it('sends a visitor without a session to the login page', async () => {
    const answer = await fetch(`${console.url}/orders.csv`, { redirect: 'manual' });
    expect(answer.status).toBe(303);
    expect(answer.headers.get('location')).toBe('/login');
  });
});
