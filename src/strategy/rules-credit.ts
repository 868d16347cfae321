import { type Decimal, formatMoney } from '../money.js';
import { decimalDetail, type RuleLog } from './rule-result.js';
import type { BalanceView, Strategy } from './types.js';

/**
 * The credit guards, read from the balance before quoting and again with the quote's totalCost. They
 * judge the position AFTER this order: what would be left available, and what share would be used.
 */

/** Whether the strategy's guards need GET /client/balance (the engine skips the call otherwise). */
export function needsBalance(strategy: Strategy): boolean {
  const guards = strategy.guards;
  if (guards === undefined) return false;
  return (
    guards.minCreditAvailable !== undefined ||
    guards.maxCreditUsedPct !== undefined ||
    guards.requireCanWithdraw
  );
}

export function checkCreditGuards(
  log: RuleLog,
  strategy: Strategy,
  balance: BalanceView | undefined,
  cost: Decimal,
): boolean {
  if (!needsBalance(strategy)) return true;
  // Fail closed: a guard that cannot be checked must not let an order through.
  if (balance === undefined) return log.check('balance', false, 'balance_unavailable', () => ({}));
  const { minCreditAvailable, maxCreditUsedPct, requireCanWithdraw } = strategy.guards!;
  const { credit, pendingCost } = balance;
  // Orders of ours the balance may not show yet count as spent: two cycles judged on one balance read
  // must not both pass a floor that fits only one of them.
  const available = pendingCost === undefined ? credit.available : credit.available.minus(pendingCost);
  const used = pendingCost === undefined ? credit.used : credit.used.plus(pendingCost);
  if (minCreditAvailable !== undefined) {
    const after = available.minus(cost);
    const goOn = log.check(
      'credit_available',
      after.greaterThanOrEqualTo(minCreditAvailable),
      'credit_available_below_min',
      () => ({
        available: decimalDetail(credit.available),
        ...(pendingCost === undefined ? {} : { pending: decimalDetail(pendingCost) }),
        cost: decimalDetail(cost),
        after: decimalDetail(after),
        min: decimalDetail(minCreditAvailable),
      }),
    );
    if (!goOn) return false;
  }
  if (maxCreditUsedPct !== undefined && !checkUsedShare(log, { ...credit, used }, cost, maxCreditUsedPct)) {
    return false;
  }
  return (
    !requireCanWithdraw ||
    log.check('can_withdraw', balance.canWithdraw, 'cannot_withdraw', () => ({
      canWithdraw: String(balance.canWithdraw),
    }))
  );
}

/**
 * (used + cost) / total × 100 ≤ max, compared as (used + cost) × 100 ≤ max × total so that no division
 * rounds. A credit line with no total (zero or less) has no share to spare and fails.
 */
function checkUsedShare(
  log: RuleLog,
  credit: BalanceView['credit'],
  cost: Decimal,
  maxPct: Decimal,
): boolean {
  const usedAfter = credit.used.plus(cost);
  const hasTotal = credit.total.greaterThan(0);
  const passed = hasTotal && usedAfter.times(100).lessThanOrEqualTo(maxPct.times(credit.total));
  return log.check('credit_used_pct', passed, 'credit_used_pct_above_max', () => ({
    total: decimalDetail(credit.total),
    used: decimalDetail(credit.used),
    cost: decimalDetail(cost),
    // Shown rounded up, so that a share just over the limit never displays as exactly the limit.
    usedPctAfter: hasTotal
      ? formatMoney(usedAfter.times(100).dividedBy(credit.total), 4, 'up')
      : 'undefined (total credit is not positive)',
    max: decimalDetail(maxPct),
  }));
}
