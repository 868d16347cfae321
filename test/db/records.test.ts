import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/index.js';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';

describe.each(testBackends())('strategies, webhook events, balances and the kill switch on %s', (backend) => {
  let test: TestDatabase;
  let db: Database;
  let now = new Date('2026-03-02T10:00:00Z');

  beforeAll(async () => {
    test = await createTestDatabase(backend, { clock: () => now });
    db = test.database;
  });
  afterAll(() => test.drop());

  it('records strategies as seen, refreshes them, and halts until cleared', async () => {
    const firstSeen = now;
    await db.strategies.upsertSeen([
      {
        name: 'weekday-dca',
        account: 'default',
        kind: 'dca',
        config: { amount: '2500.00', maxPrice: '5.90' },
        hash: 'h1',
      },
      { name: 'dip-buyer', account: 'default', kind: 'threshold', config: { buyBelow: '5.30' }, hash: 'h2' },
    ]);
    now = new Date('2026-03-02T11:00:00Z');
    await db.strategies.upsertSeen([
      { name: 'weekday-dca', account: 'default', kind: 'dca', config: { amount: '3000.00' }, hash: 'h3' },
    ]);
    expect(await db.strategies.get('weekday-dca')).toEqual({
      name: 'weekday-dca',
      account: 'default',
      kind: 'dca',
      config: { amount: '3000.00' },
      hash: 'h3',
      firstSeenAt: firstSeen,
      lastSeenAt: now,
      haltedAt: null,
      haltReason: null,
    });

    const halted = await db.strategies.halt('dip-buyer', 'order attempt 17 could not be reconciled');
    expect(halted).toMatchObject({ haltedAt: now, haltReason: 'order attempt 17 could not be reconciled' });
    expect((await db.strategies.listHalted(EVERY_ACCOUNT)).map((strategy) => strategy.name)).toEqual([
      'dip-buyer',
    ]);
    const haltedAgain = await db.strategies.halt('dip-buyer', 'second reason');
    expect(haltedAgain!.haltReason).toBe('order attempt 17 could not be reconciled');
    expect(await db.strategies.clearHalt('dip-buyer')).toMatchObject({ haltedAt: null, haltReason: null });
    expect(await db.strategies.listHalted(EVERY_ACCOUNT)).toEqual([]);
    expect(await db.strategies.get('missing')).toBeNull();
    expect((await db.strategies.list()).map((strategy) => strategy.name)).toEqual([
      'dip-buyer',
      'weekday-dca',
    ]);
  });

  it('records more strategies at once than one statement may carry parameters for', async () => {
    // 6 parameters a row: 11,000 rows would pass PostgreSQL's 65,535 in a single statement.
    const many = Array.from({ length: 11_000 }, (_, i) => ({
      name: `bulk-${String(i).padStart(5, '0')}`,
      account: 'default',
      kind: 'dca',
      config: { amount: '100.00' },
      hash: `h${i}`,
    }));
    await db.strategies.upsertSeen(many);
    const names = (await db.strategies.list()).map((strategy) => strategy.name);
    expect(names.filter((name) => name.startsWith('bulk-'))).toHaveLength(11_000);
  });

  it('stores a webhook event once and tracks its processing', async () => {
    const event = {
      account: 'default',
      dedupeKey: 'order:ord-1:pending',
      kind: 'order',
      serviceOrderId: 'ord-1',
      payload: { event: 'order', data: { id: 'ord-1', price: new Decimal('5.43210'), amount: 2500 } },
      receivedAt: now,
    };
    expect(await db.webhookEvents.store(event)).toBe('stored');
    expect(await db.webhookEvents.store({ ...event, receivedAt: new Date() })).toBe('duplicate');
    // Deduplicated per account: the same content on another account's path is that account's event.
    expect(await db.webhookEvents.store({ ...event, account: 'north' })).toBe('stored');
    await db.webhookEvents.store({
      ...event,
      dedupeKey: 'deposit:1',
      kind: 'deposit_fiat',
      serviceOrderId: null,
    });

    const pending = await db.webhookEvents.listUnprocessed();
    expect(pending.map((stored) => [stored.account, stored.dedupeKey])).toEqual([
      ['default', 'order:ord-1:pending'],
      ['north', 'order:ord-1:pending'],
      ['default', 'deposit:1'],
    ]);
    expect(pending[0]).toMatchObject({
      status: 'pending',
      processedAt: null,
      payload: { event: 'order', data: { id: 'ord-1', price: '5.4321', amount: 2500 } },
    });

    await db.webhookEvents.markProcessed('default', 'order:ord-1:pending');
    await db.webhookEvents.markProcessed('default', 'deposit:1', 'unknown_order');
    // Marked for its account only.
    expect((await db.webhookEvents.listUnprocessed()).map((stored) => stored.account)).toEqual(['north']);
    expect(await db.webhookEvents.listToRetry('default', new Date(0))).toEqual([
      expect.objectContaining({ account: 'default', dedupeKey: 'deposit:1', status: 'unknown_order' }),
    ]);
    await db.webhookEvents.markProcessed('north', 'order:ord-1:pending');
    expect(await db.webhookEvents.listUnprocessed()).toEqual([]);
  });

  it('keeps balance snapshots exactly and returns the latest', async () => {
    expect(await db.balances.latest('default')).toBeNull();
    const balance = (takenAt: Date, available: string) => ({
      account: 'default',
      fiat: { currency: 'BRL', balance: new Decimal('1000000.01') },
      crypto: { currency: 'USDT', balance: new Decimal('12.345678901234567891') },
      credit: { total: new Decimal('500000'), used: new Decimal('1.5'), available: new Decimal(available) },
      canWithdraw: true,
      takenAt,
    });
    await db.balances.record(balance(new Date('2026-03-02T09:00:00Z'), '499998.5'));
    const latest = await db.balances.record(balance(new Date('2026-03-02T09:05:00Z'), '400000.25'));
    const read = await db.balances.latest('default');
    expect(read).toEqual(latest);
    expect(read).toMatchObject({ id: latest.id, canWithdraw: true, cycleId: null });
    expect(read!.credit.available.toFixed()).toBe('400000.25');
    expect(read!.crypto.balance.toFixed()).toBe('12.345678901234567891');
  });

  it('pauses and resumes every replica through one row', async () => {
    expect(await db.control.get()).toEqual({ paused: false, reason: null, changedAt: null, changedBy: null });
    await db.control.pause('bank holiday', 'alice');
    expect(await db.control.get()).toEqual({
      paused: true,
      reason: 'bank holiday',
      changedAt: now,
      changedBy: 'alice',
    });
    await db.control.pause(null, 'bob');
    expect(await db.control.get()).toMatchObject({ paused: true, reason: null, changedBy: 'bob' });
    await db.control.resume('carol');
    expect(await db.control.get()).toMatchObject({ paused: false, reason: null, changedBy: 'carol' });
  });
});
