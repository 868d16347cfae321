import { Writable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { buildReport, exportOrders, periodsOf } from '../../src/reports/index.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';

/** Collects what the export writes, honouring backpressure like a file would. */
function sink(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    highWaterMark: 64,
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      setImmediate(done);
    },
  });
  return { stream, text: () => chunks.join('') };
}

describe('the days of a zone with a DST change', () => {
  it('cuts São Paulo days at local midnight, including the day whose midnight the clock skipped', () => {
    // 2018-11-04: Brazil's clocks went from 00:00 to 01:00, so that day began at 01:00 local (03:00Z).
    const days = periodsOf(
      { start: new Date('2018-11-03T03:00:00Z'), end: new Date('2018-11-06T02:00:00Z') },
      'day',
      'America/Sao_Paulo',
    );
    expect(days.map((day) => [day.label, day.start.toISOString(), day.end.toISOString()])).toEqual([
      ['2018-11-03', '2018-11-03T03:00:00.000Z', '2018-11-04T03:00:00.000Z'],
      ['2018-11-04', '2018-11-04T03:00:00.000Z', '2018-11-05T02:00:00.000Z'],
      ['2018-11-05', '2018-11-05T02:00:00.000Z', '2018-11-06T02:00:00.000Z'],
    ]);
  });

  it('starts weeks on Monday and cuts months at the range', () => {
    const range = { start: new Date('2026-03-04T00:00:00Z'), end: new Date('2026-04-15T00:00:00Z') };
    expect(periodsOf(range, 'week', 'UTC').map((week) => week.label)).toEqual([
      '2026-03-04',
      '2026-03-09',
      '2026-03-16',
      '2026-03-23',
      '2026-03-30',
      '2026-04-06',
      '2026-04-13',
    ]);
    expect(periodsOf(range, 'month', 'UTC').map((month) => [month.label, month.end.toISOString()])).toEqual([
      ['2026-03', '2026-04-01T00:00:00.000Z'],
      ['2026-04', '2026-04-15T00:00:00.000Z'],
    ]);
  });
});

describe.each(testBackends())('report queries on %s', (backend) => {
  let test: TestDatabase;
  const range = { start: new Date('2026-05-01T00:00:00Z'), end: new Date('2026-06-01T00:00:00Z') };

  beforeAll(async () => {
    test = await createTestDatabase(backend);
    for (let index = 0; index < 5; index++) {
      await test.database.orders.recordExternal({
        account: 'default',
        id: `ext-${index}`,
        symbol: 'USDTBRL',
        amount: new Decimal('100'),
        price: new Decimal(`5.${index}`),
        side: 'BUY',
        timestamp: new Date(Date.UTC(2026, 4, 1 + index * 7, 12)),
      });
    }
  });
  afterAll(() => test.drop());

  it('sums per week and streams every order in pages, in placed-at order', async () => {
    const report = await buildReport(test.database, EVERY_ACCOUNT, range, 'week', 'UTC');
    expect(report.total.orders).toBe(5);
    expect(report.total.spent.toFixed()).toBe('500');
    expect(report.total.lowestPrice?.toFixed()).toBe('5');
    expect(report.total.highestPrice?.toFixed()).toBe('5.4');
    expect(report.total.ordersWithoutQuantity).toBe(5);
    expect(report.total.averageCost).toBeNull();
    expect(report.groups.filter((group) => group.orders > 0).map((group) => group.group)).toEqual([
      '2026-05-01',
      '2026-05-04',
      '2026-05-11',
      '2026-05-18',
      '2026-05-25',
    ]);

    const out = sink();
    const count = await exportOrders(test.database, range, out.stream, {
      format: 'csv',
      pageSize: 2,
      scope: EVERY_ACCOUNT,
    });
    expect(count).toBe(5);
    const rows = parse(out.text(), { columns: true }) as Record<string, string>[];
    expect(rows.map((row) => [row.orderId, row.amount, row.price])).toEqual([
      ['ext-0', '100.00', '5.0000'],
      ['ext-1', '100.00', '5.1000'],
      ['ext-2', '100.00', '5.2000'],
      ['ext-3', '100.00', '5.3000'],
      ['ext-4', '100.00', '5.4000'],
    ]);
  });
});
