import { Writable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionOf } from '../../src/db/database.js';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { exportOrders } from '../../src/reports/index.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';

/**
 * The export formats PostgreSQL's text of a UTC session by hand and any other session's through Date: both
 * must give the same ISO 8601 instants, whatever the fraction of a second (none, trailing zeros dropped by
 * PostgreSQL, all three digits).
 */

const PLACED = ['2026-05-01T12:00:00.000Z', '2026-05-02T23:59:59.120Z', '2026-05-03T00:00:00.007Z'];

async function exportedPlacedAt(test: TestDatabase): Promise<string[]> {
  const chunks: string[] = [];
  const out = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const range = { start: new Date('2026-05-01T00:00:00Z'), end: new Date('2026-06-01T00:00:00Z') };
  await exportOrders(test.database, range, out, { format: 'csv', scope: EVERY_ACCOUNT });
  const rows = parse(chunks.join(''), { columns: true }) as Record<string, string>[];
  return rows.map((row) => row.placedAt!);
}

describe.each(testBackends())('export timestamps on %s', (backend) => {
  let test: TestDatabase;

  beforeAll(async () => {
    // One connection, so that the session's time zone set below is the one the export reads through.
    test = await createTestDatabase(backend, { maxConnections: 1 });
    for (const [index, placed] of PLACED.entries()) {
      await test.database.orders.recordExternal({
        account: 'default',
        id: `ext-${index}`,
        symbol: 'USDTBRL',
        amount: new Decimal('100'),
        price: new Decimal('5.1'),
        side: 'BUY',
        timestamp: new Date(placed),
      });
    }
  });
  afterAll(() => test.drop());

  it('writes the same instants from a UTC session and from one in another zone', async () => {
    const { drizzle } = connectionOf(test.database);
    await drizzle.execute(sql`set timezone to 'UTC'`);
    expect(await exportedPlacedAt(test)).toEqual(PLACED);
    await drizzle.execute(sql`set timezone to 'America/Sao_Paulo'`);
    expect(await exportedPlacedAt(test)).toEqual(PLACED);
  });
});
