import { type Decimal, formatMoney, ZERO } from '../money.js';
import type { Order } from './ledger.js';
import { CRYPTO_CURRENCY, FIAT_CURRENCY } from './market.js';

export interface CreditUsage {
  total: Decimal;
  used: Decimal;
  available: Decimal;
}

/** An order holds credit equal to its totalCost from creation until it is fully paid. */
export function computeCredit(orders: Iterable<Order>, limit: Decimal): CreditUsage {
  let used = ZERO;
  for (const order of orders) {
    if (order.status === 'pending' || order.status === 'partial') used = used.plus(order.totalCost);
  }
  return { total: limit, used, available: limit.minus(used) };
}

/**
 * The balance summary. Fiat is what has been deposited against orders not yet fully paid (a partial payment
 * waits in the account until the rest arrives); crypto is what has been bought and paid but not yet sent
 * to the client's wallet. Withdrawals are allowed while the credit line is not overdrawn.
 */
export function balanceRecord(orders: Order[], limit: Decimal): Record<string, unknown> {
  let fiat = ZERO;
  let crypto = ZERO;
  for (const order of orders) {
    if (order.status === 'partial') fiat = fiat.plus(order.received);
    if (order.status === 'paid') crypto = crypto.plus(order.totalFilled);
  }
  const credit = computeCredit(orders, limit);
  return {
    fiat: { currency: FIAT_CURRENCY, balance: formatMoney(fiat, 2, 'down') },
    crypto: { currency: CRYPTO_CURRENCY, balance: formatMoney(crypto, 6, 'down') },
    credit: {
      total: formatMoney(credit.total, 2, 'down'),
      used: formatMoney(credit.used, 2, 'down'),
      available: formatMoney(credit.available, 2, 'down'),
    },
    canWithdraw: !credit.available.isNegative(),
  };
}
