import { randomUUID } from 'node:crypto';
import type { Decimal } from '../money.js';
import { toDecimalText, ZERO } from '../money.js';
import type { IssuedQuote, QuoteTerms } from './quotes.js';
import type { OrderStatus, SandboxOrderView } from './types.js';

export interface Withdrawal {
  transactionId: string;
  fromAddress: string;
  toAddress: string;
  blockNumber: string | null;
  finishedAt: number | null;
  status: 'sent' | 'confirmed';
}

/** An order in the sandbox's books. Money stays Decimal here; the wire mappers format it. */
export interface Order extends QuoteTerms {
  id: string;
  /** Creation sequence: breaks timestamp ties so that "newest first" is stable. */
  seq: number;
  status: OrderStatus;
  createdAt: number;
  updatedAt: number;
  history: { status: OrderStatus; at: number }[];
  /** Fiat received so far. */
  received: Decimal;
  withdrawal: Withdrawal | null;
}

export interface OrderFilter {
  status?: OrderStatus;
  symbol?: string;
  fromMs?: number;
  toMs?: number;
}

/**
 * What the orders hold together: credit used (totalCost of orders not yet fully paid), fiat deposited
 * against partly paid orders, and crypto bought and paid but not yet sent.
 */
export interface Holdings {
  creditUsed: Decimal;
  fiat: Decimal;
  crypto: Decimal;
}

function holdingsOf(order: Order): Holdings {
  return {
    creditUsed: order.status === 'pending' || order.status === 'partial' ? order.totalCost : ZERO,
    fiat: order.status === 'partial' ? order.received : ZERO,
    crypto: order.status === 'paid' ? order.totalFilled : ZERO,
  };
}

/**
 * Every order the sandbox has accepted, by id and in creation order, with their holdings kept as running
 * totals: the credit check on each new order and GET /client/balance cost the same with 10 orders or
 * 10,000 (a sum over every order made a burst quadratic). Exact: Decimal sums at 40 digits.
 */
export class OrderLedger {
  private readonly orders = new Map<string, Order>();
  private nextSeq = 1;
  private held: Holdings = { creditUsed: ZERO, fiat: ZERO, crypto: ZERO };

  create(quote: IssuedQuote, at: number): Order {
    const order: Order = {
      id: randomUUID(),
      seq: this.nextSeq++,
      quoteId: quote.quoteId,
      symbol: quote.symbol,
      amount: quote.amount,
      price: quote.price,
      totalCost: quote.totalCost,
      totalFilled: quote.totalFilled,
      status: 'pending',
      createdAt: at,
      updatedAt: at,
      history: [{ status: 'pending', at }],
      received: ZERO,
      withdrawal: null,
    };
    this.orders.set(order.id, order);
    this.count(order, 1);
    return order;
  }

  /** Runs `change` on one of the ledger's orders (its status and payments), keeping the totals in step. */
  change<T>(order: Order, change: () => T): T {
    this.count(order, -1);
    try {
      return change();
    } finally {
      this.count(order, 1);
    }
  }

  holdings(): Holdings {
    return this.held;
  }

  private count(order: Order, sign: 1 | -1): void {
    const of = holdingsOf(order);
    this.held = {
      creditUsed: this.held.creditUsed.plus(of.creditUsed.times(sign)),
      fiat: this.held.fiat.plus(of.fiat.times(sign)),
      crypto: this.held.crypto.plus(of.crypto.times(sign)),
    };
  }

  get(id: string): Order | undefined {
    return this.orders.get(id);
  }

  all(): Order[] {
    return [...this.orders.values()];
  }

  /** Newest first; from and to are inclusive. */
  list(filter: OrderFilter): Order[] {
    const matches = this.all().filter(
      (order) =>
        (filter.status === undefined || order.status === filter.status) &&
        (filter.symbol === undefined || order.symbol === filter.symbol) &&
        (filter.fromMs === undefined || order.createdAt >= filter.fromMs) &&
        (filter.toMs === undefined || order.createdAt <= filter.toMs),
    );
    return matches.sort((a, b) => b.createdAt - a.createdAt || b.seq - a.seq);
  }
}

export function viewOrder(order: Order): SandboxOrderView {
  return {
    id: order.id,
    quoteId: order.quoteId,
    symbol: order.symbol,
    side: 'BUY',
    status: order.status,
    amount: toDecimalText(order.amount),
    price: order.price.toFixed(4),
    totalCost: order.totalCost.toFixed(2),
    totalFilled: order.totalFilled.toFixed(6),
    createdAt: new Date(order.createdAt).toISOString(),
    updatedAt: new Date(order.updatedAt).toISOString(),
    history: order.history.map((h) => ({ status: h.status, at: new Date(h.at).toISOString() })),
  };
}
