import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient } from '../../src/api/index.js';
import { type AccountContext, Maintenance, reconcileUnsureCycles } from '../../src/engine/index.js';
import { DEMO_TOKEN } from '../../src/sandbox/index.js';
import {
  type EngineBench,
  engineSettings,
  metricValue,
  onClient,
  startEngineBench,
} from './support/harness.js';
import { type ListedOrder, type ListingOptions, startListingService } from './support/listing-service.js';
import { listedOrder, recordUnsureCycle } from './support/unsure-cycle.js';

/**
 * The service's order list is paged, live and newest first, and the worker reads at most
 * `reconcile.maxPages` pages of it. What it did not read proves nothing, and what it read twice is one order.
 */
describe('reconciliation over a paged order list', () => {
  let bench: EngineBench;
  const services: { close(): Promise<void> }[] = [];
  beforeAll(async () => {
    bench = await startEngineBench();
  });
  afterAll(async () => {
    for (const service of services) await service.close();
    await bench.close();
  });

  /** The bench's context against a stand-in listing these orders, with these reconcile settings. */
  async function standIn(
    orders: ListedOrder[],
    listing: ListingOptions,
    reconcile: Record<string, unknown> = {},
  ): Promise<AccountContext> {
    const service = await startListingService(orders, listing);
    const client = createPurchaseClient({ baseUrl: service.url, token: DEMO_TOKEN });
    services.push(service, client);
    return { ...onClient(bench.context, client), settings: engineSettings({ reconcile }) };
  }

  const afterVisibilityWindow = (from: Date, passes = 1) => {
    const { quoteWindowMs, reconcile } = bench.context.settings;
    return new Date(
      from.getTime() + passes * (quoteWindowMs + reconcile.visibilityLagMs + reconcile.leaseMs),
    );
  };

  it('keeps the cycle unsure when pages were left unread, and adopts its order once they are read', async () => {
    const at = new Date();
    const cycle = await recordUnsureCycle(bench, {
      name: 'paged',
      slot: new Date('2033-01-01T00:00:00Z'),
      quoteId: 'PAGED0001',
      requestedAt: at,
    });
    // Newest first, one a page: someone else's order on page 1, the cycle's own on page 2.
    const orders = [
      listedOrder('theirs', {
        quoteId: 'THEIRS001',
        price: '5.5000',
        timestamp: new Date(at.getTime() + 50),
      }),
      listedOrder('ours', { quoteId: 'PAGED0001', timestamp: at }),
    ];
    const onePage = await standIn(orders, { pageSize: 1 }, { maxPages: 1 });

    const result = await reconcileUnsureCycles(onePage, afterVisibilityWindow(at));
    expect(result).toMatchObject({ examined: 1, waiting: 1, notPlaced: 0 });
    expect(await bench.database.cycles.get(cycle.id)).toMatchObject({ state: 'unsure' });
    expect(
      await metricValue(bench.metrics, 'treasury_order_list_truncated_total', { scan: 'reconcile' }),
    ).toBe(1);
    expect(bench.lines.some((line) => line.level === 'warn' && line.cycleId === cycle.id)).toBe(true);

    const twoPages = await standIn(orders, { pageSize: 1 }, { maxPages: 2 });
    expect(await reconcileUnsureCycles(twoPages, afterVisibilityWindow(at, 2))).toMatchObject({ adopted: 1 });
    expect(await bench.database.cycles.get(cycle.id)).toMatchObject({
      state: 'placed',
      serviceOrderId: 'ours',
    });
  });

  it('counts an order the shifting list shows on two pages once (no false ambiguity)', async () => {
    const at = new Date();
    const cycle = await recordUnsureCycle(bench, {
      name: 'shifted',
      slot: new Date('2033-01-02T00:00:00Z'),
      quoteId: 'SHIFT0001',
      requestedAt: at,
    });
    const older = listedOrder('older', { quoteId: 'OLDER0001', price: '5.5000', timestamp: at });
    const ours = listedOrder('ours-shifted', {
      quoteId: 'SHIFT0001',
      timestamp: new Date(at.getTime() + 50),
    });
    // Placed after page 1 is read: it takes the top, and page 2 starts with the order page 1 ended on.
    const newer = listedOrder('newer', {
      quoteId: 'NEWER0001',
      price: '5.5000',
      timestamp: new Date(at.getTime() + 90),
    });
    const service = await startListingService([older, ours], { pageSize: 1, arrivals: [newer] });
    const client = createPurchaseClient({ baseUrl: service.url, token: DEMO_TOKEN });
    services.push(service, client);

    const result = await reconcileUnsureCycles(onClient(bench.context, client), new Date());
    expect(service.served.map((page) => page.ids)).toEqual([['ours-shifted'], ['ours-shifted'], ['older']]);
    expect(result).toMatchObject({ examined: 1, adopted: 1, ambiguous: 0 });
    expect(await bench.database.strategies.get('shifted')).toMatchObject({ haltedAt: null });
    expect(await bench.database.cycles.get(cycle.id)).toMatchObject({
      state: 'placed',
      serviceOrderId: 'ours-shifted',
    });
  });

  it('scans the older part of a window the external scan could not read to the end before moving on', async () => {
    const now = new Date();
    const minutesAgo = (minutes: number) => new Date(now.getTime() - minutes * 60_000);
    const orders = [3, 4, 5].map((minutes) =>
      listedOrder(`external-${minutes}`, { quoteId: `EXTERN00${minutes}`, timestamp: minutesAgo(minutes) }),
    );
    const context = await standIn(orders, { pageSize: 2 }, { maxPages: 1, visibilityLagMs: 0 });
    const maintenance = new Maintenance(context);
    const recorded = async () =>
      (await Promise.all(orders.map((order) => bench.database.orders.getByServiceId('default', order.id))))
        .filter((order) => order !== null)
        .map((order) => order.serviceOrderId);

    const first = await maintenance.runOnce(now);
    expect(await recorded()).toEqual(['external-3', 'external-4']);
    const second = await maintenance.runOnce(new Date(now.getTime() + 1_000));
    expect(await recorded()).toEqual(['external-3', 'external-4', 'external-5']);

    expect(first.external?.get('default')).toMatchObject({ recorded: 2, complete: false });
    expect(second.external?.get('default')).toMatchObject({ recorded: 1, complete: true });
    expect(
      await metricValue(bench.metrics, 'treasury_order_list_truncated_total', { scan: 'external' }),
    ).toBe(1);
  });
});
