import { Decimal } from '../money.js';
import { decimalDetail, type RuleLog } from './rule-result.js';
import type { Strategy } from './types.js';

/**
 * Four-eyes rules. Whether an order needs approval is not a reason to skip: the engine either charges it to
 * an envelope people approved in advance or parks the cycle for them. Once approved, the fresh quote's price
 * must not pass the approved maximum, which is a rule like any other.
 */

/** Whether an order of this cost (the quote's totalCost) needs an envelope or people to approve it. */
export function needsApproval(strategy: Strategy, cost: Decimal): boolean {
  const approval = strategy.approval;
  if (approval === undefined || approval.required === 'never') return false;
  if (approval.required === 'always') return true;
  return approval.above !== undefined && cost.greaterThan(approval.above);
}

/** The service quotes prices with 4 decimals; a maximum finer than that would only mislead. */
const PRICE_DECIMALS = 4;

/**
 * The most an approved cycle's fresh quote may cost per unit when no approver named a maximum: the parked
 * quote's price plus the strategy's tolerance, rounded down to the service's 4 decimals (a cap rounds
 * towards the safe side).
 */
export function defaultApprovedMaxPrice(parkedPrice: Decimal, tolerancePct: Decimal): Decimal {
  return parkedPrice
    .times(tolerancePct.plus(100))
    .dividedBy(100)
    .toDecimalPlaces(PRICE_DECIMALS, Decimal.ROUND_DOWN);
}

export function checkApprovedMaxPrice(log: RuleLog, price: Decimal, approvedMaxPrice: Decimal): boolean {
  return log.check(
    'approved_max_price',
    price.lessThanOrEqualTo(approvedMaxPrice),
    'price_above_approved_max',
    () => ({
      price: decimalDetail(price),
      approvedMaxPrice: decimalDetail(approvedMaxPrice),
    }),
  );
}
