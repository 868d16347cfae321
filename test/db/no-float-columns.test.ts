import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonExactly } from '../../src/api/exact-json.js';
import { quoteSchema } from '../../src/api/schemas.js';
import { Decimal, toDecimalText } from '../../src/money.js';
import {
  createTestDatabase,
  type TestBackend,
  type TestDatabase,
  testBackends,
} from '../support/database.js';

/**
 * Issue 32, item 5: no column of the schema is a float. `quotes.expires_in` keeps the service's raw value as
 * received, digit for digit: a double would have turned 4.999999999999999999 into 5.
 */
describe.each(testBackends())('no float in the migrated schema (%s)', (backend: TestBackend) => {
  let test: TestDatabase;
  beforeAll(async () => {
    test = await createTestDatabase(backend);
  });
  afterAll(() => test.drop());

  it('has no real or double precision column', async () => {
    const floats = await test.database.withReservedConnection((connection) =>
      connection.query(
        `select table_name || '.' || column_name as "column", data_type from information_schema.columns
         where table_schema = 'public' and data_type in ('real', 'double precision')
         order by 1`,
      ),
    );
    expect(floats).toEqual([]);
  });

  it('keeps a quote expiresIn of 4.999999999999999999 exactly, from the wire to the row and back', async () => {
    const body = `{"symbol":"USDTBRL","price":"5.4","totalCost":"99.99","totalFilled":"18.516666",
      "quoteId":"EXACT0001","expiresIn":4.999999999999999999}`;
    const quote = quoteSchema.parse(parseJsonExactly(body));
    const now = new Date();
    const stored = await test.database.quotes.record(null, {
      quoteId: quote.quoteId,
      symbol: quote.symbol,
      amount: new Decimal('100'),
      price: quote.price,
      totalCost: quote.totalCost,
      totalFilled: quote.totalFilled,
      expiresIn: quote.expiresIn ?? null,
      requestedAt: now,
      receivedAt: now,
      deadlineAt: now,
    });
    const [row] = await test.database.withReservedConnection((connection) =>
      connection.query(`select expires_in::text as raw from quotes where id = ${Number(stored.id)}`),
    );
    expect(row!.raw).toBe('4.999999999999999999');
    expect(toDecimalText(stored.expiresIn!)).toBe('4.999999999999999999');
  });
});
