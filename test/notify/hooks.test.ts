import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NotificationRecord } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/**
 * The repositories write the news of a fact in the transaction of the fact: one outbox row per routed
 * channel, none when the write lost its compare-and-set, and one per period for what repeats every cycle.
 */

let test: TestDatabase;

beforeAll(async () => {
  test = await createTestDatabase(undefined, { routeNotifications: () => ['erp'] });
});
afterAll(async () => {
  await test?.drop();
});

let seen = 0;
/** The messages written since the last call, oldest first. */
async function newMessages(): Promise<NotificationRecord[]> {
  const all = (await test.database.notifications.listRecent(1000)).reverse();
  const fresh = all.slice(seen);
  seen = all.length;
  return fresh;
}

const slot = (minute: number) => new Date(Date.UTC(2026, 2, 2, 10, minute));

async function strategy(name: string) {
  await test.database.strategies.upsertSeen([
    { name, account: 'default', kind: 'dca', config: { amount: '100' }, hash: 'h' },
  ]);
}

async function claimed(name: string, minute: number) {
  const cycle = await test.database.cycles.claimSlot({
    account: 'default',
    strategy: name,
    slot: slot(minute),
    trigger: 'schedule',
    owner: 'r1',
  });
  return cycle!.id;
}

describe('events written with the facts they report', () => {
  it('kill switch: paused and resumed', async () => {
    await newMessages();
    await test.database.control.pause('bank holiday', 'ana');
    await test.database.control.resume('ana');
    const messages = await newMessages();
    expect(messages.map((m) => [m.type, m.subject, m.channel, m.data.paused])).toEqual([
      ['kill_switch', 'kill_switch', 'erp', true],
      ['kill_switch', 'kill_switch', 'erp', false],
    ]);
    expect(messages[0]!.data).toMatchObject({ reason: 'bank holiday', by: 'ana' });
  });

  it('failed and unsure cycles; a move that lost its compare-and-set writes nothing', async () => {
    await strategy('hook-cycles');
    const failing = await claimed('hook-cycles', 1);
    await test.database.cycles.transition(failing, 'claimed', 'failed', {
      errorCode: 'API_REJECTED',
      errorMessage: 'refused',
    });
    expect(await test.database.cycles.transition(failing, 'claimed', 'failed')).toBeNull();
    const unsure = await claimed('hook-cycles', 2);
    await test.database.cycles.transition(unsure, 'claimed', 'quoted');
    await test.database.cycles.transition(unsure, 'quoted', 'submitting');
    await test.database.cycles.transition(unsure, 'submitting', 'unsure', { errorCode: 'OUTCOME_UNKNOWN' });
    const messages = await newMessages();
    expect(messages.map((m) => [m.type, m.data.cycleId, m.data.errorCode])).toEqual([
      ['order_failed', failing, 'API_REJECTED'],
      ['cycle_unsure', unsure, 'OUTCOME_UNKNOWN'],
    ]);
  });

  it('a budget reached or a guard blocking is told once per period, not every cycle', async () => {
    await strategy('hook-budget');
    for (const [minute, reason] of [
      [3, 'budget_day_exceeded'],
      [4, 'budget_day_exceeded'],
      [5, 'credit_available_below_min'],
      [6, 'credit_available_below_min'],
      [7, 'price_above_max'],
    ] as const) {
      const id = await claimed('hook-budget', minute);
      await test.database.cycles.transition(id, 'claimed', 'skipped', { reasonCode: reason });
    }
    const messages = await newMessages();
    expect(messages.map((m) => [m.type, m.data.reason])).toEqual([
      ['budget_reached', 'budget_day_exceeded'],
      ['guard_blocked', 'credit_available_below_min'],
    ]);
  });

  it('an order placed, with its discrepancy and the halt it causes; settled; stuck', async () => {
    await strategy('hook-orders');
    const id = await claimed('hook-orders', 8);
    await test.database.cycles.transition(id, 'claimed', 'quoted');
    await test.database.cycles.transition(id, 'quoted', 'submitting');
    const { order } = await test.database.orders.recordPlacedWithCycle(
      id,
      {
        account: 'default',
        id: 'HOOK-ORD-1',
        symbol: 'USDTBRL',
        amount: new Decimal('100.00'),
        price: new Decimal('5.5000'),
        side: 'BUY',
        timestamp: new Date(),
        quoteId: 'QHOOK0001',
      },
      {
        from: 'submitting',
        reasonCode: 'placed',
        discrepancy: [{ field: 'price', expected: '5.4000', got: '5.5000' }],
      },
    );
    expect((await newMessages()).map((m) => [m.type, m.subject])).toEqual([
      ['order_placed', 'order:HOOK-ORD-1'],
      ['discrepancy', 'order:HOOK-ORD-1'],
      ['strategy_halted', 'strategy:hook-orders'],
    ]);

    await test.database.orders.markStuck(order.id);
    await test.database.orders.markStuck(order.id);
    const settled = {
      status: 'settled' as const,
      expectedAmount: new Decimal('18.18'),
      receivedAmount: new Decimal('18.18'),
      withdrawnAmount: new Decimal('18.18'),
      withdrawal: null,
    };
    await test.database.orders.applyTracking(order.id, settled, 'poll');
    await test.database.orders.applyTracking(order.id, settled, 'poll');
    const messages = await newMessages();
    expect(messages.map((m) => [m.type, m.data.orderId, m.data.status])).toEqual([
      ['settlement_stuck', 'HOOK-ORD-1', 'pending'],
      ['order_settled', 'HOOK-ORD-1', 'settled'],
    ]);
    expect(messages[1]!.data.withdrawnAmount).toBe('18.18');
  });

  it('a halted strategy once, however often it is halted while halted; a replica lost', async () => {
    await strategy('hook-halt');
    await test.database.strategies.halt('hook-halt', 'ambiguous candidates');
    await test.database.strategies.halt('hook-halt', 'again');
    await test.database.replicas.register({ id: 'hook-replica', host: 'h', pid: 1 });
    await test.database.replicas.forget(['hook-replica']);
    expect((await newMessages()).map((m) => [m.type, m.subject, m.data.reason ?? m.data.replica])).toEqual([
      ['strategy_halted', 'strategy:hook-halt', 'ambiguous candidates'],
      ['replica_lost', 'replica:hook-replica', 'hook-replica'],
    ]);
  });
});
