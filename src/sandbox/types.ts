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

/** One account of a sandbox that serves several: its own orders, quotes, credit line and webhooks. */
export interface SandboxAccountOptions {
  /** Lowercase letters, digits and hyphens; unique. */
  name: string;
  /** The account's full-access token: a request carrying it acts on this account. */
  token: string;
  /** Read-only tokens of this account. */
  readTokens?: string[];
  /** Decimal text; default the sandbox's `creditLimit`. */
  creditLimit?: string;
}

export interface SandboxOptions {
  /** Default 0 (ephemeral) in-process; the CLI defaults to 8080. */
  port?: number;
  host?: string;
  /**
   * Several accounts, each selected by its tokens; the first is the control API's default. Not together
   * with `tokens`/`readTokens`, which make one account named `default`.
   */
  accounts?: SandboxAccountOptions[];
  /** Full-access tokens of the one account; default [DEMO_TOKEN]. */
  tokens?: string[];
  /** Read-only tokens of the one account. */
  readTokens?: string[];
  /** Token of the control API; default the first account's first token. */
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
  /** Decimal text, the credit line of every account without its own; default '1000000.00'. */
  creditLimit?: string;
  faults?: FaultConfig;
  /** Clock in ms; tests pass a fake clock to test expiry without waiting. */
  now?: () => number;
  logger?: Logger;
  /** Request body size limit in bytes; default 64 KiB. */
  bodyLimit?: number;
  /** How many of the last requests' credentials the request log keeps; default 1000. */
  requestLogSize?: number;
}

/** One request as the request log keeps it: never the credential, only its fingerprint. */
export interface SandboxRequestRecord {
  /** ISO 8601, by the sandbox's clock. */
  at: string;
  method: string;
  /** Without the query string. */
  path: string;
  /** The account whose token it carried; "unknown" for none (no token, an unknown one, the control API's own). */
  account: string;
  /** SHA-256 (hex) of the bearer token (of the whole Authorization header when it is not "Bearer <token>"); null without one. */
  credential: string | null;
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
  /** The names of the accounts, in the order given; `['default']` for a sandbox started with tokens. */
  accounts: readonly string[];
  /** Advances one lifecycle step of an order of any account and emits its event. */
  step(orderId: string): Promise<void>;
  /** The orders of one account; default the first. */
  ledger(account?: string): SandboxOrderView[];
  /** The last requests' credentials, oldest first (see `requestLogSize`). */
  requests(): SandboxRequestRecord[];
  /** Idempotent; stops timers and webhook deliveries. */
  close(): Promise<void>;
}
