import { type Decision, decideFromTrace, type RuleResult } from './rule-result.js';
import { checkCreditGuards } from './rules-credit.js';
import { checkPrice, checkQuoteSanity } from './rules-quote.js';
import { checkBudgets, checkCooldown } from './rules-spend.js';
import type { BalanceView, QuoteTolerances, QuoteView, SpentSoFar, Strategy } from './types.js';

/**
 * The decision in two phases, so that the engine can skip a slot before spending a quote on it (a quote
 * is only good for 5 seconds and each one is a request to the service). Both phases evaluate every rule
 * that applies and record each in the trace; the first failing rule, in the order below, is the reason.
 */

export interface BeforeQuoteInput {
  strategy: Strategy;
  now: Date;
  /** Required when needsBalance(strategy); without it the guards fail closed. */
  balance?: BalanceView;
  /** Summed totalCost of this strategy's placed orders in the current day and month (budgetPeriods). */
  spent: SpentSoFar;
  lastPlacedAt?: Date;
}

export interface QuoteInput extends BeforeQuoteInput {
  quote: QuoteView;
  tolerances: QuoteTolerances;
}

/** Cooldown, budgets and credit guards, with the strategy's amount standing in for the unknown cost. */
export function evaluateBeforeQuote(input: BeforeQuoteInput): Decision {
  const { strategy } = input;
  return decideFromTrace(spendingRules(input, strategy.amount));
}

/**
 * Every rule with the quote's totalCost: quote sanity first, then price, then the rules of the first
 * phase again (time and balance may have moved, and the real cost may differ from the amount).
 */
export function evaluateQuote(input: QuoteInput): Decision {
  const { strategy, quote, tolerances } = input;
  const sanity = checkQuoteSanity(quote, tolerances);
  if (!sanity.trusted) return decideFromTrace(sanity.results);
  return decideFromTrace([
    ...sanity.results,
    ...checkPrice(strategy, quote.price),
    ...spendingRules(input, quote.totalCost),
  ]);
}

function spendingRules(input: BeforeQuoteInput, cost: QuoteView['totalCost']): RuleResult[] {
  const { strategy, now, balance, spent, lastPlacedAt } = input;
  return [
    ...checkCooldown(strategy, now, lastPlacedAt),
    ...checkBudgets(strategy, spent, cost),
    ...checkCreditGuards(strategy, balance, cost),
  ];
}
