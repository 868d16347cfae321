import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Decimal } from '../../src/money.js';
import {
  type BalanceView,
  DEFAULT_QUOTE_TOLERANCES,
  evaluateBeforeQuote,
  evaluateQuote,
  type QuoteView,
  type Strategy,
  verdictBeforeQuote,
  verdictQuote,
} from '../../src/strategy/index.js';
import { dca, threshold } from './strategy-builders.js';

/**
 * The backtest decides its slots with the verdict-only evaluation; the worker records the traced one. Over
 * random strategies (every optional rule on or off), spend, balances, cooldowns and quotes (broken ones
 * too), both must give the same action and reason, including when several rules fail at once and only the
 * order of the rules says which one reports.
 */

const money = (min: number, max: number) =>
  fc.integer({ min, max }).map((cents) => new Decimal(cents).dividedBy(100));
const optional = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });

const now = new Date('2026-03-10T12:00:00.000Z');

const strategyArbitrary: fc.Arbitrary<Strategy> = fc
  .record({
    kind: fc.constantFrom('dca', 'threshold'),
    amount: money(1_000, 500_000),
    maxPrice: optional(money(500, 600)),
    buyBelow: money(500, 600),
    cooldownMs: optional(fc.integer({ min: 60_000, max: 7_200_000 })),
    perDay: optional(money(1_000, 1_000_000)),
    perMonth: optional(money(1_000, 5_000_000)),
    guards: optional(
      fc.record({
        minCreditAvailable: optional(money(0, 2_000_000)),
        maxCreditUsedPct: optional(fc.integer({ min: 1, max: 100 }).map((pct) => new Decimal(pct))),
        requireCanWithdraw: fc.boolean(),
      }),
    ),
  })
  .map(({ kind, buyBelow, perDay, perMonth, guards, maxPrice, cooldownMs, amount }) => {
    const common = {
      amount,
      ...(maxPrice && { maxPrice }),
      ...(cooldownMs !== undefined && { cooldownMs }),
      ...((perDay || perMonth) && { budget: { ...(perDay && { perDay }), ...(perMonth && { perMonth }) } }),
      ...(guards && {
        guards: {
          requireCanWithdraw: guards.requireCanWithdraw,
          ...(guards.minCreditAvailable && { minCreditAvailable: guards.minCreditAvailable }),
          ...(guards.maxCreditUsedPct && { maxCreditUsedPct: guards.maxCreditUsedPct }),
        },
      }),
    };
    return kind === 'dca' ? dca(common) : threshold({ ...common, buyBelow });
  });

const balanceArbitrary: fc.Arbitrary<BalanceView | undefined> = optional(
  fc
    .record({
      total: money(0, 2_000_000),
      used: money(0, 2_000_000),
      canWithdraw: fc.boolean(),
      pendingCost: optional(money(0, 100_000)),
    })
    .map(({ total, used, canWithdraw, pendingCost }) => ({
      credit: { total, used, available: total.minus(used) },
      canWithdraw,
      ...(pendingCost && { pendingCost }),
    })),
);

/** Mostly consistent quotes; some with a cost off the amount, a zero or a negative figure. */
const quoteArbitrary = (amount: Decimal): fc.Arbitrary<QuoteView> =>
  fc
    .record({
      price: fc.integer({ min: -100, max: 60_000 }).map((ticks) => new Decimal(ticks).dividedBy(10_000)),
      costPermille: fc.constantFrom(0, 950, 995, 1000, 1000, 1000, 1005, 1020),
      filledSkew: fc.constantFrom(0, 0, 0, 1, -1),
    })
    .map(({ price, costPermille, filledSkew }) => {
      const totalCost = amount.times(costPermille).dividedBy(1000).toDecimalPlaces(2, Decimal.ROUND_DOWN);
      const totalFilled = price.greaterThan(0)
        ? totalCost
            .dividedBy(price)
            .toDecimalPlaces(6, Decimal.ROUND_DOWN)
            .times(new Decimal(10 + filledSkew).dividedBy(10))
        : new Decimal(0);
      return { amount, price, totalCost, totalFilled };
    });

const scenario = strategyArbitrary.chain((strategy) =>
  fc.record({
    strategy: fc.constant(strategy),
    spentDay: money(0, 1_000_000),
    spentMonth: money(0, 5_000_000),
    lastSubmittedAgoMs: optional(fc.integer({ min: -60_000, max: 10_000_000 })),
    balance: balanceArbitrary,
    quote: quoteArbitrary(strategy.amount),
  }),
);

describe('the verdict-only evaluation', () => {
  it('gives the traced evaluation’s action and reason in both phases', () => {
    const reasons = new Set<string>();
    let severalFailed = 0;
    fc.assert(
      fc.property(scenario, ({ strategy, spentDay, spentMonth, lastSubmittedAgoMs, balance, quote }) => {
        const input = {
          strategy,
          now,
          spent: { day: spentDay, month: spentMonth },
          ...(balance && { balance }),
          ...(lastSubmittedAgoMs !== undefined && {
            lastSubmittedAt: new Date(now.getTime() - lastSubmittedAgoMs),
          }),
        };
        const before = evaluateBeforeQuote(input);
        expect(verdictBeforeQuote(input)).toEqual({ action: before.action, reason: before.reason });
        const withQuote = { ...input, quote, tolerances: DEFAULT_QUOTE_TOLERANCES };
        const decision = evaluateQuote(withQuote);
        expect(verdictQuote(withQuote)).toEqual({ action: decision.action, reason: decision.reason });
        reasons.add(before.reason).add(decision.reason);
        if (decision.trace.filter((rule) => !rule.passed).length > 1) severalFailed++;
      }),
      { numRuns: 2000, seed: 2026 },
    );
    // A property that never met a rule's failure, or never two at once, would pass without meaning.
    expect([...reasons].sort()).toEqual(
      [
        'ok',
        'cooldown_active',
        'budget_day_exceeded',
        'budget_month_exceeded',
        'balance_unavailable',
        'credit_available_below_min',
        'credit_used_pct_above_max',
        'cannot_withdraw',
        'quote_price_invalid',
        'quote_values_invalid',
        'quote_cost_mismatch',
        'quote_cost_above_allowance',
        'quote_cost_below_amount',
        'price_above_max',
        'price_not_below_threshold',
      ].sort(),
    );
    expect(severalFailed).toBeGreaterThan(100);
  });
});
