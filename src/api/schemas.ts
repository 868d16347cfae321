/**
 * Wire schemas of the records the reference documents field by field (quote, order, tracking, webhook log
 * page). Shapes the reference leaves open are in `assumptions.ts`. Objects are not strict: extra fields
 * from a newer service are tolerated and dropped. Every optional field goes through `pending` or `optional`
 * (wire-fields.ts), which read an empty string as absent.
 */
import { z } from 'zod';
import type { Decimal } from '../money.js';

import {
  ORDER_STATUSES,
  type Order,
  type Pagination,
  type Quote,
  type Tracking,
  type Withdrawal,
} from './types.js';
import {
  count,
  identifier,
  isoDate,
  MAX_EXPIRES_IN,
  nonNegativeDecimalText,
  optional,
  pending,
  positiveDecimalText,
  QUOTE_ID_PATTERN,
  wireAmount,
} from './wire-fields.js';

export const orderStatusSchema = z.enum(ORDER_STATUSES);

export const quoteSchema: z.ZodType<Quote> = z.object({
  symbol: identifier,
  price: positiveDecimalText,
  totalCost: nonNegativeDecimalText,
  totalFilled: nonNegativeDecimalText,
  quoteId: z.string().regex(QUOTE_ID_PATTERN, { error: 'must be 8 to 9 letters or digits' }),
  // The unit is not documented (seconds by assumption) and the worker keeps its own deadline, so a missing
  // value is no reason to refuse the quote; a negative or absurd one (beyond an hour even in milliseconds) is.
  // Kept exactly as sent (a long literal arrives as its own text from the exact JSON reader), for the record.
  expiresIn: optional(
    wireAmount.refine((value: Decimal) => value.lte(MAX_EXPIRES_IN), {
      error: `must be at most ${MAX_EXPIRES_IN}`,
    }),
  ),
});

export const orderShape = {
  id: identifier,
  amount: wireAmount,
  symbol: identifier,
  price: positiveDecimalText,
  side: identifier,
  timestamp: isoDate,
};
export const orderSchema: z.ZodType<Order> = z.object(orderShape);

export const withdrawalShape = {
  type: identifier,
  status: identifier,
  transactionId: pending(z.string()),
  token: pending(z.string()),
  network: pending(z.string()),
  fromAddress: pending(z.string()),
  toAddress: pending(z.string()),
  amount: pending(wireAmount),
  blockNumber: pending(z.string()),
  finishedAt: pending(isoDate),
};
export const withdrawalSchema: z.ZodType<Withdrawal> = z.object(withdrawalShape);

export const trackingSchema: z.ZodType<Tracking> = z.object({
  orderId: identifier,
  settlementStatus: orderStatusSchema,
  expectedAmount: wireAmount,
  receivedAmount: wireAmount,
  withdrawnAmount: wireAmount,
  withdrawal: pending(withdrawalSchema),
});

export const paginationSchema: z.ZodType<Pagination> = z.object({
  page: count,
  limit: count,
  total: count,
  totalPages: count,
});
