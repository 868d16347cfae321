import type { OrderDetail, OrderListItem } from '../api/index.js';
import type { ServiceOrder } from '../db/index.js';
import type { AccountContext } from './context.js';

export interface OrderListing {
  /** Each order once, however many pages showed it. */
  orders: OrderListItem[];
  /**
   * false when the service had more pages than `reconcile.maxPages` allowed us to read. The list is newest
   * first, so what is missing is the oldest part of the window: an order not seen is then not proven absent.
   */
  complete: boolean;
  pagesRead: number;
  /** The service's page count on the last page read. */
  totalPages: number;
}

/** The orders the service lists in [from, to] (optionally for one symbol), over at most `maxPages` pages. */
export async function listOrdersBetween(
  context: AccountContext,
  window: { from: Date; to: Date; symbol?: string },
  options: { signal?: AbortSignal } = {},
): Promise<OrderListing> {
  // The list is live: an order placed while we read pushes the others down a page, so the last order of
  // one page comes again at the top of the next. Counted twice, it would look like a second match.
  const byId = new Map<string, OrderListItem>();
  const { maxPages } = context.settings.reconcile;
  for (let page = 1; ; page++) {
    const answer = await context.account.client.listOrders({ ...window, limit: 100, page }, options);
    for (const order of answer.data) byId.set(order.id, order);
    const { totalPages } = answer.pagination;
    if (page >= totalPages || answer.data.length === 0) {
      return { orders: [...byId.values()], complete: true, pagesRead: page, totalPages };
    }
    if (page >= maxPages) return { orders: [...byId.values()], complete: false, pagesRead: page, totalPages };
  }
}

/** `account`: the account whose service listed the order. */
export function toServiceOrder(
  account: string,
  order: OrderListItem | OrderDetail,
  quoteId?: string,
): ServiceOrder {
  return {
    account,
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
