import type { OrderDetail, OrderListItem } from '../api/index.js';
import type { ServiceOrder } from '../db/index.js';
import type { EngineContext } from './context.js';

/** Every order the service lists in [from, to] (optionally for one symbol), over at most `maxPages` pages. */
export async function listOrdersBetween(
  context: EngineContext,
  window: { from: Date; to: Date; symbol?: string },
): Promise<OrderListItem[]> {
  const all: OrderListItem[] = [];
  for (let page = 1; page <= context.settings.reconcile.maxPages; page++) {
    const answer = await context.client.listOrders({ ...window, limit: 100, page });
    all.push(...answer.data);
    if (page >= answer.pagination.totalPages || answer.data.length === 0) break;
  }
  return all;
}

export function toServiceOrder(order: OrderListItem | OrderDetail, quoteId?: string): ServiceOrder {
  return {
    id: order.id,
    symbol: order.symbol,
    amount: order.amount,
    price: order.price,
    side: order.side,
    timestamp: order.timestamp,
    quoteId: order.quoteId ?? quoteId ?? null,
    ...(order.status === undefined ? {} : { status: order.status }),
  };
}
