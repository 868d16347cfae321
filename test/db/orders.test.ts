import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Database,
  EVERY_ACCOUNT,
  openDatabase,
  type ServiceOrder,
  type TrackingSnapshot,
} from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';

let serial = 0;
function serviceOrder(overrides: Partial<ServiceOrder> = {}): ServiceOrder {
  return {
    account: 'default',
    id: `ord-${++serial}-${Math.random().toString(36).slice(2, 8)}`,
    symbol: 'USDTBRL',
    amount: new Decimal('2500.00'),
    price: new Decimal('5.4321'),
    side: 'BUY',
    timestamp: new Date('2026-03-02T13:00:00.123Z'),
    quoteId: 'ABCD12345',
    ...overrides,
  };
}

function tracking(
  status: TrackingSnapshot['status'],
  received: string | null,
  withdrawn: string | null = null,
) {
  return {
    status,
    expectedAmount: new Decimal('460.234567890123456789'),
    receivedAmount: received === null ? null : new Decimal(received),
    withdrawnAmount: withdrawn === null ? null : new Decimal(withdrawn),
    withdrawal: withdrawn
      ? {
          type: 'crypto',
          status: 'done',
          amount: new Decimal(withdrawn),
          finishedAt: new Date('2026-03-02T14:00:00Z'),
        }
      : null,
  } satisfies TrackingSnapshot;
}

describe.each(testBackends())('orders and settlement on %s', (backend) => {
  let test: TestDatabase;
  let db: Database;
  let replica: Database;
  let cycleId: number;

  beforeAll(async () => {
    test = await createTestDatabase(backend);
    db = test.database;
    replica = test.url ? await openDatabase({ url: test.url, maxConnections: 5 }) : db;
    await db.strategies.upsertSeen([{ name: 'dca', account: 'default', kind: 'dca', config: {}, hash: 'h' }]);
    const cycle = await db.cycles.claimSlot({
      account: 'default',
      strategy: 'dca',
      slot: new Date(),
      trigger: 'once',
      owner: 'r1',
    });
    cycleId = cycle!.id;
  });
  afterAll(async () => {
    if (replica !== db) await replica.close();
    await test.drop();
  });

  it('records a placed order once, with its creation in the history', async () => {
    const placed = serviceOrder();
    const order = await db.orders.recordPlaced(cycleId, placed);
    expect(order).toMatchObject({
      serviceOrderId: placed.id,
      cycleId,
      origin: 'cycle',
      status: 'pending',
      quoteId: 'ABCD12345',
      serviceTimestamp: placed.timestamp,
      settledAt: null,
    });
    expect(order.price.toFixed()).toBe('5.4321');

    const again = await replica.orders.recordPlaced(cycleId, placed);
    expect(again.id).toBe(order.id);
    expect(await db.orders.getByServiceId('default', placed.id)).toMatchObject({ id: order.id });
    expect(await db.orders.forCycle(cycleId)).toMatchObject({ id: order.id });
    const history = await db.orders.history(order.id);
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ source: 'create', fromStatus: null, toStatus: 'pending' });
  });

  describe('recordPlacedWithCycle', () => {
    let slotSeconds = 0;
    async function submittingCycle(): Promise<number> {
      const cycle = await db.cycles.claimSlot({
        account: 'default',
        strategy: 'dca',
        slot: new Date(Date.UTC(2026, 0, 1, 0, 0, ++slotSeconds)),
        trigger: 'once',
        owner: 'r1',
      });
      await db.cycles.transition(cycle!.id, 'claimed', 'submitting');
      return cycle!.id;
    }

    it('records the order, its creation and the move to placed together', async () => {
      const id = await submittingCycle();
      const placed = serviceOrder();
      const { order, cycle } = await db.orders.recordPlacedWithCycle(id, placed, {
        from: 'submitting',
        reasonCode: 'ok',
      });
      expect(order).toMatchObject({
        serviceOrderId: placed.id,
        cycleId: id,
        origin: 'cycle',
        status: 'pending',
      });
      expect(order.amount.toFixed(2)).toBe('2500.00');
      expect(order.price.toFixed()).toBe('5.4321');
      expect(order.settledAt).toBeNull();
      expect(cycle).toMatchObject({ id, state: 'placed', serviceOrderId: placed.id, reasonCode: 'ok' });
      expect(cycle!.finishedAt).toBeInstanceOf(Date);
      // The order answered is composed from the values written: it must be the row the database holds.
      expect(order).toEqual(await db.orders.get(order.id));
      expect(cycle).toEqual(await db.cycles.get(id));
      expect(await db.cycles.get(id)).toMatchObject({ state: 'placed', serviceOrderId: placed.id });
      expect(await db.orders.history(order.id)).toEqual([
        expect.objectContaining({ source: 'create', fromStatus: null, toStatus: 'pending' }),
      ]);
    });

    it('answers the row the database holds for an order settled at once and one without a quoteId', async () => {
      const id = await submittingCycle();
      const placed = serviceOrder({
        status: 'settled',
        quoteId: null,
        amount: new Decimal('0.000000000000000001'),
      });
      const { order } = await db.orders.recordPlacedWithCycle(
        id,
        placed,
        { from: 'submitting', reasonCode: 'ok' },
        { nextCheckAt: new Date('2026-03-02T13:05:00.250Z'), source: 'reconcile' },
      );
      expect(order).toMatchObject({ status: 'settled', quoteId: null });
      expect(order.settledAt).toBeInstanceOf(Date);
      expect(order).toEqual(await db.orders.get(order.id));
      expect(await db.orders.history(order.id)).toEqual([
        expect.objectContaining({ source: 'reconcile', fromStatus: null, toStatus: 'settled' }),
      ]);
    });

    it('keeps the order when the cycle was moved meanwhile, and leaves the cycle as it is', async () => {
      const id = await submittingCycle();
      await db.cycles.transition(id, 'submitting', 'unsure', { reasonCode: 'outcome_unknown' });
      const placed = serviceOrder();
      const { order, cycle } = await db.orders.recordPlacedWithCycle(id, placed, {
        from: 'submitting',
        reasonCode: 'ok',
      });
      expect(cycle).toBeNull();
      expect(order).toMatchObject({ serviceOrderId: placed.id, cycleId: id });
      expect(await db.cycles.get(id)).toMatchObject({ state: 'unsure', serviceOrderId: null });
      expect(await db.orders.history(order.id)).toHaveLength(1);
    });

    it('adopts an order the external scan recorded first, with one creation row', async () => {
      const id = await submittingCycle();
      const placed = serviceOrder();
      const external = await db.orders.recordExternal({ ...placed, quoteId: null });
      const { order, cycle } = await db.orders.recordPlacedWithCycle(id, placed, {
        from: 'submitting',
        reasonCode: 'ok',
      });
      expect(order).toMatchObject({ id: external.id, cycleId: id, origin: 'cycle', quoteId: placed.quoteId });
      expect(cycle).toMatchObject({ state: 'placed', serviceOrderId: placed.id });
      expect(await db.orders.history(order.id)).toHaveLength(1);
    });

    it('does not take an order another cycle owns', async () => {
      const owner = await submittingCycle();
      const other = await submittingCycle();
      const placed = serviceOrder();
      await db.orders.recordPlacedWithCycle(owner, placed, { from: 'submitting', reasonCode: 'ok' });
      const { order, cycle } = await db.orders.recordPlacedWithCycle(other, placed, {
        from: 'submitting',
        reasonCode: 'ok',
      });
      expect(cycle).toBeNull();
      expect(order.cycleId).toBe(owner);
      expect(await db.cycles.get(other)).toMatchObject({ state: 'submitting' });
    });

    it('records a settled order found by reconciliation as settled, with a reconcile row', async () => {
      const id = await submittingCycle();
      await db.cycles.transition(id, 'submitting', 'unsure', { reasonCode: 'outcome_unknown' });
      const { order, cycle } = await db.orders.recordPlacedWithCycle(
        id,
        serviceOrder({ status: 'settled' }),
        { from: 'unsure', reasonCode: 'reconciled' },
        { source: 'reconcile' },
      );
      expect(cycle).toMatchObject({ state: 'placed', reasonCode: 'reconciled' });
      expect(order.status).toBe('settled');
      expect(order.settledAt).toBeInstanceOf(Date);
      expect(await db.orders.history(order.id)).toEqual([
        expect.objectContaining({ source: 'reconcile', fromStatus: null, toStatus: 'settled' }),
      ]);
    });
  });

  it('records external orders found at the service, with their current status', async () => {
    const order = await db.orders.recordExternal(serviceOrder({ status: 'settled', quoteId: null }));
    expect(order).toMatchObject({ origin: 'external', cycleId: null, status: 'settled', quoteId: null });
    expect(order.settledAt).toBeInstanceOf(Date);
    expect((await db.orders.listOpen(EVERY_ACCOUNT)).some((open) => open.id === order.id)).toBe(false);
  });

  it('writes each settlement change with the order state, and nothing for a report that changed nothing', async () => {
    const order = await db.orders.recordPlaced(cycleId, serviceOrder());
    const nextCheckAt = new Date(Date.now() + 30_000);

    const partial = await db.orders.applyTracking(order, tracking('partial', '100.5'), 'poll', {
      nextCheckAt,
    });
    expect(partial.order).toMatchObject({ status: 'partial', nextCheckAt, leaseOwner: null });
    expect(partial.order.receivedAmount!.toFixed()).toBe('100.5');
    expect(partial.event).toMatchObject({
      source: 'poll',
      fromStatus: 'pending',
      toStatus: 'partial',
      anomaly: null,
    });

    const same = await db.orders.applyTracking(order.id, tracking('partial', '100.5'), 'poll');
    expect(same.event).toBeNull();
    expect(same.order.lastProgressAt).toEqual(partial.order.lastProgressAt);

    const settled = await db.orders.applyTracking(
      order.id,
      tracking('settled', '460.234567890123456789', '460.234567890123456789'),
      'webhook',
    );
    expect(settled.order.status).toBe('settled');
    expect(settled.order.settledAt).toBeInstanceOf(Date);
    expect(settled.order.withdrawnAmount!.toFixed()).toBe('460.234567890123456789');
    expect(settled.event!.withdrawal).toEqual({
      type: 'crypto',
      status: 'done',
      amount: '460.234567890123456789',
      finishedAt: '2026-03-02T14:00:00.000Z',
    });

    const history = await db.orders.history(order.id);
    expect(history.map((event) => [event.source, event.fromStatus, event.toStatus])).toEqual([
      ['create', null, 'pending'],
      ['poll', 'pending', 'partial'],
      ['webhook', 'partial', 'settled'],
    ]);
  });

  it('keeps the furthest status and records an anomaly when a report goes backwards', async () => {
    const order = await db.orders.recordPlaced(cycleId, serviceOrder());
    await db.orders.applyTracking(order, tracking('paid', '460.234567890123456789'), 'poll');
    const back = await db.orders.applyTracking(order, tracking('pending', '0'), 'reconcile');
    expect(back.order.status).toBe('paid');
    expect(back.event).toMatchObject({ fromStatus: 'paid', toStatus: 'pending' });
    expect(back.event!.anomaly).toContain('status went back from paid to pending');
    expect(back.event!.anomaly).toContain('receivedAmount decreased');
  });

  it('writes nothing when the history row cannot be written (one transaction)', async () => {
    const order = await db.orders.recordPlaced(cycleId, serviceOrder());
    // An unknown status passes TypeScript here on purpose: the CHECK constraint rejects the history row.
    const broken = { ...tracking('paid', '1'), status: 'lost' } as unknown as TrackingSnapshot;
    await expect(db.orders.applyTracking(order, broken, 'poll')).rejects.toThrow();
    expect(await db.orders.get(order.id)).toMatchObject({ status: 'pending', receivedAmount: null });
    expect(await db.orders.history(order.id)).toHaveLength(1);
  });

  it('splits due orders between two trackers without overlap, and leases them', async () => {
    const now = new Date();
    const due = [];
    for (let i = 0; i < 24; i++)
      due.push(await db.orders.recordPlaced(cycleId, serviceOrder(), { nextCheckAt: now }));
    const later = await db.orders.recordPlaced(cycleId, serviceOrder(), {
      nextCheckAt: new Date(now.getTime() + 60_000),
    });
    const ids = due.map((order) => order.id);
    const mine = (list: { id: number }[]) => list.map((order) => order.id).filter((id) => ids.includes(id));

    const [a, b] = await Promise.all([
      db.orders.claimDue('default', 'tracker-a', now, 30_000, 40),
      replica.orders.claimDue('default', 'tracker-b', now, 30_000, 40),
    ]);
    expect(mine(a).filter((id) => mine(b).includes(id))).toEqual([]);
    expect([...mine(a), ...mine(b)].sort((x, y) => x - y)).toEqual(ids);
    expect([...a, ...b].some((order) => order.id === later.id)).toBe(false);

    expect(
      mine(await db.orders.claimDue('default', 'tracker-c', new Date(now.getTime() + 29_000), 30_000, 100)),
    ).toEqual([]);
    // Applying a report or rescheduling releases the lease; an expired lease frees the rest.
    await db.orders.reschedule(ids[0]!, now);
    const freed = await db.orders.claimDue(
      'default',
      'tracker-c',
      new Date(now.getTime() + 29_000),
      30_000,
      100,
    );
    expect(mine(freed)).toEqual([ids[0]]);
    // Another account's tracker leases none of them.
    expect(
      await db.orders.claimDue('elsewhere', 'tracker-d', new Date(now.getTime() + 31_000), 30_000, 100),
    ).toEqual([]);
    const expired = await db.orders.claimDue(
      'default',
      'tracker-c',
      new Date(now.getTime() + 31_000),
      30_000,
      100,
    );
    expect(mine(expired)).toHaveLength(23);
  });

  it('flags a stuck order until progress is seen again', async () => {
    const order = await db.orders.recordPlaced(cycleId, serviceOrder());
    const flaggedAt = new Date('2026-03-02T18:00:00Z');
    expect((await db.orders.markStuck(order.id, flaggedAt))!.stuckFlaggedAt).toEqual(flaggedAt);
    expect((await db.orders.markStuck(order.id, new Date()))!.stuckFlaggedAt).toEqual(flaggedAt);
    const progressed = await db.orders.applyTracking(order, tracking('partial', '1'), 'poll');
    expect(progressed.order.stuckFlaggedAt).toBeNull();
  });
});
