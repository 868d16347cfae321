import { type Decimal, toDecimalText } from '../money.js';

/**
 * The vocabulary of decisions. Reason codes and rule names are stable: they are stored with every
 * decision, exported as metric labels and read by operators, so add new ones rather than rename.
 */

export const REASON_CODES = [
  'ok',
  'cooldown_active',
  'budget_day_exceeded',
  'budget_month_exceeded',
  'balance_unavailable',
  'credit_available_below_min',
  'credit_used_pct_above_max',
  'cannot_withdraw',
  'quote_price_invalid',
  'quote_values_invalid',
  'quote_cost_mismatch',
  'quote_cost_above_allowance',
  'quote_cost_below_amount',
  'price_above_max',
  'price_not_below_threshold',
  'price_above_approved_max',
  'target_outside_window',
  'target_reached',
  'target_would_exceed',
  'target_progress_unknown',
] as const;
export type ReasonCode = (typeof REASON_CODES)[number];

export type RuleName =
  | 'cooldown'
  | 'budget_day'
  | 'budget_month'
  | 'balance'
  | 'credit_available'
  | 'credit_used_pct'
  | 'can_withdraw'
  | 'quote_price'
  | 'quote_values'
  | 'quote_cost_consistent'
  | 'quote_cost_allowance'
  | 'quote_cost_matches_amount'
  | 'max_price'
  | 'buy_below'
  | 'approved_max_price'
  | 'target_window'
  | 'target_left'
  | 'target_total';

/** One rule's verdict for the audit trail: JSON-serializable, every number as decimal text. */
export interface RuleResult {
  rule: RuleName;
  passed: boolean;
  /** Present when the rule failed: the reason the decision reports if this is the first failure. */
  reason?: ReasonCode;
  detail: Record<string, string>;
}

export interface Decision extends Verdict {
  trace: RuleResult[];
}

/** A decision without its trace: what the backtest needs, at a fraction of the cost. */
export interface Verdict {
  action: 'place' | 'skip';
  reason: ReasonCode;
}

/**
 * Where the rules report their verdicts, in order. The rules compare once and hand over their figures as
 * a function, so that a caller that only wants the outcome (the backtest, deciding a year of slots) never
 * formats a figure: TraceLog keeps every rule with its figures for the audit trail, VerdictLog stops at the
 * first failure, which is the failure TraceLog's decision reports.
 */
export interface RuleLog {
  /** Whether to go on evaluating. `detail` is called only by a log that keeps the trace. */
  check(
    rule: RuleName,
    passed: boolean,
    failureReason: ReasonCode,
    detail: () => Record<string, string>,
  ): boolean;
}

export class TraceLog implements RuleLog {
  private readonly trace: RuleResult[] = [];

  check(
    rule: RuleName,
    passed: boolean,
    failureReason: ReasonCode,
    detail: () => Record<string, string>,
  ): boolean {
    this.trace.push(
      passed ? { rule, passed, detail: detail() } : { rule, passed, reason: failureReason, detail: detail() },
    );
    return true;
  }

  /** The first failing rule decides; a trace with none places. */
  decision(): Decision {
    const { trace } = this;
    const failed = trace.find((result) => !result.passed);
    return failed
      ? { action: 'skip', reason: failed.reason!, trace }
      : { action: 'place', reason: 'ok', trace };
  }
}

export class VerdictLog implements RuleLog {
  private failure: ReasonCode | undefined;

  check(_rule: RuleName, passed: boolean, failureReason: ReasonCode): boolean {
    if (!passed) this.failure = failureReason;
    return passed;
  }

  verdict(): Verdict {
    return this.failure === undefined
      ? { action: 'place', reason: 'ok' }
      : { action: 'skip', reason: this.failure };
  }
}

/** Decimal text for a trace; a non-finite value (only ever seen in a broken quote) is shown, not thrown. */
export function decimalDetail(value: Decimal): string {
  return value.isFinite() ? toDecimalText(value) : value.toString();
}
