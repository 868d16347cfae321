import { describe, expect, it } from 'vitest';
import { decideBeforeQuote, ruleOf } from './decision-helpers.js';
import { balance, d, dca } from './strategy-builders.js';

describe('credit guards (amount 2500.00, min available 50000, max used 80%, withdrawals required)', () => {
  const strategy = dca({
    guards: { minCreditAvailable: d('50000'), maxCreditUsedPct: d('80'), requireCanWithdraw: true },
  });

  it.each([
    ['52500', true, '50000'],
    ['52499.99', false, '49999.99'],
  ])('available %s → passed %s (after %s)', (available, passed, after) => {
    const decision = decideBeforeQuote(strategy, { balance: balance('1000000', '0', available) });
    expect(ruleOf(decision, 'credit_available')).toMatchObject({
      passed,
      detail: { available, cost: '2500', after, min: '50000' },
    });
    if (!passed) expect(decision.reason).toBe('credit_available_below_min');
  });

  it.each([
    ['1000000', '797500', true, '80.0000'],
    ['1000000', '797500.01', false, '80.0001'], // 80.000001 shown rounded up
    ['0', '0', false, 'undefined (total credit is not positive)'],
  ])('total %s used %s → passed %s (%s pct)', (total, used, passed, usedPctAfter) => {
    const decision = decideBeforeQuote(strategy, { balance: balance(total, used, '1000000') });
    expect(ruleOf(decision, 'credit_used_pct')).toMatchObject({
      passed,
      detail: { total, used, cost: '2500', usedPctAfter, max: '80' },
    });
    if (!passed) expect(decision.reason).toBe('credit_used_pct_above_max');
  });

  it('refuses when withdrawals are blocked', () => {
    const decision = decideBeforeQuote(strategy, { balance: balance('1000000', '0', '1000000', false) });
    expect(decision.reason).toBe('cannot_withdraw');
    expect(ruleOf(decision, 'can_withdraw')).toEqual({
      rule: 'can_withdraw',
      passed: false,
      reason: 'cannot_withdraw',
      detail: { canWithdraw: 'false' },
    });
  });

  it('fails closed without a balance', () => {
    const decision = decideBeforeQuote(strategy);
    expect(decision).toEqual({
      action: 'skip',
      reason: 'balance_unavailable',
      trace: [{ rule: 'balance', passed: false, reason: 'balance_unavailable', detail: {} }],
    });
  });

  it('needs no balance when no guard is set', () => {
    expect(decideBeforeQuote(dca({ guards: { requireCanWithdraw: false } }))).toEqual({
      action: 'place',
      reason: 'ok',
      trace: [],
    });
  });
});
