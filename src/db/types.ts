/**
 * Domain records of the persistence layer: what the rest of the worker sees. Money is `Decimal`, time is
 * `Date`, absent values are `null`. Drizzle row types never leave src/db/.
 */
import type { Decimal } from '../money.js';
import type { CycleState } from './cycle-transitions.js';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface StrategySeen {
  name: string;
  kind: string;
  /** The account it buys for (`default` for a strategy of a one-account deployment naming none). */
  account: string;
  /** The validated configuration, money as decimal text, as it will be stored (jsonb). */
  config: JsonValue;
  hash: string;
}

export interface StrategyRecord extends StrategySeen {
  firstSeenAt: Date;
  lastSeenAt: Date;
  /** Set when reconciliation could not tell what happened: automation stays off until an operator clears it. */
  haltedAt: Date | null;
  haltReason: string | null;
}

export type { CycleState };

export const CYCLE_TRIGGERS = ['schedule', 'once', 'missed'] as const;
export type CycleTrigger = (typeof CYCLE_TRIGGERS)[number];

export interface Cycle {
  id: number;
  strategy: string;
  /** The account the cycle buys for (its strategy's, when it was claimed). */
  account: string;
  slot: Date;
  trigger: CycleTrigger;
  state: CycleState;
  /** Replica id that claimed the slot. */
  owner: string;
  /** Order requests sent for this slot (incremented on every move into `submitting`). */
  attempts: number;
  reasonCode: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  /** The quote the cycle currently acts on: its record, the service's quoteId and its figures. */
  quoteRecordId: number | null;
  quoteId: string | null;
  amount: Decimal | null;
  price: Decimal | null;
  totalCost: Decimal | null;
  balanceSnapshotId: number | null;
  /** Every rule's result, as the decision saw it. */
  trace: JsonValue | null;
  serviceOrderId: string | null;
  claimedAt: Date;
  updatedAt: Date;
  /** When the (last) order request was about to leave: the moment money may have started to move. */
  submittedAt: Date | null;
  finishedAt: Date | null;
  leaseOwner: string | null;
  leaseUntil: Date | null;
  /** What the service's record of the cycle's order says differently from the request and quote. */
  discrepancy: FigureDifference[] | null;
  /** The envelope the order was charged to, when it needed approval and fitted one. */
  envelopeId: number | null;
  /** The strategy version it ran under; null for cycles from before versions were recorded. */
  strategyVersion: number | null;
}

/** One figure of an order the service reports differently from what the cycle asked and was quoted. */
export interface FigureDifference {
  field: string;
  expected: string;
  got: string;
}

export interface ClaimSlotInput {
  strategy: string;
  account: string;
  /** The strategy version the cycle runs under; absent for a strategy built in code (tests, tools). */
  strategyVersion?: number | null;
  slot: Date;
  trigger: CycleTrigger;
  owner: string;
}

/** Columns a transition may set; `undefined` leaves a column as it is, `null` clears it. */
export interface CyclePatch {
  reasonCode?: string | null;
  errorCode?: string | null;
  errorMessage?: string | null;
  /** Sets quoteRecordId, quoteId, amount, price and totalCost from the recorded quote. */
  quote?: QuoteRecord;
  balanceSnapshotId?: number | null;
  trace?: JsonValue | null;
  serviceOrderId?: string | null;
}

export interface QuoteInput {
  quoteId: string;
  symbol: string;
  amount: Decimal;
  price: Decimal;
  totalCost: Decimal;
  totalFilled: Decimal;
  /** The service's raw value, digit for digit (numeric column); null when it sent none. */
  expiresIn: Decimal | null;
  requestedAt: Date;
  receivedAt: Date;
  /** The worker's own deadline for using the quote (send time + window − margin). */
  deadlineAt: Date;
}

export interface QuoteRecord extends QuoteInput {
  id: number;
  cycleId: number | null;
}

export const SETTLEMENT_STATUSES = ['pending', 'partial', 'paid', 'withdrawn', 'settled'] as const;
export type SettlementStatus = (typeof SETTLEMENT_STATUSES)[number];

export const SETTLEMENT_SOURCES = ['poll', 'webhook', 'reconcile', 'create'] as const;
export type SettlementSource = (typeof SETTLEMENT_SOURCES)[number];

export type OrderOrigin = 'cycle' | 'external';

/** The order as the service returned it on creation or in its order list. */
export interface ServiceOrder {
  /** The account whose service holds the order: an order id is unique only within one account. */
  account: string;
  id: string;
  symbol: string;
  amount: Decimal;
  price: Decimal;
  side: string;
  timestamp: Date;
  quoteId?: string | null;
  /** Present when the order was read back (get/list); creation implies `pending`. */
  status?: SettlementStatus;
}

/** One answer of the tracking endpoint, already validated. */
export interface TrackingSnapshot {
  status: SettlementStatus;
  expectedAmount: Decimal | null;
  receivedAmount: Decimal | null;
  withdrawnAmount: Decimal | null;
  /** Withdrawal details as received (Decimals and Dates are stored as text). */
  withdrawal: unknown;
}

export interface OrderRecord {
  id: number;
  account: string;
  serviceOrderId: string;
  cycleId: number | null;
  origin: OrderOrigin;
  quoteId: string | null;
  symbol: string;
  amount: Decimal;
  price: Decimal;
  side: string;
  serviceTimestamp: Date;
  status: SettlementStatus;
  expectedAmount: Decimal | null;
  receivedAmount: Decimal | null;
  withdrawnAmount: Decimal | null;
  lastTracking: JsonValue | null;
  createdAt: Date;
  updatedAt: Date;
  lastProgressAt: Date;
  nextCheckAt: Date;
  leaseOwner: string | null;
  leaseUntil: Date | null;
  stuckFlaggedAt: Date | null;
  settledAt: Date | null;
}

export interface SettlementEvent {
  id: number;
  orderId: number;
  source: SettlementSource;
  fromStatus: SettlementStatus | null;
  toStatus: SettlementStatus;
  expectedAmount: Decimal | null;
  receivedAmount: Decimal | null;
  withdrawnAmount: Decimal | null;
  withdrawal: JsonValue | null;
  anomaly: string | null;
  recordedAt: Date;
}

export type WebhookEventStatus = 'pending' | 'processed' | 'unknown_order';

export interface WebhookEventInput {
  /** The account whose path (and secret) the event arrived on: its order ids are that account's. */
  account: string;
  dedupeKey: string;
  kind: string;
  serviceOrderId: string | null;
  payload: unknown;
  receivedAt: Date;
}

export interface WebhookEventRecord extends Omit<WebhookEventInput, 'payload'> {
  id: number;
  payload: JsonValue;
  processedAt: Date | null;
  status: WebhookEventStatus;
}

/** A stored event as the sweep sees it: what it acts on, never the payload (kept for review only). */
export type WebhookEventToRetry = Omit<WebhookEventRecord, 'payload'>;

export interface BalanceInput {
  /** The account whose balance the service reported. */
  account: string;
  fiat: { currency: string; balance: Decimal };
  crypto: { currency: string; balance: Decimal };
  credit: { total: Decimal; used: Decimal; available: Decimal };
  canWithdraw: boolean;
  takenAt: Date;
  cycleId?: number | null;
}

export interface BalanceSnapshot extends BalanceInput {
  id: number;
  cycleId: number | null;
}

export interface ControlState {
  paused: boolean;
  reason: string | null;
  changedAt: Date | null;
  changedBy: string | null;
}

/**
 * The accounts a caller may reach (issue 35), made once at the edge (an API token's list, later a person's)
 * and handed whole to the reads and acts below it; null: every account.
 */
export interface AccountScope {
  readonly accounts: readonly string[] | null;
}

/** The account of every record of a deployment of one account (the single `api:` block of the settings). */
export const DEFAULT_ACCOUNT = 'default';

/** Whether the scope reaches the account; every record of a single-account database is DEFAULT_ACCOUNT's. */
export function inScope(scope: AccountScope, account: string = DEFAULT_ACCOUNT): boolean {
  return scope.accounts === null || scope.accounts.includes(account);
}
