import type { Decimal } from '../money.js';
import { formatDuration } from './duration.js';
import { decimalDetail, type RuleLog } from './rule-result.js';
import type { SpentSoFar, Strategy } from './types.js';

/**
 * Rules about how much and how often: the cooldown since the last placed order and the per-day and
 * per-month budgets. `cost` is the strategy's amount before a quote exists and the quote's totalCost after.
 * Each returns whether the log goes on (see RuleLog).
 */

export function checkCooldown(
  log: RuleLog,
  strategy: Strategy,
  now: Date,
  lastSubmittedAt: Date | undefined,
): boolean {
  const { cooldownMs } = strategy;
  if (cooldownMs === undefined) return true;
  if (lastSubmittedAt === undefined) {
    return log.check('cooldown', true, 'cooldown_active', () => ({
      cooldown: formatDuration(cooldownMs),
      lastSubmittedAt: 'none',
    }));
  }
  const elapsedMs = now.getTime() - lastSubmittedAt.getTime();
  // A last order stamped in the future (clock skew between replicas) counts as just placed.
  const remainingMs = cooldownMs - Math.max(elapsedMs, 0);
  return log.check('cooldown', remainingMs <= 0, 'cooldown_active', () => ({
    cooldown: formatDuration(cooldownMs),
    lastSubmittedAt: lastSubmittedAt.toISOString(),
    // Rounded up so that an active cooldown never shows 0s left.
    remaining: formatDuration(Math.ceil(Math.max(remainingMs, 0) / 1000) * 1000),
  }));
}

export function checkBudgets(log: RuleLog, strategy: Strategy, spent: SpentSoFar, cost: Decimal): boolean {
  const { perDay, perMonth } = strategy.budget ?? {};
  return (
    (perDay === undefined || checkCap(log, 'budget_day', perDay, spent.day, cost)) &&
    (perMonth === undefined || checkCap(log, 'budget_month', perMonth, spent.month, cost))
  );
}

function checkCap(
  log: RuleLog,
  rule: 'budget_day' | 'budget_month',
  limit: Decimal,
  spent: Decimal,
  cost: Decimal,
): boolean {
  const after = spent.plus(cost);
  const reason = rule === 'budget_day' ? 'budget_day_exceeded' : 'budget_month_exceeded';
  return log.check(rule, after.lessThanOrEqualTo(limit), reason, () => ({
    limit: decimalDetail(limit),
    spent: decimalDetail(spent),
    cost: decimalDetail(cost),
    after: decimalDetail(after),
  }));
}
