import { describe, expect, it } from 'vitest';
import { Decimal } from '../../src/money.js';
import { DEFAULT_QUOTE_TOLERANCES, type QuoteView } from '../../src/strategy/index.js';
import { decideWithQuote, ruleOf } from './decision-helpers.js';
import { balance, d, dca, quoteFor, threshold } from './strategy-builders.js';

describe('quote sanity (amount 2500.00, default tolerances: 0.5% or 0.01, fees 1%)', () => {
  const strategy = dca();
  const quote = (price: string, totalCost: string, totalFilled: string): QuoteView => ({
    amount: d('2500.00'),
    price: new Decimal(price),
    totalCost: new Decimal(totalCost),
    totalFilled: new Decimal(totalFilled),
  });

  it.each([
    ['0', 'quote_price_invalid'],
    ['-5.4', 'quote_price_invalid'],
    ['NaN', 'quote_price_invalid'],
    ['Infinity', 'quote_price_invalid'],
  ])('price %s → %s, and nothing else is judged', (price, reason) => {
    const decision = decideWithQuote(strategy, quote(price, '2499.99', '462.96'));
    expect(decision.reason).toBe(reason);
    expect(decision.trace.map((result) => result.rule)).toEqual(['quote_price', 'quote_values']);
    expect(ruleOf(decision, 'quote_price')?.detail).toEqual({ price });
  });

  it.each([
    ['0', '462.96'],
    ['2499.99', '0'],
    ['-1', '462.96'],
  ])('totalCost %s, totalFilled %s → quote_values_invalid', (totalCost, totalFilled) => {
    expect(decideWithQuote(strategy, quote('5.40', totalCost, totalFilled)).reason).toBe(
      'quote_values_invalid',
    );
  });

  it.each([
    // price × filled = 5.40 × 462.962962 = 2499.9999948
    ['2499.99', '0', true, '0.0099948', '0.01'],
    ['2499.98', '0', false, '0.0199948', '0.01'],
    ['2512.56', '0.5', true, '12.5600052', '12.5628'],
    ['2487.5', '0.5', false, '12.4999948', '12.4375'],
  ])(
    'totalCost %s, tolerance pct %s → consistent %s (difference %s, tolerance %s)',
    (totalCost, pct, passed, difference, tolerance) => {
      const tolerances = { ...DEFAULT_QUOTE_TOLERANCES, costMismatchPct: d(pct), feeAllowancePct: d('5') };
      const decision = decideWithQuote(strategy, quote('5.40', totalCost, '462.962962'), {}, tolerances);
      expect(ruleOf(decision, 'quote_cost_consistent')).toMatchObject({
        passed,
        detail: { totalCost, priceTimesFilled: '2499.9999948', difference, tolerance },
      });
      expect(decision.reason).toBe(passed ? 'ok' : 'quote_cost_mismatch');
    },
  );

  it.each([
    ['2525', true],
    ['2525.01', false],
  ])(
    'totalCost %s against amount 2500.00 plus 1 pct fees (2525) → within allowance %s',
    (totalCost, passed) => {
      const decision = decideWithQuote(strategy, quote('5.05', totalCost, '500'));
      expect(ruleOf(decision, 'quote_cost_allowance')).toMatchObject({
        passed,
        detail: { totalCost, amount: '2500', feeAllowancePct: '1', limit: '2525' },
      });
      expect(decision.reason).toBe(passed ? 'ok' : 'quote_cost_above_allowance');
    },
  );

  // A quote for far less than asked is another request than ours, not a bargain.
  it.each([
    ['2475', true],
    ['2474.99', false],
  ])('totalCost %s against amount 2500.00 less 1 pct (2475) → matches the amount %s', (totalCost, passed) => {
    const decision = decideWithQuote(strategy, quote('4.95', totalCost, '500'));
    expect(ruleOf(decision, 'quote_cost_matches_amount')).toMatchObject({
      passed,
      detail: { totalCost, amount: '2500', feeAllowancePct: '1', floor: '2475' },
    });
    expect(decision.reason).toBe(passed ? 'ok' : 'quote_cost_below_amount');
  });
});

describe('price rules', () => {
  it.each([
    ['5.9', 'ok'],
    ['5.9001', 'price_above_max'],
  ])('maxPrice 5.90, price %s → %s', (price, reason) => {
    const decision = decideWithQuote(dca({ maxPrice: d('5.90') }), quoteFor('2500.00', price));
    expect(decision.reason).toBe(reason);
    expect(ruleOf(decision, 'max_price')?.detail).toEqual({ price, maxPrice: '5.9' });
  });

  it.each([
    ['5.3', 'ok'],
    ['5.2999', 'ok'],
    ['5.3001', 'price_not_below_threshold'],
  ])('buyBelow 5.30, price %s → %s', (price, reason) => {
    const decision = decideWithQuote(threshold(), quoteFor('10000', price));
    expect(decision.reason).toBe(reason);
    expect(ruleOf(decision, 'buy_below')?.detail).toEqual({ price, buyBelow: '5.3' });
  });

  it('a price failure outranks a spending failure, and both are in the trace', () => {
    const strategy = dca({ maxPrice: d('5.00'), budget: { perDay: d('2500') } });
    const decision = decideWithQuote(strategy, quoteFor('2500.00', '5.40'), {
      spent: { day: '100', month: '100' },
    });
    expect(decision.reason).toBe('price_above_max');
    expect(decision.trace.filter((result) => !result.passed).map((result) => result.rule)).toEqual([
      'max_price',
      'budget_day',
    ]);
  });
});

describe('decisions', () => {
  it('place with every configured rule in the trace, in a fixed order, as JSON-safe decimal text', () => {
    const strategy = threshold({
      maxPrice: d('5.50'),
      cooldownMs: 60_000,
      budget: { perDay: d('50000'), perMonth: d('500000') },
      guards: { minCreditAvailable: d('0'), maxCreditUsedPct: d('90'), requireCanWithdraw: true },
    });
    const decision = decideWithQuote(strategy, quoteFor('10000', '5.2500'), {
      balance: balance('1000000', '0', '1000000'),
    });
    expect(decision.action).toBe('place');
    expect(decision.trace.map((result) => result.rule)).toEqual([
      'quote_price',
      'quote_values',
      'quote_cost_consistent',
      'quote_cost_allowance',
      'quote_cost_matches_amount',
      'max_price',
      'buy_below',
      'cooldown',
      'budget_day',
      'budget_month',
      'credit_available',
      'credit_used_pct',
      'can_withdraw',
    ]);
    expect(JSON.parse(JSON.stringify(decision))).toEqual(decision);
    expect(ruleOf(decision, 'credit_available')?.detail.after).toBe('990000.01'); // totalCost 9999.99
  });
});
