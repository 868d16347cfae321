/**
 * Which of the service's orders an unsure cycle produced, decided from facts already gathered: the orders
 * listed in the time window with the cycle's symbol, amount and price, each with the quoteId the service
 * reports for it (from the list or from GET /client/orders/:id) when it reports one. A quoteId is used once,
 * so an equal quoteId confirms and a different one refutes; without one, the figures are all we have.
 */
import type { Decimal } from '../money.js';

export interface CycleFingerprint {
  quoteId: string;
  amount: Decimal;
  price: Decimal;
}

export interface CandidateOrder {
  id: string;
  amount: Decimal;
  price: Decimal;
  /** Undefined when the service did not say. */
  quoteId?: string;
}

export type MatchVerdict =
  | { kind: 'single'; orderId: string }
  | { kind: 'none' }
  | { kind: 'ambiguous'; orderIds: string[] };

/** Orders whose figures fit the cycle; only these are worth a GET /client/orders/:id. */
export function sameFigures(cycle: CycleFingerprint, order: CandidateOrder): boolean {
  return order.amount.equals(cycle.amount) && order.price.equals(cycle.price);
}

export function matchOrders(cycle: CycleFingerprint, candidates: readonly CandidateOrder[]): MatchVerdict {
  const fitting = candidates.filter((order) => sameFigures(cycle, order));
  const confirmed = fitting.filter((order) => order.quoteId === cycle.quoteId);
  const unconfirmed = fitting.filter((order) => order.quoteId === undefined);
  if (confirmed.length === 1) return { kind: 'single', orderId: confirmed[0]!.id };
  if (confirmed.length > 1) return { kind: 'ambiguous', orderIds: confirmed.map((order) => order.id) };
  if (unconfirmed.length === 1) return { kind: 'single', orderId: unconfirmed[0]!.id };
  if (unconfirmed.length > 1) return { kind: 'ambiguous', orderIds: unconfirmed.map((order) => order.id) };
  return { kind: 'none' };
}
