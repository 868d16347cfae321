/**
 * Orders at the service that no cycle of ours owns (placed by hand, or by another system on the same
 * account) are recorded as external, so the books hold every order. Only orders older than the visibility
 * lag are considered, and none whose quote belongs to one of our in-flight or unsure cycles: those are
 * reconciliation's to adopt. If a cycle later records the same order, it adopts the external row.
 */
import type { EngineContext } from './context.js';
import { withDatabase } from './engine-errors.js';
import { listOrdersBetween, toServiceOrder } from './service-orders.js';

export interface ExternalScanResult {
  listed: number;
  recorded: number;
  /**
   * false when the list had more pages than `reconcile.maxPages`: only the newest orders of the window were
   * seen, and the window is not covered below `oldestListed`.
   */
  complete: boolean;
  /** Timestamp of the oldest order read (undefined when none was). */
  oldestListed?: Date;
}

export async function recordExternalOrders(
  context: EngineContext,
  window: { from: Date; to: Date },
  options: { signal?: AbortSignal } = {},
): Promise<ExternalScanResult> {
  const { database, metrics } = context;
  if (window.to.getTime() <= window.from.getTime()) return { listed: 0, recorded: 0, complete: true };
  const listing = await listOrdersBetween(context, window, options);
  const listed = listing.orders;
  const ours = await withDatabase(context, 'cycles_list_by_state', async () => [
    ...(await database.cycles.listByState('submitting', 1_000)),
    ...(await database.cycles.listByState('unsure', 1_000)),
  ]);
  const pendingQuotes = new Set(ours.map((cycle) => cycle.quoteId).filter((id) => id !== null));
  let recorded = 0;
  for (const order of listed) {
    if (order.quoteId !== undefined && pendingQuotes.has(order.quoteId)) continue;
    const known = await withDatabase(context, 'orders_get_by_service_id', () =>
      database.orders.getByServiceId(order.id),
    );
    if (known) continue;
    const stored = await withDatabase(context, 'orders_record_external', () =>
      database.orders.recordExternal(toServiceOrder(order)),
    );
    if (stored.origin !== 'external') continue;
    recorded++;
    metrics.externalOrders.inc();
    context.logger.warn(
      {
        orderId: order.id,
        symbol: order.symbol,
        amount: order.amount,
        price: order.price,
        at: order.timestamp,
      },
      'order at the service that no cycle placed; recorded as external',
    );
  }
  return {
    listed: listed.length,
    recorded,
    complete: listing.complete,
    ...(listed.length === 0 ? {} : { oldestListed: oldestOf(listed) }),
  };
}

function oldestOf(orders: readonly { timestamp: Date }[]): Date {
  return new Date(Math.min(...orders.map((order) => order.timestamp.getTime())));
}
