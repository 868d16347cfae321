import { Decimal, formatMoney } from '../money.js';

/**
 * The service's quote arithmetic, shared by the sandbox and the backtest so that a replayed series and a
 * backtest of it quote the same figures. The service prices at 4 decimals; totalFilled is the quantity the
 * amount buys (scale 6, rounded down) and totalCost the fiat charged for exactly that quantity (rounded
 * down to cents), so the client is never charged more than the amount it asked to spend.
 */

export const PRICE_SCALE = 4;

/** A price as the service quotes it: 4 decimals, half-even. */
export function servicePrice(price: Decimal): Decimal {
  return new Decimal(formatMoney(price, PRICE_SCALE, 'halfEven'));
}

export interface Fill {
  totalFilled: Decimal;
  totalCost: Decimal;
}

/** What `amount` buys at `price` (already at the service's scale); a zero totalCost buys nothing. */
export function quoteFill(amount: Decimal, price: Decimal): Fill {
  const totalFilled = amount.dividedBy(price).toDecimalPlaces(6, Decimal.ROUND_DOWN);
  const totalCost = new Decimal(formatMoney(price.times(totalFilled), 2, 'down'));
  return { totalFilled, totalCost };
}
