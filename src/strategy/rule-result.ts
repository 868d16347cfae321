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
  | 'approved_max_price';

/** One rule's verdict for the audit trail: JSON-serializable, every number as decimal text. */
export interface RuleResult {
  rule: RuleName;
  passed: boolean;
  /** Present when the rule failed: the reason the decision reports if this is the first failure. */
  reason?: ReasonCode;
  detail: Record<string, string>;
}

export interface Decision {
  action: 'place' | 'skip';
  reason: ReasonCode;
  trace: RuleResult[];
}

export function ruleResult(
  rule: RuleName,
  passed: boolean,
  failureReason: ReasonCode,
  detail: Record<string, string>,
): RuleResult {
  return passed ? { rule, passed, detail } : { rule, passed, reason: failureReason, detail };
}

/** Decimal text for a trace; a non-finite value (only ever seen in a broken quote) is shown, not thrown. */
export function decimalDetail(value: Decimal): string {
  return value.isFinite() ? toDecimalText(value) : value.toString();
}

/** The first failing rule decides; a trace with none places. */
export function decideFromTrace(trace: RuleResult[]): Decision {
  const failed = trace.find((result) => !result.passed);
  return failed
    ? { action: 'skip', reason: failed.reason!, trace }
    : { action: 'place', reason: 'ok', trace };
}
