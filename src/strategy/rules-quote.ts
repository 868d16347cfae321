import { Decimal } from '../money.js';
import { decimalDetail, type RuleLog } from './rule-result.js';
import type { QuoteTolerances, QuoteView, Strategy } from './types.js';

/**
 * Rules about the quote: first whether it can be trusted at all, then whether its price is one the
 * strategy wants. A quote that fails the sanity rules is not judged further: comparing a broken price
 * against a threshold would put a meaningless "passed" in the audit trail.
 */

export const DEFAULT_QUOTE_TOLERANCES: QuoteTolerances = {
  costMismatchPct: new Decimal('0.5'),
  costMismatchAbsolute: new Decimal('0.01'),
  feeAllowancePct: new Decimal('1'),
};

/**
 * The sanity rules; false when the log stops or the quote's numbers are unusable (then the quote is not
 * judged further). The fee allowance is measured against the amount the quote was requested for
 * (`quote.amount`).
 */
export function checkQuoteSanity(log: RuleLog, quote: QuoteView, tolerances: QuoteTolerances): boolean {
  const { price, totalCost, totalFilled } = quote;
  const priceUsable = isPositive(price);
  const valuesUsable = isPositive(totalCost) && isPositive(totalFilled);
  const goOn =
    log.check('quote_price', priceUsable, 'quote_price_invalid', () => ({ price: decimalDetail(price) })) &&
    log.check('quote_values', valuesUsable, 'quote_values_invalid', () => ({
      totalCost: decimalDetail(totalCost),
      totalFilled: decimalDetail(totalFilled),
    }));
  if (!goOn || !priceUsable || !valuesUsable) return false;

  const expectedCost = price.times(totalFilled);
  const difference = totalCost.minus(expectedCost).abs();
  const shareTolerance = totalCost.times(tolerances.costMismatchPct).dividedBy(HUNDRED);
  const tolerance = shareTolerance.greaterThan(tolerances.costMismatchAbsolute)
    ? shareTolerance
    : tolerances.costMismatchAbsolute;
  const consistent = log.check(
    'quote_cost_consistent',
    difference.lessThanOrEqualTo(tolerance),
    'quote_cost_mismatch',
    () => ({
      totalCost: decimalDetail(totalCost),
      priceTimesFilled: decimalDetail(expectedCost),
      difference: decimalDetail(difference),
      tolerance: decimalDetail(tolerance),
    }),
  );
  if (!consistent) return false;
  const costLimit = quote.amount.times(tolerances.feeAllowancePct.plus(HUNDRED)).dividedBy(HUNDRED);
  const withinAllowance = log.check(
    'quote_cost_allowance',
    totalCost.lessThanOrEqualTo(costLimit),
    'quote_cost_above_allowance',
    () => ({
      totalCost: decimalDetail(totalCost),
      amount: decimalDetail(quote.amount),
      feeAllowancePct: decimalDetail(tolerances.feeAllowancePct),
      limit: decimalDetail(costLimit),
    }),
  );
  if (!withinAllowance) return false;
  // The service quoting far less than asked is not a bargain but another request than ours.
  const costFloor = quote.amount.times(HUNDRED.minus(tolerances.feeAllowancePct)).dividedBy(HUNDRED);
  return log.check(
    'quote_cost_matches_amount',
    totalCost.greaterThanOrEqualTo(costFloor),
    'quote_cost_below_amount',
    () => ({
      totalCost: decimalDetail(totalCost),
      amount: decimalDetail(quote.amount),
      feeAllowancePct: decimalDetail(tolerances.feeAllowancePct),
      floor: decimalDetail(costFloor),
    }),
  );
}

/** maxPrice for any kind; buyBelow (at or below) for threshold strategies. */
export function checkPrice(log: RuleLog, strategy: Strategy, price: Decimal): boolean {
  const { maxPrice } = strategy;
  const withinMax =
    maxPrice === undefined ||
    log.check('max_price', price.lessThanOrEqualTo(maxPrice), 'price_above_max', () => ({
      price: decimalDetail(price),
      maxPrice: decimalDetail(maxPrice),
    }));
  if (!withinMax || strategy.kind !== 'threshold') return withinMax;
  const { buyBelow } = strategy;
  return log.check('buy_below', price.lessThanOrEqualTo(buyBelow), 'price_not_below_threshold', () => ({
    price: decimalDetail(price),
    buyBelow: decimalDetail(buyBelow),
  }));
}

// Percentages are applied as × pct ÷ 100 with a shared 100: the quote rules run at every slot of a backtest.
const HUNDRED = new Decimal(100);

/** Finite and above zero; read from the sign rather than compared with a new Decimal(0). */
function isPositive(value: Decimal): boolean {
  return value.isFinite() && value.isPositive() && !value.isZero();
}
