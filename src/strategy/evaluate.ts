import type { Decimal } from '../money.js';
import { type Decision, decideFromTrace, type RuleResult } from './rule-result.js';
import { checkApprovedMaxPrice } from './rules-approval.js';
import { checkCreditGuards } from './rules-credit.js';
import { checkPrice, checkQuoteSanity } from './rules-quote.js';
import { checkBudgets, checkCooldown } from './rules-spend.js';
import type { BalanceView, QuoteTolerances, QuoteView, SpentSoFar, Strategy } from './types.js';

/**
 * The decision in two phases, so that the engine can skip a slot before spending a quote on it (a quote
 * is only good for 5 seconds and each one is a request to the service). Both phases evaluate every rule
 * that applies and record each in the trace; the first failing rule, in the order below, is the reason.
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
}

export interface QuoteDecisionInput extends BeforeQuoteDecisionInput {
  quote: QuoteView;
  tolerances: QuoteTolerances;
  /** Set for a cycle people approved after it parked: the highest price its fresh quote may have. */
  approvedMaxPrice?: Decimal;
}

/** Cooldown, budgets and credit guards, with the strategy's amount standing in for the unknown cost. */
export function evaluateBeforeQuote(input: BeforeQuoteDecisionInput): Decision {
  const { strategy } = input;
  return decideFromTrace(spendingRules(input, strategy.amount));
}

/**
 * Every rule with the quote's totalCost: quote sanity first, then price, then the rules of the first
 * phase again (time and balance may have moved, and the real cost may differ from the amount).
 */
export function evaluateQuote(input: QuoteDecisionInput): Decision {
  const { strategy, quote, tolerances } = input;
  const sanity = checkQuoteSanity(quote, tolerances);
  if (!sanity.trusted) return decideFromTrace(sanity.results);
  return decideFromTrace([
    ...sanity.results,
    ...checkPrice(strategy, quote.price),
    ...(input.approvedMaxPrice === undefined
      ? []
      : [checkApprovedMaxPrice(quote.price, input.approvedMaxPrice)]),
    ...spendingRules(input, quote.totalCost),
  ]);
}

function spendingRules(input: BeforeQuoteDecisionInput, cost: QuoteView['totalCost']): RuleResult[] {
  const { strategy, now, balance, spent, lastSubmittedAt } = input;
  return [
    ...checkCooldown(strategy, now, lastSubmittedAt),
    ...checkBudgets(strategy, spent, cost),
    ...checkCreditGuards(strategy, balance, cost),
  ];
}
