import type { Decimal } from '../money.js';
import { formatDuration } from './duration.js';
import { decimalDetail, type RuleResult, ruleResult } from './rule-result.js';
import type { SpentSoFar, Strategy } from './types.js';

/**
 * Rules about how much and how often: the cooldown since the last placed order and the per-day and
 * per-month budgets. `cost` is the strategy's amount before a quote exists and the quote's totalCost after.
 */

export function checkCooldown(
  strategy: Strategy,
  now: Date,
  lastSubmittedAt: Date | undefined,
): RuleResult[] {
  if (strategy.cooldownMs === undefined) return [];
  const cooldown = formatDuration(strategy.cooldownMs);
  if (lastSubmittedAt === undefined) {
    return [ruleResult('cooldown', true, 'cooldown_active', { cooldown, lastSubmittedAt: 'none' })];
  }
  const elapsedMs = now.getTime() - lastSubmittedAt.getTime();
  // A last order stamped in the future (clock skew between replicas) counts as just placed.
  const remainingMs = strategy.cooldownMs - Math.max(elapsedMs, 0);
  return [
    ruleResult('cooldown', remainingMs <= 0, 'cooldown_active', {
      cooldown,
      lastSubmittedAt: lastSubmittedAt.toISOString(),
      // Rounded up so that an active cooldown never shows 0s left.
      remaining: formatDuration(Math.ceil(Math.max(remainingMs, 0) / 1000) * 1000),
    }),
  ];
}

export function checkBudgets(strategy: Strategy, spent: SpentSoFar, cost: Decimal): RuleResult[] {
  const results: RuleResult[] = [];
  const { perDay, perMonth } = strategy.budget ?? {};
  if (perDay !== undefined) {
    results.push(checkCap('budget_day', perDay, spent.day, cost));
  }
  if (perMonth !== undefined) {
    results.push(checkCap('budget_month', perMonth, spent.month, cost));
  }
  return results;
}

function checkCap(
  rule: 'budget_day' | 'budget_month',
  limit: Decimal,
  spent: Decimal,
  cost: Decimal,
): RuleResult {
  const after = spent.plus(cost);
  const reason = rule === 'budget_day' ? 'budget_day_exceeded' : 'budget_month_exceeded';
  return ruleResult(rule, after.lessThanOrEqualTo(limit), reason, {
    limit: decimalDetail(limit),
    spent: decimalDetail(spent),
    cost: decimalDetail(cost),
    after: decimalDetail(after),
  });
}
