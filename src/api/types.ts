/**
 * Domain records of the purchase service as the rest of the worker sees them: money as `Decimal`, instants
 * as `Date`. Wire shapes and their validation live in `schemas.ts` and `assumptions.ts`.
 */
import type { Decimal } from '../money.js';

export const ORDER_STATUSES = ['pending', 'partial', 'paid', 'withdrawn', 'settled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const WEBHOOK_EVENT_KINDS = [
  'quote',
  'order',
  'deposit_fiat',
  'deposit_crypto',
  'withdrawal_fiat',
  'withdrawal_crypto',
] as const;
export type WebhookEventKind = (typeof WEBHOOK_EVENT_KINDS)[number];

export interface Quote {
  symbol: string;
  /** Fiat per crypto unit. */
  price: Decimal;
  /** Fiat charged. */
  totalCost: Decimal;
  /** Crypto quantity. */
  totalFilled: Decimal;
  quoteId: string;
  /**
   * As sent by the service (seconds left at issue, by assumption), exactly, absent when it sent none; the
   * worker keeps its own deadline either way.
   */
  expiresIn?: Decimal;
}

export interface Order {
  id: string;
  amount: Decimal;
  symbol: string;
  price: Decimal;
  side: string;
  timestamp: Date;
}

export interface OrderDetail extends Order {
  status: OrderStatus;
  quoteId: string;
}

/** Entries of the order list: the order record, plus status and quoteId when the service includes them. */
export interface OrderListItem extends Order {
  status?: OrderStatus;
  quoteId?: string;
}

export interface Pagination {
  page: number;
  limit: number;
  total: number;
  totalPages: number;
}

export interface OrderPage {
  data: OrderListItem[];
  pagination: Pagination;
}

/** Fields the service fills in as the withdrawal progresses are `null` until then. */
export interface Withdrawal {
  type: string;
  status: string;
  transactionId: string | null;
  token: string | null;
  network: string | null;
  fromAddress: string | null;
  toAddress: string | null;
  amount: Decimal | null;
  blockNumber: string | null;
  finishedAt: Date | null;
}

export interface Tracking {
  orderId: string;
  settlementStatus: OrderStatus;
  expectedAmount: Decimal;
  receivedAmount: Decimal;
  withdrawnAmount: Decimal;
  withdrawal: Withdrawal | null;
}

export interface CurrencyBalance {
  currency: string;
  balance: Decimal;
}

export interface Balance {
  fiat: CurrencyBalance;
  crypto: CurrencyBalance;
  credit: { total: Decimal; used: Decimal; available: Decimal };
  canWithdraw: boolean;
}

export interface WebhookEventSwitch {
  methodId: string;
  active: boolean;
}

export interface WebhookConfig {
  url: string;
  events: WebhookEventSwitch[];
}

export interface WebhookLogEntry {
  id: string;
  methodId: string;
  url: string;
  /** `null` when the delivery failed before an HTTP answer. */
  statusCode: number | null;
  success: boolean;
  attempt: number;
  payload: unknown;
  createdAt: Date;
}

export interface WebhookLogPage {
  data: WebhookLogEntry[];
  pagination: Pagination;
}

export interface Deposit {
  orderId: string;
  amount: Decimal;
  currency: string;
  receivedAt: Date;
}

export interface WithdrawalEventData extends Withdrawal {
  orderId: string;
}

export type WebhookEvent =
  | { event: 'order'; data: Order }
  | { event: 'quote'; data: Quote }
  | { event: 'deposit_fiat' | 'deposit_crypto'; data: Deposit }
  | { event: 'withdrawal_fiat' | 'withdrawal_crypto'; data: WithdrawalEventData };
