import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Decimal } from '../../src/money.js';
import {
  budgetPeriods,
  DEFAULT_QUOTE_TOLERANCES,
  evaluateBeforeQuote,
  evaluateQuote,
  type QuoteView,
} from '../../src/strategy/index.js';
import { dca } from './strategy-builders.js';

/**
 * Simulates an engine that asks the rules before and after quoting, over random sequences of slots and
 * quotes, with spend accumulating only on 'place'. Whatever the sequence, no calendar day or month of the
 * strategy's zone may end up above its cap. The days and months are judged by the zone's own wall clock
 * (Intl), not by budgetPeriods, so that periods cut in the wrong zone would show as an overspent day.
 */

const cents = (min: number, max: number) =>
  fc.integer({ min, max }).map((value) => new Decimal(value).dividedBy(100));

const scenario = fc
  .record({
    amount: cents(100, 500_000),
    dayFactor: fc.integer({ min: 100, max: 600 }), // perDay = amount × factor / 100
    monthFactor: fc.integer({ min: 100, max: 2000 }), // perMonth = perDay × factor / 100
    zone: fc.constantFrom('America/New_York', 'America/Sao_Paulo', 'Europe/Berlin', 'UTC'),
    start: fc.integer({ min: Date.UTC(2024, 0, 1), max: Date.UTC(2025, 0, 1) }),
    steps: fc.array(
      fc.record({
        advanceMs: fc.integer({ min: 0, max: 30 * 3_600_000 }),
        priceTicks: fc.integer({ min: 50_000, max: 60_000 }), // 5.0000 .. 6.0000
        // totalCost = amount × 0.99 .. 1.02: below 0.99 a quote is refused (quote_cost_below_amount), above
        // 1.01 by the fee allowance, so both edges are exercised.
        costPermille: fc.integer({ min: 985, max: 1020 }),
      }),
      { minLength: 1, maxLength: 60 },
    ),
  })
  .map((input) => {
    const perDay = input.amount.times(input.dayFactor).dividedBy(100).toDecimalPlaces(2, Decimal.ROUND_DOWN);
    const perMonth = perDay.times(input.monthFactor).dividedBy(100).toDecimalPlaces(2, Decimal.ROUND_DOWN);
    return { ...input, perDay, perMonth };
  });

/** `YYYY-MM-DD` of the instant on the zone's calendar, read independently of the code under test. */
function calendarDay(zone: string, at: Date): string {
  return new Intl.DateTimeFormat('en-CA', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(at);
}

function quoteOf(amount: Decimal, priceTicks: number, costPermille: number): QuoteView {
  const price = new Decimal(priceTicks).dividedBy(10_000);
  const totalCost = amount.times(costPermille).dividedBy(1000).toDecimalPlaces(2, Decimal.ROUND_DOWN);
  return {
    amount,
    price,
    totalCost,
    totalFilled: totalCost.dividedBy(price).toDecimalPlaces(8, Decimal.ROUND_DOWN),
  };
}

describe('budgets under random sequences of slots and quotes', () => {
  it('never lets a day or a month exceed its cap', () => {
    // Counts budget skips over all runs: a property that never met a cap would pass without meaning.
    const capped = { day: 0, month: 0 };
    fc.assert(
      fc.property(scenario, ({ amount, perDay, perMonth, zone, start, steps }) => {
        const strategy = dca({ amount, timezone: zone, budget: { perDay, perMonth } });
        const placed: { at: Date; cost: Decimal }[] = [];
        const spentIn = (from: Date, until: Date) =>
          placed
            .filter((order) => order.at >= from && order.at < until)
            .reduce((sum, order) => sum.plus(order.cost), new Decimal(0));
        let now = start;
        for (const step of steps) {
          now += step.advanceMs;
          const at = new Date(now);
          const { day, month } = budgetPeriods(zone, at);
          const spent = { day: spentIn(day.start, day.end), month: spentIn(month.start, month.end) };
          const before = evaluateBeforeQuote({ strategy, now: at, spent });
          if (before.reason === 'budget_day_exceeded') capped.day++;
          if (before.reason === 'budget_month_exceeded') capped.month++;
          if (before.action !== 'place') continue;
          const quote = quoteOf(amount, step.priceTicks, step.costPermille);
          const decision = evaluateQuote({
            strategy,
            now: at,
            spent,
            quote,
            tolerances: DEFAULT_QUOTE_TOLERANCES,
          });
          if (decision.action === 'place') placed.push({ at, cost: quote.totalCost });
        }
        const totals = (period: 'day' | 'month') => {
          const sums = new Map<string, Decimal>();
          for (const order of placed) {
            const day = calendarDay(zone, order.at);
            const key = period === 'day' ? day : day.slice(0, 7);
            sums.set(key, (sums.get(key) ?? new Decimal(0)).plus(order.cost));
          }
          return [...sums.values()];
        };
        for (const sum of totals('day')) expect(sum.lessThanOrEqualTo(perDay)).toBe(true);
        for (const sum of totals('month')) expect(sum.lessThanOrEqualTo(perMonth)).toBe(true);
      }),
      { numRuns: 300 },
    );
    expect(capped.day).toBeGreaterThan(0);
    expect(capped.month).toBeGreaterThan(0);
  });
});
