import { Decimal } from '../money.js';

/**
 * The service's quote arithmetic, shared by the sandbox and the backtest so that a replayed series and a
 * backtest of it quote the same figures. The service prices at 4 decimals; totalFilled is the quantity the
 * amount buys (scale 6, rounded down) and totalCost the fiat charged for exactly that quantity (rounded
 * down to cents), so the client is never charged more than the amount it asked to spend.
 */

export const PRICE_SCALE = 4;

/** A price as the service quotes it: 4 decimals, half-even. */
export function servicePrice(price: Decimal): Decimal {
  return price.toDecimalPlaces(PRICE_SCALE, Decimal.ROUND_HALF_EVEN);
}

export interface Fill {
  totalFilled: Decimal;
  totalCost: Decimal;
}

/** What `amount` buys at `price` (already at the service's scale); a zero totalCost buys nothing. */
export function quoteFill(amount: Decimal, price: Decimal): Fill {
  // Truncated division computes only the digits kept: exact, and a fraction of the cost of dividing to
  // 40 significant digits and then cutting.
  const totalFilled = amount.times(MICRO).dividedToIntegerBy(price).dividedBy(MICRO);
  const totalCost = price.times(totalFilled).toDecimalPlaces(2, Decimal.ROUND_DOWN);
  return { totalFilled, totalCost };
}

const MICRO = new Decimal(1_000_000);
