/**
 * Every assumption the client makes where the service reference is silent (DESIGN.md, "Assumptions where
 * the reference is silent"). When the real service turns out to differ, this is the one file to change;
 * the sandbox implements exactly these.
 */
import { z } from 'zod';
import { orderShape, orderStatusSchema, paginationSchema, quoteSchema, withdrawalShape } from './schemas.js';
import type {
  Balance,
  Deposit,
  OrderDetail,
  OrderPage,
  WebhookConfig,
  WebhookEvent,
  WebhookLogEntry,
  WebhookLogPage,
  WithdrawalEventData,
} from './types.js';
import {
  count,
  decimalText,
  identifier,
  isoDate,
  nonNegativeDecimalText,
  wireAmount,
} from './wire-fields.js';

/**
 * fxRate: optional; when sent it is the quote's price the client accepts, as decimal text of 6 to 7
 * characters. Four decimals fit a BRL-per-USDT price (`"5.4321"`) inside that length.
 */
export const FX_RATE_SCALE = 4;
export const FX_RATE_LENGTH = { min: 6, max: 7 } as const;

/** The reference says only "400 when the quote has expired"; the body's message is assumed to say so. */
export function saysQuoteExpired(errorBody: unknown): boolean {
  const text =
    typeof errorBody === 'string'
      ? errorBody
      : typeof errorBody === 'object' && errorBody !== null && 'message' in errorBody
        ? String((errorBody as { message: unknown }).message)
        : '';
  return /expired/i.test(text);
}

/** GET /client/orders: `offset` is the page number (1-based); filters by these query names. */
export const ORDER_LIST_QUERY = {
  page: 'offset',
  limit: 'limit',
  status: 'status',
  symbol: 'symbol',
  from: 'from',
  to: 'to',
} as const;

/** GET /client/orders/:id: the order record plus `status` and `quoteId`. */
export const orderDetailSchema: z.ZodType<OrderDetail> = z.object({
  ...orderShape,
  status: orderStatusSchema,
  quoteId: identifier,
});

/** GET /client/orders: `{ data, pagination }`, newest first; entries may carry status and quoteId. */
export const orderPageSchema: z.ZodType<OrderPage> = z.object({
  data: z.array(
    z.object({ ...orderShape, status: orderStatusSchema.optional(), quoteId: identifier.optional() }),
  ),
  pagination: paginationSchema,
});

const currencyBalance = z.object({ currency: identifier, balance: decimalText });

/**
 * GET /client/balance: amounts as decimal text; only `canWithdraw` is named by the reference. Balances and
 * available credit may be negative (an account over its limit), so only the limit itself must not be.
 */
export const balanceSchema: z.ZodType<Balance> = z.object({
  fiat: currencyBalance,
  crypto: currencyBalance,
  credit: z.object({
    total: nonNegativeDecimalText,
    used: decimalText,
    available: decimalText,
  }),
  canWithdraw: z.boolean(),
});

/**
 * Webhook config: `methodId` is an event kind; each POST sets the url and switches that one kind. GET and
 * POST both answer `{ url, events: [{ methodId, active }] }`.
 */
export function buildWebhookConfigBody(input: { url: string; methodId: string; active: boolean }) {
  return { url: input.url, webhook: { methodId: input.methodId, active: input.active } };
}
export const webhookConfigSchema: z.ZodType<WebhookConfig> = z.object({
  url: z.string(),
  events: z.array(z.object({ methodId: identifier, active: z.boolean() })),
});

const webhookLogEntrySchema: z.ZodType<WebhookLogEntry> = z.object({
  id: z.union([identifier, z.number()]).transform(String),
  methodId: identifier,
  url: z.string(),
  statusCode: z
    .number()
    .int()
    .nullish()
    .transform((value) => value ?? null),
  success: z.boolean(),
  attempt: count,
  payload: z.unknown(),
  createdAt: isoDate,
});

/**
 * `GET /client/webhook/:id/logs` (`:id` is an event kind) and `GET /client/webhook/logs` (whose body the
 * reference does not show) both answer the documented logs page.
 */
export const webhookLogPageSchema: z.ZodType<WebhookLogPage> = z.object({
  data: z.array(webhookLogEntrySchema),
  pagination: paginationSchema,
});

/** Event data: deposits `{ orderId, amount, currency, receivedAt }`; withdrawals the withdrawal object. */
const depositSchema: z.ZodType<Deposit> = z.object({
  orderId: identifier,
  amount: wireAmount,
  currency: identifier,
  receivedAt: isoDate,
});
const withdrawalEventSchema: z.ZodType<WithdrawalEventData> = z.object({
  orderId: identifier,
  ...withdrawalShape,
});

export const webhookEventSchema: z.ZodType<WebhookEvent> = z.discriminatedUnion('event', [
  z.object({ event: z.literal('order'), data: z.object(orderShape) }),
  z.object({ event: z.literal('quote'), data: quoteSchema }),
  z.object({ event: z.enum(['deposit_fiat', 'deposit_crypto']), data: depositSchema }),
  z.object({ event: z.enum(['withdrawal_fiat', 'withdrawal_crypto']), data: withdrawalEventSchema }),
]);
