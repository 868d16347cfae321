/**
 * Which of the service's orders an unsure cycle produced, decided from facts already gathered: the orders
 * listed in the time window, each with the quoteId the service reports for it (from the list or from
 * GET /client/orders/:id) when it reports one. A quoteId is used once, so an equal quoteId makes the order the
 * cycle's whatever its figures say, and a different one refutes it. Without a quoteId anywhere, figures
 * within the quote checks' tolerance are all we have.
 */

import { formatFxRate } from '../api/index.js';
import type { FigureDifference } from '../db/index.js';
import { Decimal } from '../money.js';

export interface CycleFingerprint {
  quoteId: string;
  symbol: string;
  amount: Decimal;
  price: Decimal;
  /** The fxRate sent with the order (the quote's price in 6 to 7 characters): the order may carry it. */
  sentPrice?: Decimal;
}

export interface CandidateOrder {
  id: string;
  symbol: string;
  amount: Decimal;
  price: Decimal;
  /** Undefined when the service did not say. */
  quoteId?: string;
}

export type MatchVerdict =
  | { kind: 'single'; orderId: string }
  | { kind: 'none' }
  | { kind: 'ambiguous'; orderIds: string[] };

/**
 * Figures close enough to be the cycle's order when no quoteId tells: amount and price each within
 * `tolerancePct` percent of the quote's (the service may round the amount or carry more price digits).
 */
export function figuresFit(cycle: CycleFingerprint, order: CandidateOrder, tolerancePct: Decimal): boolean {
  const within = (expected: Decimal, got: Decimal) =>
    got.minus(expected).abs().times(100).lessThanOrEqualTo(expected.abs().times(tolerancePct));
  return (
    order.symbol === cycle.symbol && within(cycle.amount, order.amount) && within(cycle.price, order.price)
  );
}

/**
 * Every figure of the order that is not what the cycle asked and was quoted: the symbol, a buy, the amount
 * asked for, and the quote's price or the fxRate sent with the order.
 */
export function figureDifferences(
  cycle: CycleFingerprint,
  order: Pick<CandidateOrder, 'symbol' | 'amount' | 'price'> & { side?: string },
): FigureDifference[] {
  const differences: FigureDifference[] = [];
  if (order.symbol !== cycle.symbol)
    differences.push({ field: 'symbol', expected: cycle.symbol, got: order.symbol });
  if (order.side !== undefined && order.side.toUpperCase() !== 'BUY') {
    differences.push({ field: 'side', expected: 'BUY', got: order.side });
  }
  if (!order.amount.equals(cycle.amount)) {
    differences.push({ field: 'amount', expected: cycle.amount.toString(), got: order.amount.toString() });
  }
  if (!order.price.equals(cycle.price) && !(cycle.sentPrice && order.price.equals(cycle.sentPrice))) {
    differences.push({ field: 'price', expected: cycle.price.toString(), got: order.price.toString() });
  }
  return differences;
}

/** `candidates` carry our quoteId, or no quoteId and figures that fit; the caller dropped refuted ones. */
export function matchOrders(cycle: CycleFingerprint, candidates: readonly CandidateOrder[]): MatchVerdict {
  const confirmed = candidates.filter((order) => order.quoteId === cycle.quoteId);
  const unconfirmed = candidates.filter((order) => order.quoteId === undefined);
  if (confirmed.length === 1) return { kind: 'single', orderId: confirmed[0]!.id };
  if (confirmed.length > 1) return { kind: 'ambiguous', orderIds: confirmed.map((order) => order.id) };
  if (unconfirmed.length === 1) return { kind: 'single', orderId: unconfirmed[0]!.id };
  if (unconfirmed.length > 1) return { kind: 'ambiguous', orderIds: unconfirmed.map((order) => order.id) };
  return { kind: 'none' };
}

/** The fingerprint of what a cycle asked for: its quote, and the fxRate it sent when the price has one. */
export function fingerprintOf(quote: {
  quoteId: string;
  symbol: string;
  amount: Decimal;
  price: Decimal;
}): CycleFingerprint {
  let sentPrice: Decimal | undefined;
  try {
    sentPrice = new Decimal(formatFxRate(quote.price));
  } catch {
    // A price that has no fxRate form was never sent with one.
  }
  return {
    quoteId: quote.quoteId,
    symbol: quote.symbol,
    amount: quote.amount,
    price: quote.price,
    ...(sentPrice ? { sentPrice } : {}),
  };
}
