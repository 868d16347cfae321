import type { Decimal } from '../money.js';

/**
 * The validated strategy as the rest of the program sees it. Money is `Decimal`, durations are
 * milliseconds, and the schedule is cron text: `schedule` in the file for `dca`, `checkEvery` for
 * `threshold`, one field here because the engine treats both the same way.
 */
export type Strategy = DcaStrategy | ThresholdStrategy | TargetStrategy;

export type MissedPolicy = 'skip' | 'once';

export interface StrategyBudget {
  /** Cap on the summed totalCost of placed orders per calendar day in the strategy's zone. */
  perDay?: Decimal;
  /** The same per calendar month. */
  perMonth?: Decimal;
}

export interface StrategyGuards {
  /** Available credit after the order must stay at or above this. */
  minCreditAvailable?: Decimal;
  /** (used + cost) / total × 100 must stay at or below this. */
  maxCreditUsedPct?: Decimal;
  requireCanWithdraw: boolean;
}

export type ApprovalRequirement = 'never' | 'always' | 'above';

/** Four-eyes control of a strategy's orders (the `approval:` block). */
export interface StrategyApproval {
  required: ApprovalRequirement;
  /** With `above`: an order whose cost (the quote's totalCost) is above this needs approval. */
  above?: Decimal;
  /** Distinct people who must approve a parked cycle or an envelope (an envelope's creator not counted). */
  approvers: number;
  /** A parked cycle not approved within this ends `approval_expired`. */
  timeoutMs: number;
  /** The approved cycle's fresh quote may be this percent above the parked quote's price, by default. */
  priceTolerancePct: Decimal;
}

interface StrategyCommon {
  name: string;
  /**
   * The account it buys for, as written; absent means the single account `default` (accountOf). Left out
   * of the record when not written, so that a strategy of a one-account deployment keeps its hash.
   */
  account?: string;
  symbol: string;
  /**
   * The fiat amount passed to GET /client/quote. A target's is its largest slice: the engine sizes each of its
   * slots (target.ts) and quotes that instead.
   */
  amount: Decimal;
  /** Cron text, 5 fields or 6 with seconds first. */
  schedule: string;
  /** IANA zone of the schedule and of the budget's calendar days and months. */
  timezone: string;
  /** Skip when the quoted price is above this. */
  maxPrice?: Decimal;
  /** Least time between two placed orders. */
  cooldownMs?: number;
  budget?: StrategyBudget;
  guards?: StrategyGuards;
  approval?: StrategyApproval;
  /** What to do about slots that passed while the worker was not running. */
  missed: MissedPolicy;
  /** With `missed: once`, how old the latest missed slot may be and still run. */
  missedGraceMs: number;
  enabled: boolean;
  dryRun: boolean;
  note?: string;
  /** Where the strategy was defined: the file as given and the line of its document's first key. */
  source: { file: string; line: number };
  /**
   * The number under which this configuration is recorded (strategy versions), set by the engine once
   * recorded; absent where nothing is recorded (validate, backtest). Not part of the configuration.
   */
  version?: number;
}

export interface DcaStrategy extends StrategyCommon {
  kind: 'dca';
}

export interface ThresholdStrategy extends StrategyCommon {
  kind: 'threshold';
  /** Place when the quoted price is at or below this. */
  buyBelow: Decimal;
}

/**
 * A known quantity bought by a date: fiat to spend or crypto to receive, paced over the slots of `schedule`
 * (the file's `every`) within the window, each slot's order sized by target.ts.
 */
export interface TargetStrategy extends StrategyCommon {
  kind: 'target';
  target: StrategyTarget;
}

export interface StrategyTarget {
  /** What `total` counts: the fiat spent (the orders' totalCost) or the crypto received (their totalFilled). */
  measure: 'spend' | 'receive';
  total: Decimal;
  /** Slots at or after `start` and before `end` buy; none outside. Instants, from the file's wall times. */
  start: Date;
  end: Date;
  /** Fiat per order: at least `min` (but for what is left), at most `max`. */
  slice: { min: Decimal; max: Decimal };
  /**
   * Buy up to `upTo` × the paced slice when the quoted price is at least `belowAveragePct` percent below the
   * average of the quotes seen in the window.
   */
  opportunistic?: { belowAveragePct: Decimal; upTo: Decimal };
}

/** What the rules need from GET /client/balance. */
export interface BalanceView {
  credit: { total: Decimal; used: Decimal; available: Decimal };
  canWithdraw: boolean;
  /**
   * The cost of our orders that may exist but may not be in this balance yet (in flight, unsure, or placed
   * since it was read): the guards count it as already used. Absent before quoting.
   */
  pendingCost?: Decimal;
}

/** What the rules need from a quote; `amount` is the amount the quote was requested for. */
export interface QuoteView {
  price: Decimal;
  totalCost: Decimal;
  totalFilled: Decimal;
  amount: Decimal;
}

/** The summed totalCost of this strategy's placed orders in the current budget periods. */
export interface SpentSoFar {
  day: Decimal;
  month: Decimal;
}

/** Engine-wide sanity margins for quotes, as percentages and an absolute rounding allowance. */
export interface QuoteTolerances {
  /** |totalCost − price × totalFilled| may be up to this percent of totalCost ... */
  costMismatchPct: Decimal;
  /** ... or up to this absolute amount, whichever is larger (the service rounds totalCost to cents). */
  costMismatchAbsolute: Decimal;
  /** totalCost may exceed the strategy's amount by at most this percent (fees). */
  feeAllowancePct: Decimal;
}
