/**
 * Orders at the service that no cycle of ours owns (placed by hand, or by another system on the same
 * account) are recorded as external, so the books hold every order. Only orders older than the visibility
 * lag are considered, and never one whose quoteId belongs to a cycle of ours, in any state: an in-flight or
 * unsure cycle's order is reconciliation's to adopt, and any other is a fault a person must see (an error
 * line), not a purchase to book twice. An order listed without its quoteId is asked for it first. If a cycle
 * later records the same order, it adopts the external row.
 */
import type { AccountContext } from './context.js';
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
  context: AccountContext,
  window: { from: Date; to: Date },
  options: { signal?: AbortSignal } = {},
): Promise<ExternalScanResult> {
  const { database, metrics } = context;
  const account = context.account.name;
  if (window.to.getTime() <= window.from.getTime()) return { listed: 0, recorded: 0, complete: true };
  const listing = await listOrdersBetween(context, window, options);
  const listed = listing.orders;
  let recorded = 0;
  for (const order of listed) {
    const known = await withDatabase(context, 'orders_get_by_service_id', () =>
      database.orders.getByServiceId(account, order.id),
    );
    if (known) continue;
    const quoteId = order.quoteId ?? (await context.account.client.getOrder(order.id, options)).quoteId;
    const owner = (
      await withDatabase(context, 'cycles_owners_of_quotes', () =>
        database.cycles.ownersOfQuotes(account, [quoteId]),
      )
    ).get(quoteId);
    if (owner) {
      if (owner.state !== 'submitting' && owner.state !== 'unsure') {
        context.logger.error(
          { orderId: order.id, quoteId, cycleId: owner.cycleId, cycleState: owner.state },
          'order at the service carries the quote of a cycle of ours that did not record it; not booked as external, see `treasury-bot resolve`',
        );
      }
      continue;
    }
    const stored = await withDatabase(context, 'orders_record_external', () =>
      database.orders.recordExternal(toServiceOrder(account, order, quoteId)),
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
