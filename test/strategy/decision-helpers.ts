import {
  type BalanceView,
  DEFAULT_QUOTE_TOLERANCES,
  type Decision,
  evaluateBeforeQuote,
  evaluateQuote,
  type QuoteView,
  type RuleName,
  type Strategy,
} from '../../src/strategy/index.js';
import { d } from './strategy-builders.js';

/** Calls into the two decision phases with a fixed clock and readable decimal-text inputs. */

export const now = new Date('2024-06-10T12:00:00.000Z');
const nothingSpent = { day: d('0'), month: d('0') };

export function ruleOf(decision: Decision, rule: RuleName) {
  return decision.trace.find((result) => result.rule === rule);
}

export function decideBeforeQuote(
  strategy: Strategy,
  extra: { spent?: { day: string; month: string }; balance?: BalanceView; lastSubmittedAt?: string } = {},
) {
  return evaluateBeforeQuote({
    strategy,
    now,
    spent: extra.spent ? { day: d(extra.spent.day), month: d(extra.spent.month) } : nothingSpent,
    ...(extra.balance && { balance: extra.balance }),
    ...(extra.lastSubmittedAt && { lastSubmittedAt: new Date(extra.lastSubmittedAt) }),
  });
}

export function decideWithQuote(
  strategy: Strategy,
  quote: QuoteView,
  extra: { spent?: { day: string; month: string }; balance?: BalanceView } = {},
  tolerances = DEFAULT_QUOTE_TOLERANCES,
) {
  return evaluateQuote({
    strategy,
    now,
    quote,
    tolerances,
    spent: extra.spent ? { day: d(extra.spent.day), month: d(extra.spent.month) } : nothingSpent,
    ...(extra.balance && { balance: extra.balance }),
  });
}
