/**
 * The typed client of the purchase service: one method per operation, arguments checked before sending,
 * every answer validated into domain records.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { z } from 'zod';
import type { Decimal } from '../money.js';
import { toDecimalText } from '../money.js';
import {
  checkBoolean,
  checkDate,
  checkFxRate,
  checkIntegerInRange,
  checkOneOf,
  checkPositiveAmount,
  checkQuoteId,
  checkText,
  checkUrl,
} from './arguments.js';
import {
  balanceSchema,
  buildWebhookConfigBody,
  ORDER_LIST_QUERY,
  orderDetailSchema,
  orderPageSchema,
  webhookConfigSchema,
  webhookLogPageSchema,
} from './assumptions.js';
import type { WireFormat } from './codec.js';
import { ApiBadResponseError } from './errors.js';
import { type CallSpec, type ExchangeContext, exchange, type RequestObserver } from './exchange.js';
import { DEFAULT_RETRY, type RetrySettings } from './retry-policy.js';
import { orderSchema, quoteSchema, trackingSchema } from './schemas.js';
import type { ServiceGate } from './service-gate.js';
import { createTransport } from './transport.js';
import {
  type Balance,
  ORDER_STATUSES,
  type Order,
  type OrderDetail,
  type OrderPage,
  type OrderStatus,
  type Quote,
  type Tracking,
  type WebhookConfig,
  type WebhookLogPage,
} from './types.js';

export interface PurchaseClientOptions {
  /** Base address, e.g. `https://otc.example.com` (a path prefix is kept). */
  baseUrl: string;
  token: string;
  format?: WireFormat;
  timeouts?: { connectMs?: number; headersMs?: number; bodyMs?: number };
  connections?: number;
  keepAliveMs?: number;
  retry?: Partial<RetrySettings>;
  /** Called after every attempt (metrics); must not throw, and errors it throws are ignored. */
  onRequest?: RequestObserver;
  /** Jitter source and backoff wait, injectable for tests. */
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Shared by the clients of one account in a replica: its pace and the pauses the service asks for with a 429. */
  gate?: ServiceGate;
  /** The account the token is of (settings `accounts`), named in the User-Agent. */
  account?: string;
}

export interface ListOrdersInput {
  status?: OrderStatus;
  symbol?: string;
  from?: Date;
  to?: Date;
  limit?: number;
  page?: number;
}

/** For calls with a deadline: the buy cycle's quote window, or a worker that is stopping. */
export interface CallOptions {
  /** Aborts the call; a request not yet sent is not sent, and reads are not retried after it fires. */
  signal?: AbortSignal;
}

export type PurchaseClient = ReturnType<typeof createPurchaseClient>;

export const DEFAULT_TIMEOUTS = { connectMs: 2_000, headersMs: 5_000, bodyMs: 5_000 } as const;

export function createPurchaseClient(options: PurchaseClientOptions) {
  const transport = createTransport({
    baseUrl: options.baseUrl,
    token: options.token,
    format: options.format ?? 'json',
    connectTimeoutMs: options.timeouts?.connectMs ?? DEFAULT_TIMEOUTS.connectMs,
    headersTimeoutMs: options.timeouts?.headersMs ?? DEFAULT_TIMEOUTS.headersMs,
    bodyTimeoutMs: options.timeouts?.bodyMs ?? DEFAULT_TIMEOUTS.bodyMs,
    connections: options.connections ?? 8,
    keepAliveMs: options.keepAliveMs ?? 10_000,
    ...(options.account === undefined ? {} : { account: options.account }),
  });
  const context: ExchangeContext = {
    transport,
    token: options.token,
    retry: { ...DEFAULT_RETRY, ...options.retry },
    onRequest: options.onRequest,
    random: options.random ?? Math.random,
    sleep: options.sleep ?? ((ms) => delay(ms)),
    gate: options.gate,
  };

  function read<T>(
    operation: string,
    path: string,
    schema: z.ZodType<T>,
    query?: CallSpec['query'],
    signal?: AbortSignal,
  ) {
    const spec: CallSpec = { operation, method: 'GET', path, query, safe: true, createsOrder: false, signal };
    return exchange(context, spec, schema);
  }

  return {
    async getQuote(input: { symbol: string; amount: Decimal }, options: CallOptions = {}): Promise<Quote> {
      const symbol = checkText('getQuote', 'symbol', input.symbol);
      const amount = checkPositiveAmount('getQuote', 'amount', input.amount);
      const query = { symbols: symbol, amount: toDecimalText(amount) };
      const quote = await read('getQuote', '/client/quote', quoteSchema, query, options.signal);
      if (quote.symbol !== symbol) {
        throw new ApiBadResponseError(
          `getQuote: bad response: field symbol: the quote is for ${JSON.stringify(quote.symbol)}, not the requested ${JSON.stringify(symbol)}`,
          { operation: 'getQuote', status: 200, field: 'symbol' },
        );
      }
      return quote;
    },

    /** Never retried: a repeat could buy twice. Failures after sending raise OUTCOME_UNKNOWN. */
    async createOrder(
      input: { quoteId: string; fxRate?: string },
      options: CallOptions = {},
    ): Promise<Order> {
      const body: { quoteId: string; fxRate?: string } = {
        quoteId: checkQuoteId('createOrder', input.quoteId),
      };
      if (input.fxRate !== undefined) body.fxRate = checkFxRate('createOrder', input.fxRate);
      const spec: CallSpec = {
        operation: 'createOrder',
        method: 'POST',
        path: '/client/order',
        body,
        safe: false,
        createsOrder: true,
        signal: options.signal,
      };
      return exchange(context, spec, orderSchema);
    },

    async listOrders(input: ListOrdersInput = {}, options: CallOptions = {}): Promise<OrderPage> {
      const op = 'listOrders';
      const status =
        input.status === undefined ? undefined : checkOneOf(op, 'status', input.status, ORDER_STATUSES);
      return read(
        op,
        '/client/orders',
        orderPageSchema,
        {
          [ORDER_LIST_QUERY.status]: status,
          [ORDER_LIST_QUERY.symbol]:
            input.symbol === undefined ? undefined : checkText(op, 'symbol', input.symbol),
          [ORDER_LIST_QUERY.from]: checkDate(op, 'from', input.from),
          [ORDER_LIST_QUERY.to]: checkDate(op, 'to', input.to),
          [ORDER_LIST_QUERY.limit]: checkIntegerInRange(op, 'limit', input.limit, { min: 1 }),
          [ORDER_LIST_QUERY.page]: checkIntegerInRange(op, 'page', input.page, { min: 1 }),
        },
        options.signal,
      );
    },

    async getOrder(id: string, options: CallOptions = {}): Promise<OrderDetail> {
      const path = `/client/orders/${encodeURIComponent(checkText('getOrder', 'id', id))}`;
      return read('getOrder', path, orderDetailSchema, undefined, options.signal);
    },

    async getTracking(id: string, options: CallOptions = {}): Promise<Tracking> {
      const path = `/client/orders/${encodeURIComponent(checkText('getTracking', 'id', id))}/tracking`;
      const tracking = await read('getTracking', path, trackingSchema, undefined, options.signal);
      // Another order's record applied to this one would settle the wrong purchase.
      if (tracking.orderId !== id) {
        throw new ApiBadResponseError(
          `getTracking: bad response: field orderId: the record is for order ${JSON.stringify(tracking.orderId)}, not the requested ${JSON.stringify(id)}`,
          { operation: 'getTracking', status: 200, field: 'orderId' },
        );
      }
      return tracking;
    },

    async getBalance(options: CallOptions = {}): Promise<Balance> {
      return read('getBalance', '/client/balance', balanceSchema, undefined, options.signal);
    },

    /** Not retried: a failed registration should be seen by the caller, not repeated behind its back. */
    async setWebhookConfig(input: {
      url: string;
      methodId: string;
      active: boolean;
    }): Promise<WebhookConfig> {
      const op = 'setWebhookConfig';
      const body = buildWebhookConfigBody({
        url: checkUrl(op, 'url', input.url),
        methodId: checkText(op, 'methodId', input.methodId),
        active: checkBoolean(op, 'active', input.active),
      });
      const spec: CallSpec = {
        operation: op,
        method: 'POST',
        path: '/client/webhook/config',
        body,
        safe: false,
        createsOrder: false,
      };
      return exchange(context, spec, webhookConfigSchema);
    },

    async getWebhookConfig(): Promise<WebhookConfig> {
      return read('getWebhookConfig', '/client/webhook/config', webhookConfigSchema);
    },

    async getWebhookLogs(
      kind: string,
      input: { page?: number; limit?: number } = {},
    ): Promise<WebhookLogPage> {
      const op = 'getWebhookLogs';
      const path = `/client/webhook/${encodeURIComponent(checkText(op, 'kind', kind))}/logs`;
      return read(op, path, webhookLogPageSchema, {
        page: checkIntegerInRange(op, 'page', input.page, { min: 1 }),
        limit: checkIntegerInRange(op, 'limit', input.limit, { min: 1, max: 100 }),
      });
    },

    async getAllWebhookLogs(input: { page?: number; pageSize?: number } = {}): Promise<WebhookLogPage> {
      const op = 'getAllWebhookLogs';
      return read(op, '/client/webhook/logs', webhookLogPageSchema, {
        page: checkIntegerInRange(op, 'page', input.page, { min: 1 }),
        pageSize: checkIntegerInRange(op, 'pageSize', input.pageSize, { min: 1 }),
      });
    },

    /** Idempotent; waits for requests in flight. */
    close(): Promise<void> {
      return transport.close();
    },
  };
}
