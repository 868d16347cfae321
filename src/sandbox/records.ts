import { type Decimal, formatMoney } from '../money.js';
import type { Holdings, Order } from './ledger.js';
import { CRYPTO_CURRENCY, FIAT_CURRENCY, NETWORK } from './market.js';

/**
 * Wire shapes of orders. The reference carries the order amount and the tracking amounts as JSON numbers;
 * they are produced from fixed-scale decimal text so that the number is the shortest exact rendering.
 */
export function orderRecord(order: Order): Record<string, unknown> {
  return {
    id: order.id,
    amount: Number(order.amount.toFixed()),
    symbol: order.symbol,
    price: formatMoney(order.price, 4, 'halfEven'),
    side: 'BUY',
    timestamp: new Date(order.createdAt).toISOString(),
  };
}

/** GET /client/orders/:id and list items: the order record plus status and quoteId (assumptions table). */
export function orderDetail(order: Order): Record<string, unknown> {
  return { ...orderRecord(order), status: order.status, quoteId: order.quoteId };
}

/**
 * expectedAmount and receivedAmount are fiat (what the order costs, what was paid so far); withdrawnAmount
 * is the crypto quantity sent to the client's wallet.
 */
export function trackingRecord(order: Order): Record<string, unknown> {
  const withdrawn = order.withdrawal === null ? 0 : Number(formatMoney(order.totalFilled, 6, 'down'));
  return {
    orderId: order.id,
    settlementStatus: order.status,
    expectedAmount: Number(formatMoney(order.totalCost, 2, 'down')),
    receivedAmount: Number(formatMoney(order.received, 2, 'down')),
    withdrawnAmount: withdrawn,
    withdrawal: withdrawalRecord(order),
  };
}

/** Before the crypto leaves, the fields that only a sent transaction has are null. */
export function withdrawalRecord(order: Order): Record<string, unknown> {
  const w = order.withdrawal;
  return {
    type: 'crypto',
    status: w?.status ?? 'pending',
    transactionId: w?.transactionId ?? null,
    token: CRYPTO_CURRENCY,
    network: NETWORK,
    fromAddress: w?.fromAddress ?? null,
    toAddress: w?.toAddress ?? null,
    amount: w === null ? null : Number(formatMoney(order.totalFilled, 6, 'down')),
    blockNumber: w?.blockNumber ?? null,
    finishedAt: w?.finishedAt == null ? null : new Date(w.finishedAt).toISOString(),
  };
}

export interface CreditUsage {
  total: Decimal;
  used: Decimal;
  available: Decimal;
}

/** An order holds credit equal to its totalCost from creation until it is fully paid. */
export function computeCredit(holdings: Holdings, limit: Decimal): CreditUsage {
  return { total: limit, used: holdings.creditUsed, available: limit.minus(holdings.creditUsed) };
}

/**
 * The balance summary. Fiat is what has been deposited against orders not yet fully paid (a partial payment
 * waits in the account until the rest arrives); crypto is what has been bought and paid but not yet sent
 * to the client's wallet. Withdrawals are allowed while the credit line is not overdrawn.
 */
export function balanceRecord(holdings: Holdings, limit: Decimal): Record<string, unknown> {
  const credit = computeCredit(holdings, limit);
  return {
    fiat: { currency: FIAT_CURRENCY, balance: formatMoney(holdings.fiat, 2, 'down') },
    crypto: { currency: CRYPTO_CURRENCY, balance: formatMoney(holdings.crypto, 6, 'down') },
    credit: {
      total: formatMoney(credit.total, 2, 'down'),
      used: formatMoney(credit.used, 2, 'down'),
      available: formatMoney(credit.available, 2, 'down'),
    },
    canWithdraw: !credit.available.isNegative(),
  };
}
