import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Decimal } from '../../src/money.js';
import { type DigestSettings, enqueueDueDigest } from '../../src/notify/digest.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/**
 * The digest at its local time, by a fake clock stepped a minute at a time through New York's clock
 * changes (2026-03-08 forward, 2026-11-01 back): written once per local date, at 18:00 local whatever the
 * offset, and at the first instant after the gap for a time the spring-forward night skips.
 */

let now = new Date('2026-03-06T00:00:00Z');
const clock = () => now;
let routeTo: string[] = [];
let test: TestDatabase;

beforeAll(async () => {
  test = await createTestDatabase(undefined, { clock, routeNotifications: () => routeTo });
});
afterAll(async () => {
  await test?.drop();
});

async function digestsWritten(digest: DigestSettings, from: string, to: string): Promise<string[]> {
  routeTo = digest.channels;
  const written: string[] = [];
  for (now = new Date(from); now < new Date(to); now = new Date(now.getTime() + 60_000)) {
    if (await enqueueDueDigest(test.database, digest, now)) written.push(now.toISOString());
  }
  return written;
}

async function digestRows(channel: string) {
  return (await test.database.notifications.listRecent(1000))
    .filter((row) => row.channel === channel)
    .reverse();
}

describe('daily digest', () => {
  it('is written at 18:00 local time each day across the spring-forward change', async () => {
    const digest = { at: '18:00', timezone: 'America/New_York', channels: ['digest-spring'] };
    const written = await digestsWritten(digest, '2026-03-06T12:00:00Z', '2026-03-10T12:00:00Z');
    expect(written).toEqual([
      '2026-03-06T23:00:00.000Z', // EST, UTC-5
      '2026-03-07T23:00:00.000Z',
      '2026-03-08T22:00:00.000Z', // EDT, UTC-4, from the first day of summer time
      '2026-03-09T22:00:00.000Z',
    ]);
    const rows = await digestRows('digest-spring');
    expect(rows.map((row) => row.data.date)).toEqual([
      '2026-03-06',
      '2026-03-07',
      '2026-03-08',
      '2026-03-09',
    ]);
    expect(rows.map((row) => row.occurredAt.toISOString())).toEqual(written);
    // The 8th's digest covers the 23 hours since the 7th's.
    expect(rows[2]!.data).toMatchObject({ from: '2026-03-07T23:00:00.000Z', to: '2026-03-08T22:00:00.000Z' });
  });

  it('runs a time the clocks skip once, at the end of the gap, and a repeated time once', async () => {
    const skipped = { at: '02:30', timezone: 'America/New_York', channels: ['digest-gap'] };
    expect(await digestsWritten(skipped, '2026-03-07T12:00:00Z', '2026-03-09T12:00:00Z')).toEqual([
      '2026-03-08T07:00:00.000Z', // 03:00 EDT, the first instant after 02:00 EST
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
    ]);
    const repeated = { at: '01:30', timezone: 'America/New_York', channels: ['digest-fall'] };
    expect(await digestsWritten(repeated, '2026-10-31T12:00:00Z', '2026-11-02T12:00:00Z')).toEqual([
      '2026-11-01T05:30:00.000Z', // the first 01:30 (EDT); not again an hour later (EST)
      '2026-11-02T06:30:00.000Z', // 01:30 EST
    ]);
  });

  it('is written once whoever looks, and not for a day whose time passed over an hour ago', async () => {
    const digest = { at: '18:00', timezone: 'UTC', channels: ['digest-once'] };
    routeTo = digest.channels;
    expect(await enqueueDueDigest(test.database, digest, new Date('2026-05-01T19:01:00Z'))).toBe(false);
    expect(await enqueueDueDigest(test.database, digest, new Date('2026-05-02T18:00:30Z'))).toBe(true);
    expect(await enqueueDueDigest(test.database, digest, new Date('2026-05-02T18:20:00Z'))).toBe(false);
    expect(await digestRows('digest-once')).toHaveLength(1);
  });

  it('sums the orders of the day per strategy with their average price, and counts what is open', async () => {
    const digest = { at: '18:00', timezone: 'UTC', channels: ['digest-figures'] };
    routeTo = digest.channels;
    now = new Date('2026-06-01T12:00:00Z');
    const order = (id: string, amount: string, price: string) =>
      test.database.orders.recordExternal({
        account: 'default',
        id,
        symbol: 'USDTBRL',
        amount: new Decimal(amount),
        price: new Decimal(price),
        side: 'BUY',
        timestamp: now,
        quoteId: null,
      });
    await order('DIGEST-1', '1000.00', '5.0000');
    await order('DIGEST-2', '3000.00', '6.0000');
    expect(await enqueueDueDigest(test.database, digest, new Date('2026-06-01T18:00:00Z'))).toBe(true);
    const [row] = await digestRows('digest-figures');
    expect(row!.data).toMatchObject({
      date: '2026-06-01',
      orders: 2,
      spent: '4000',
      // 4000 BRL for 200 + 500 USDT: 5.714285…, to four places.
      strategies: [{ strategy: 'external', orders: 2, spent: '4000', averagePrice: '5.7143' }],
      openOrders: 2,
    });
  });
});
