import type { Decimal } from '../money.js';
import { type Decision, type RuleLog, TraceLog, type Verdict, VerdictLog } from './rule-result.js';
import { checkApprovedMaxPrice } from './rules-approval.js';
import { checkCreditGuards } from './rules-credit.js';
import { checkPrice, checkQuoteSanity } from './rules-quote.js';
import { checkBudgets, checkCooldown } from './rules-spend.js';
import { checkTargetBeforeQuote, checkTargetTotal, type TargetFigures } from './target.js';
import type { BalanceView, QuoteTolerances, QuoteView, SpentSoFar, Strategy } from './types.js';

/**
 * The decision in two phases, so that the engine can skip a slot before spending a quote on it (a quote
 * is only good for 5 seconds and each one is a request to the service). Both phases evaluate every rule
 * that applies and record each in the trace; the first failing rule, in the order below, is the reason.
 * The verdict-only variants run the same rules in the same order and stop at that first failure.
 */

export interface BeforeQuoteDecisionInput {
  strategy: Strategy;
  now: Date;
  /** Required when needsBalance(strategy); without it the guards fail closed. */
  balance?: BalanceView;
  /** Summed totalCost of this strategy's intents (money that may have left) in the day and month (budgetPeriods). */
  spent: SpentSoFar;
  /** When the strategy's latest order request left (its newest intent), for the cooldown. */
  lastSubmittedAt?: Date;
  /** Required for a target (target.ts): its slot and progress; without them its rules fail closed. */
  target?: TargetFigures;
}

export interface QuoteDecisionInput extends BeforeQuoteDecisionInput {
  quote: QuoteView;
  tolerances: QuoteTolerances;
  /** Set for a cycle people approved after it parked: the highest price its fresh quote may have. */
  approvedMaxPrice?: Decimal;
}

/** Cooldown, budgets and credit guards, with the strategy's amount standing in for the unknown cost. */
export function evaluateBeforeQuote(input: BeforeQuoteDecisionInput): Decision {
  const log = new TraceLog();
  beforeQuoteRules(log, input);
  return log.decision();
}

/** evaluateBeforeQuote's action and reason, without its trace. */
export function verdictBeforeQuote(input: BeforeQuoteDecisionInput): Verdict {
  const log = new VerdictLog();
  beforeQuoteRules(log, input);
  return log.verdict();
}

/**
 * Every rule with the quote's totalCost: quote sanity first, then price, then the rules of the first
 * phase again (time and balance may have moved, and the real cost may differ from the amount).
 */
export function evaluateQuote(input: QuoteDecisionInput): Decision {
  const log = new TraceLog();
  quoteRules(log, input);
  return log.decision();
}

/** evaluateQuote's action and reason, without its trace. */
export function verdictQuote(input: QuoteDecisionInput): Verdict {
  const log = new VerdictLog();
  quoteRules(log, input);
  return log.verdict();
}

function beforeQuoteRules(log: RuleLog, input: BeforeQuoteDecisionInput): void {
  if (!checkTargetBeforeQuote(log, input.strategy, input.target, input.now)) return;
  spendingRules(log, input, input.strategy.amount);
}

function quoteRules(log: RuleLog, input: QuoteDecisionInput): void {
  const { strategy, quote, tolerances } = input;
  // An untrusted quote is judged no further, whatever the log.
  if (!checkQuoteSanity(log, quote, tolerances)) return;
  if (!checkPrice(log, strategy, quote.price)) return;
  if (
    input.approvedMaxPrice !== undefined &&
    !checkApprovedMaxPrice(log, quote.price, input.approvedMaxPrice)
  ) {
    return;
  }
  if (!checkTargetTotal(log, strategy, input.target, quote, input.now)) return;
  spendingRules(log, input, quote.totalCost);
}

function spendingRules(log: RuleLog, input: BeforeQuoteDecisionInput, cost: QuoteView['totalCost']): boolean {
  const { strategy, now, balance, spent, lastSubmittedAt } = input;
  return (
    checkCooldown(log, strategy, now, lastSubmittedAt) &&
    checkBudgets(log, strategy, spent, cost) &&
    checkCreditGuards(log, strategy, balance, cost)
  );
}
