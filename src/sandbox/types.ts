import type { OrderStatus } from '../api/types.js';
import type { PriceSeries } from '../backtest/price-series.js';
import type { Logger } from '../observability/logger.js';

/**
 * The protocol's vocabulary: the five order statuses (in lifecycle order) and the six webhook event kinds
 * (each one a `methodId`, per the assumptions table) are those of the service reference, so the simulator
 * takes the very lists the client checks answers against: the two ends of the wire cannot come to disagree
 * on a name. Only the names are shared; what the sandbox does with them (lifecycle, payloads, faults) stays
 * its own, and it still talks to the worker only over HTTP.
 */
export { ORDER_STATUSES, WEBHOOK_EVENT_KINDS, type WebhookEventKind } from '../api/types.js';
export type { OrderStatus };

export const ROUTE_NAMES = [
  'quote',
  'createOrder',
  'listOrders',
  'getOrder',
  'tracking',
  'balance',
  'setWebhookConfig',
  'getWebhookConfig',
  'webhookLogsById',
  'webhookLogs',
] as const;
export type RouteName = (typeof ROUTE_NAMES)[number];

export const MALFORMED_KINDS = [
  'syntax',
  'truncate',
  'types',
  'nan-price',
  'negative-price',
  // Answers that read fine but are not what was asked, or carry fields out of their range.
  'other-symbol',
  'short-quote-id',
  'negative-expires',
  'huge-expires',
  'no-expires',
  'other-order-id',
] as const;
export type MalformedKind = (typeof MALFORMED_KINDS)[number];

export interface RouteFaults {
  /** Added to every response of the route. */
  latencyMs?: number;
  /** 0..1: answer 500 (before any side effect). */
  errorRate?: number;
  /** 0..1: destroy the socket without answering (no side effect). */
  resetRate?: number;
  /** 0..1 of responses delayed by slowMs (e.g. 6000, longer than the quote window). */
  slowRate?: number;
  slowMs?: number;
  /** 0..1 of responses replaced by a malformed body of the given kind (default 'syntax'). */
  malformedRate?: number;
  malformed?: MalformedKind;
  /**
   * Orders answered (list items and details) with this figure off by one in its last digit, as a service
   * that rounds amounts or carries more price digits than the quote would.
   */
  driftFigure?: 'price' | 'amount';
  /** Orders answered without their quoteId, as a service whose list does not carry it. */
  omitQuoteId?: boolean;
  /**
   * Requests per second (per route, or for all routes under '*') above which the service answers 429 with a
   * Retry-After of `retryAfterSeconds` (default 1), as delay-seconds or, with `retryAfter: 'date'`, an HTTP date.
   */
  rateLimit?: number;
  retryAfter?: 'seconds' | 'date';
  retryAfterSeconds?: number;
  /** createOrder only: create the order, then destroy the socket. */
  acceptThenDropRate?: number;
}

export type FaultConfig = Partial<Record<RouteName | '*', RouteFaults>>;

export interface SandboxOptions {
  /** Default 0 (ephemeral) in-process; the CLI defaults to 8080. */
  port?: number;
  host?: string;
  /** Full-access tokens; default [DEMO_TOKEN]. */
  tokens?: string[];
  /** Read-only tokens. */
  readTokens?: string[];
  /** Token of the control API; default tokens[0]. */
  adminToken?: string;
  /** Lifecycle step interval per order; 0 = only when stepped through the control API. Default 1000. */
  stepMs?: number;
  seed?: number;
  /** Decimal text, centre of the price random walk; default '5.4000'. */
  price?: string;
  /**
   * Quote from a recorded series instead of the walk, `speed` times faster than the sandbox's clock, its
   * first row at clock reading `origin` (default: when the sandbox starts).
   */
  replay?: { series: PriceSeries; speed: number; origin?: number };
  webhookFormat?: 'json' | 'msgpack';
  /** Delays before each retry; default [500, 2000, 5000] (3 retries). */
  webhookRetryDelaysMs?: number[];
  /** Decimal text; default '1000000.00'. */
  creditLimit?: string;
  faults?: FaultConfig;
  /** Clock in ms; tests pass a fake clock to test expiry without waiting. */
  now?: () => number;
  logger?: Logger;
  /** Request body size limit in bytes; default 64 KiB. */
  bodyLimit?: number;
}

/** One order as the sandbox's own books see it: money as decimal text. */
export interface SandboxOrderView {
  id: string;
  quoteId: string;
  symbol: string;
  side: 'BUY';
  status: OrderStatus;
  amount: string;
  price: string;
  totalCost: string;
  totalFilled: string;
  createdAt: string;
  updatedAt: string;
  history: { status: OrderStatus; at: string }[];
}

export interface RunningSandbox {
  /** http://HOST:PORT, no trailing slash. */
  url: string;
  port: number;
  /** Replaces the fault config. */
  setFaults(faults: FaultConfig): void;
  /** Advances one lifecycle step and emits its event. */
  step(orderId: string): Promise<void>;
  ledger(): SandboxOrderView[];
  /** Idempotent; stops timers and webhook deliveries. */
  close(): Promise<void>;
}
