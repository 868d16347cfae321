import { describe, expect, it } from 'vitest';
import { decideBeforeQuote, decideWithQuote, ruleOf } from './decision-helpers.js';
import { d, dca, quoteFor, threshold } from './strategy-builders.js';

describe('cooldown (1h, now 12:00Z)', () => {
  const strategy = threshold({ cooldownMs: 3_600_000 });
  it.each([
    [undefined, true, { cooldown: '1h', lastSubmittedAt: 'none' }],
    [
      '2024-06-10T11:00:00.000Z',
      true,
      { cooldown: '1h', lastSubmittedAt: '2024-06-10T11:00:00.000Z', remaining: '0s' },
    ],
    [
      '2024-06-10T11:00:00.001Z',
      false,
      { cooldown: '1h', lastSubmittedAt: '2024-06-10T11:00:00.001Z', remaining: '1s' },
    ],
    [
      '2024-06-10T11:30:00.000Z',
      false,
      { cooldown: '1h', lastSubmittedAt: '2024-06-10T11:30:00.000Z', remaining: '30m' },
    ],
    // A last order stamped in the future (clock skew) counts as just placed.
    [
      '2024-06-10T12:30:00.000Z',
      false,
      { cooldown: '1h', lastSubmittedAt: '2024-06-10T12:30:00.000Z', remaining: '1h' },
    ],
  ])('last submitted %s → passed %s', (lastSubmittedAt, passed, detail) => {
    const decision = decideBeforeQuote(strategy, lastSubmittedAt ? { lastSubmittedAt } : {});
    expect(ruleOf(decision, 'cooldown')).toEqual(
      passed
        ? { rule: 'cooldown', passed, detail }
        : { rule: 'cooldown', passed, reason: 'cooldown_active', detail },
    );
    expect(decision.reason).toBe(passed ? 'ok' : 'cooldown_active');
  });

  it('is not in the trace when the strategy has no cooldown', () => {
    expect(
      ruleOf(decideBeforeQuote(dca(), { lastSubmittedAt: '2024-06-10T11:59:59.000Z' }), 'cooldown'),
    ).toBeUndefined();
  });
});

describe('budgets (amount 2500.00, perDay 10000, perMonth 150000)', () => {
  const strategy = dca({ budget: { perDay: d('10000'), perMonth: d('150000') } });
  it.each([
    ['7500', '7500', 'ok', { limit: '10000', spent: '7500', cost: '2500', after: '10000' }],
    [
      '7500.01',
      '7500.01',
      'budget_day_exceeded',
      { limit: '10000', spent: '7500.01', cost: '2500', after: '10000.01' },
    ],
  ])('day spent %s → %s', (day, month, reason, detail) => {
    const decision = decideBeforeQuote(strategy, { spent: { day, month } });
    expect(decision.reason).toBe(reason);
    expect(ruleOf(decision, 'budget_day')?.detail).toEqual(detail);
  });

  it.each([
    ['147500', 'ok', '150000'],
    ['147500.01', 'budget_month_exceeded', '150000.01'],
  ])('month spent %s → %s (after %s)', (month, reason, after) => {
    const decision = decideBeforeQuote(strategy, { spent: { day: '0', month } });
    expect(decision.reason).toBe(reason);
    expect(ruleOf(decision, 'budget_month')?.detail.after).toBe(after);
  });

  it('reports the day before the month when both are exceeded, and records both', () => {
    const decision = decideBeforeQuote(strategy, { spent: { day: '9000', month: '149000' } });
    expect(decision.reason).toBe('budget_day_exceeded');
    expect(ruleOf(decision, 'budget_month')?.passed).toBe(false);
  });

  it('uses the quote totalCost, not the amount, once there is a quote', () => {
    // 2500.00 / 5.4321 = 460.226432 (down) → totalCost 2499.99; 7500.01 + 2499.99 = 10000.00.
    const decision = decideWithQuote(strategy, quoteFor('2500.00', '5.4321'), {
      spent: { day: '7500.01', month: '7500.01' },
    });
    expect(ruleOf(decision, 'budget_day')?.detail).toEqual({
      limit: '10000',
      spent: '7500.01',
      cost: '2499.99',
      after: '10000',
    });
    expect(decision).toMatchObject({ action: 'place', reason: 'ok' });
  });
});
