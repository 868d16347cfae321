import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPurchaseClient } from '../../src/api/index.js';
import { Maintenance, reconcileUnsureCycles } from '../../src/engine/index.js';
import { DEMO_TOKEN } from '../../src/sandbox/index.js';
import {
  type EngineBench,
  engineSettings,
  metricValue,
  onClient,
  startEngineBench,
  strategy,
} from './support/harness.js';
import { startListingService } from './support/listing-service.js';
import { listedOrder, recordUnsureCycle } from './support/unsure-cycle.js';

const later = (ms: number) => new Date(Date.now() + ms);

describe('reconciliation of unsure cycles', () => {
  let bench: EngineBench;
  beforeAll(async () => {
    bench = await startEngineBench();
  });
  afterAll(() => bench.close());
  beforeEach(() => bench.sandbox.setFaults({}));

  async function unsureCycle(name: string, fault: 'acceptThenDropRate' | 'resetRate') {
    bench.sandbox.setFaults({ createOrder: { [fault]: 1 } });
    const report = await bench.run(strategy({ name }));
    bench.sandbox.setFaults({});
    expect(report.outcome).toBe('unsure');
    return (await bench.database.cycles.getBySlot(name, new Date(report.slot)))!;
  }

  it('adopts the order the service accepted before the connection dropped (cycle placed, order recorded)', async () => {
    const cycle = await unsureCycle('dropped-answer', 'acceptThenDropRate');
    const atService = bench.sandbox.ledger().find((order) => order.quoteId === cycle.quoteId)!;

    const result = await reconcileUnsureCycles(bench.inAccount(), new Date());
    expect(result).toMatchObject({ examined: 1, adopted: 1 });
    const after = await bench.database.cycles.get(cycle.id);
    expect(after).toMatchObject({ state: 'placed', reasonCode: 'reconciled', serviceOrderId: atService.id });
    const order = await bench.database.orders.getByServiceId('default', atService.id);
    expect(order).toMatchObject({ cycleId: cycle.id, origin: 'cycle', quoteId: cycle.quoteId });
    expect((await bench.database.orders.history(order!.id))[0]!.source).toBe('reconcile');
    expect(await metricValue(bench.metrics, 'treasury_reconciled_cycles_total', { result: 'adopted' })).toBe(
      1,
    );
    // Nothing was sent again: one order for that quote.
    expect(bench.sandbox.ledger().filter((entry) => entry.quoteId === cycle.quoteId)).toHaveLength(1);
  });

  it('waits within the visibility window, then proves the order absent (not_placed)', async () => {
    const cycle = await unsureCycle('reset-before-answer', 'resetRate');
    expect(bench.sandbox.ledger().some((order) => order.quoteId === cycle.quoteId)).toBe(false);

    expect(await reconcileUnsureCycles(bench.inAccount(), new Date())).toMatchObject({
      examined: 1,
      waiting: 1,
    });
    expect((await bench.database.cycles.get(cycle.id))!.state).toBe('unsure');

    const { quoteWindowMs, reconcile } = bench.context.settings;
    const past = later(quoteWindowMs + reconcile.visibilityLagMs + reconcile.leaseMs + 1_000);
    expect(await reconcileUnsureCycles(bench.inAccount(), past)).toMatchObject({ examined: 1, notPlaced: 1 });
    expect(await bench.database.cycles.get(cycle.id)).toMatchObject({
      state: 'not_placed',
      reasonCode: 'not_found_at_service',
    });
  });

  it('splits unsure cycles between replicas: a leased cycle is not examined twice', async () => {
    await unsureCycle('leased', 'acceptThenDropRate');
    const other = { ...bench.inAccount(), replicaId: 'other-replica' };
    const [mine, theirs] = await Promise.all([
      reconcileUnsureCycles(bench.inAccount(), new Date()),
      reconcileUnsureCycles(other, new Date()),
    ]);
    expect(mine.examined + theirs.examined).toBe(1);
    expect(mine.adopted + theirs.adopted).toBe(1);
  });

  it('lets a cycle adopt an order the external scan recorded first', async () => {
    const cycle = await unsureCycle('scanned-first', 'acceptThenDropRate');
    const atService = bench.sandbox.ledger().find((order) => order.quoteId === cycle.quoteId)!;
    const listed = await bench.client.listOrders({ limit: 100 });
    const item = listed.data.find((order) => order.id === atService.id)!;
    await bench.database.orders.recordExternal({
      account: 'default',
      ...item,
      quoteId: item.quoteId ?? null,
    });

    expect(await reconcileUnsureCycles(bench.inAccount(), new Date())).toMatchObject({ adopted: 1 });
    expect(await bench.database.orders.getByServiceId('default', atService.id)).toMatchObject({
      cycleId: cycle.id,
      origin: 'cycle',
    });
  });

  it('records orders no cycle placed as external, and leaves unsure cycles’ orders to reconciliation', async () => {
    const quote = await bench.client.getQuote({ symbol: 'USDTBRL', amount: strategy().amount });
    const manual = await bench.client.createOrder({ quoteId: quote.quoteId });
    const cycle = await unsureCycle('still-unsure', 'acceptThenDropRate');
    const context = { ...bench.context, settings: engineSettings({ reconcile: { visibilityLagMs: 0 } }) };
    const maintenance = new Maintenance(context);
    // Reconciliation runs first in a pass; keep this cycle unsure by holding its lease elsewhere.
    await bench.database.cycles.claimUnsure('default', 'someone-else', 60_000, 100);

    const report = await maintenance.runOnce(later(1_000));
    expect(report.errors).toEqual([]);
    expect(await bench.database.orders.getByServiceId('default', manual.id)).toMatchObject({
      origin: 'external',
      cycleId: null,
    });
    const cycleOrder = bench.sandbox.ledger().find((order) => order.quoteId === cycle.quoteId)!;
    expect(await bench.database.orders.getByServiceId('default', cycleOrder.id)).toBeNull();
    expect(await metricValue(bench.metrics, 'treasury_external_orders_total')).toBeGreaterThanOrEqual(1);
    expect(await metricValue(bench.metrics, 'treasury_unsure_cycles')).toBe(1);
  });
});

describe('ownership by quoteId when the service reports other figures', () => {
  let bench: EngineBench;
  beforeAll(async () => {
    bench = await startEngineBench();
  });
  afterAll(() => bench.close());
  beforeEach(() => bench.sandbox.setFaults({}));

  it.each([
    ['price', { driftFigure: 'price' }],
    ['amount', { driftFigure: 'amount' }],
  ] as const)(
    'adopts a dropped order listed with another %s, records the discrepancy, halts the strategy, books nothing external',
    async (field, listingFault) => {
      const name = `drift-${field}`;
      bench.sandbox.setFaults({ createOrder: { acceptThenDropRate: 1 } });
      const report = await bench.run(strategy({ name }));
      expect(report.outcome).toBe('unsure');
      const cycle = (await bench.database.cycles.getBySlot(name, new Date(report.slot)))!;
      const atService = bench.sandbox.ledger().find((order) => order.quoteId === cycle.quoteId)!;
      bench.sandbox.setFaults({ listOrders: listingFault, getOrder: listingFault });

      // Past the visibility window: on the first release the order was "absent" here (not_placed).
      const { quoteWindowMs, reconcile } = bench.context.settings;
      const past = later(quoteWindowMs + reconcile.visibilityLagMs + 1_000);
      const context = { ...bench.context, settings: engineSettings({ reconcile: { visibilityLagMs: 0 } }) };
      await new Maintenance(context).runOnce(past);

      const after = (await bench.database.cycles.get(cycle.id))!;
      expect(after).toMatchObject({
        state: 'placed',
        reasonCode: 'reconciled',
        serviceOrderId: atService.id,
      });
      expect(after.discrepancy).toHaveLength(1);
      expect(after.discrepancy![0]).toMatchObject({ field });
      expect(await bench.database.orders.getByServiceId('default', atService.id)).toMatchObject({
        cycleId: cycle.id,
        origin: 'cycle',
      });
      expect((await bench.database.strategies.get(name))!.haltReason).toContain(atService.id);
      expect(await metricValue(bench.metrics, 'treasury_order_discrepancies_total')).toBeGreaterThanOrEqual(
        1,
      );
      expect(await metricValue(bench.metrics, 'treasury_external_orders_total')).toBe(0);
    },
  );

  it('without quoteIds in the listing, confirms a candidate within tolerance by its detail before adopting it', async () => {
    const name = 'no-quote-ids';
    bench.sandbox.setFaults({ createOrder: { acceptThenDropRate: 1 } });
    const report = await bench.run(strategy({ name }));
    const cycle = (await bench.database.cycles.getBySlot(name, new Date(report.slot)))!;
    const atService = bench.sandbox.ledger().find((order) => order.quoteId === cycle.quoteId)!;
    bench.sandbox.setFaults({ listOrders: { omitQuoteId: true, driftFigure: 'price' } });

    expect(await reconcileUnsureCycles(bench.inAccount(), new Date())).toMatchObject({ adopted: 1 });
    expect(await bench.database.cycles.get(cycle.id)).toMatchObject({
      state: 'placed',
      serviceOrderId: atService.id,
      discrepancy: null,
    });
  });

  it('never books as external an order whose quoteId belongs to a cycle of ours in any state', async () => {
    const name = 'declared-absent';
    bench.sandbox.setFaults({ createOrder: { acceptThenDropRate: 1 } });
    const report = await bench.run(strategy({ name }));
    bench.sandbox.setFaults({});
    const cycle = (await bench.database.cycles.getBySlot(name, new Date(report.slot)))!;
    const atService = bench.sandbox.ledger().find((order) => order.quoteId === cycle.quoteId)!;
    // As the first release's reconciliation left it: declared absent although the service has the order.
    await bench.database.cycles.transition(cycle.id, 'unsure', 'not_placed', {
      reasonCode: 'not_found_at_service',
    });

    const context = { ...bench.context, settings: engineSettings({ reconcile: { visibilityLagMs: 0 } }) };
    const externalBefore = await metricValue(bench.metrics, 'treasury_external_orders_total');
    const pass = await new Maintenance(context).runOnce(later(1_000));
    expect(pass.errors).toEqual([]);
    expect(await bench.database.orders.getByServiceId('default', atService.id)).toBeNull();
    expect(await metricValue(bench.metrics, 'treasury_external_orders_total')).toBe(externalBefore);
    expect(bench.lines.some((line) => line.msg.includes('carries the quote of a cycle of ours'))).toBe(true);
  });
});

describe('ambiguous reconciliation', () => {
  it('halts the strategy and raises an alert when two orders match; later cycles skip strategy_halted', async () => {
    const bench = await startEngineBench();
    try {
      const name = 'ambiguous';
      const { database } = bench;
      const now = new Date();
      const claimed = await recordUnsureCycle(bench, {
        name,
        slot: new Date('2032-01-01T00:00:00Z'),
        quoteId: 'QUOTE1234',
        requestedAt: now,
      });
      const order = (id: string) => listedOrder(id, { quoteId: 'QUOTE1234', timestamp: now });
      const service = await startListingService([order('order-a'), order('order-b')]);
      const client = createPurchaseClient({ baseUrl: service.url, token: DEMO_TOKEN });
      try {
        const result = await reconcileUnsureCycles(onClient(bench.context, client), new Date());
        expect(result).toMatchObject({ examined: 1, ambiguous: 1 });
      } finally {
        await client.close();
        await service.close();
      }
      const halted = await database.strategies.get(name);
      expect(halted!.haltedAt).not.toBeNull();
      expect(halted!.haltReason).toContain('order-a, order-b');
      expect((await database.cycles.get(claimed.id))!.state).toBe('unsure');
      expect(bench.lines.some((line) => line.level === 'error' && line.alert === 'strategy_halted')).toBe(
        true,
      );

      await new Maintenance(bench.context).runOnce(new Date());
      expect(await metricValue(bench.metrics, 'treasury_halted_strategies')).toBe(1);
      expect(await bench.run(strategy({ name }))).toMatchObject({
        outcome: 'skipped',
        reason: 'strategy_halted',
      });
    } finally {
      await bench.close();
    }
  });
});
