import { describe, expect, it } from 'vitest';
import { BacktestInputError } from '../../src/backtest/index.js';
import { d, dca, threshold } from '../strategy/strategy-builders.js';
import { backtest, flatSeries, seriesOf } from './support.js';

/**
 * The backtest against figures worked out by hand on small series: which slots run (zones and DST), and what
 * the worker's rules make of each (thresholds, budgets, cooldowns, credit guards on the simulated line).
 */

describe('backtest: thresholds and quotes', () => {
  const series = seriesOf([
    ['2026-03-02T10:00:00Z', '5.3500'],
    ['2026-03-02T10:30:00Z', '5.29'],
    ['2026-03-02T12:00:00Z', '5.3000'],
    ['2026-03-02T13:00:00Z', '5.30010'],
    ['2026-03-02T14:00:00Z', '5.2'],
  ]);
  const dip = threshold({ name: 'dip', amount: d('1000.00'), schedule: '0 * * * *', buyBelow: d('5.30') });

  it('buys at or below the threshold, quoting the last price at or before each slot', () => {
    const result = backtest([dip], series);
    expect(result.lines()).toEqual([
      '2026-03-02T10:00:00.000Z skipped price_not_below_threshold',
      // No row at 11:00: the 10:30 price holds.
      '2026-03-02T11:00:00.000Z placed ok',
      // Equal to buyBelow is "at or below".
      '2026-03-02T12:00:00.000Z placed ok',
      '2026-03-02T13:00:00.000Z skipped price_not_below_threshold',
      '2026-03-02T14:00:00.000Z placed ok',
    ]);
    // 1000.00 / 5.29 = 189.035916 (6 places, down), × 5.29 = 999.99 (cents, down); and so on. A slot
    // skipped on its price keeps the quote it was judged on.
    expect(result.decisions.map((decision) => decision.filled?.toFixed())).toEqual([
      '186.915887',
      '189.035916',
      '188.679245',
      '188.675685',
      '192.307692',
    ]);
    const summary = result.run.strategies[0]!.result.summary();
    expect(summary).toEqual({
      slots: 5,
      orders: 3,
      spent: '2999.97',
      bought: '570.022853',
      // 2999.97 / 570.022853 = 5.26289…
      averageCost: '5.2629',
      lowestPrice: '5.2000',
      highestPrice: '5.3000',
      skipped: { price_not_below_threshold: 2 },
      failed: {},
      budgetLimited: { days: 0, months: 0 },
      parked: { cycles: 0, cost: '0.00' },
    });
  });

  it('compares plain DCA on the same schedule: every slot buys', () => {
    const baseline = backtest([dip], series).run.strategies[0]!.baseline.summary();
    expect(baseline).toMatchObject({
      slots: 5,
      orders: 5,
      spent: '4999.95',
      bought: '945.614425',
      averageCost: '5.2875',
      lowestPrice: '5.2000',
      highestPrice: '5.3500',
      skipped: {},
    });
  });

  it('quotes at the service scale of 4 decimals, rounding half to even', () => {
    // 5.30010 is 5.3001 (above 5.30); 5.30005 rounds to 5.3000 (at the threshold) and buys.
    const rounded = seriesOf([['2026-03-02T10:00:00Z', '5.30005']]);
    const result = backtest([dip], rounded);
    expect(result.decisions[0]).toMatchObject({ outcome: 'placed', price: d('5.3000') });
  });

  it('applies maxPrice to a DCA', () => {
    const capped = dca({ name: 'capped', amount: d('1000.00'), schedule: '0 * * * *', timezone: 'UTC' });
    const result = backtest([{ ...capped, maxPrice: d('5.3000') }], series);
    expect(result.lines().map((line) => line.split(' ').slice(1).join(' '))).toEqual([
      'skipped price_above_max',
      'placed ok',
      'placed ok',
      'skipped price_above_max',
      'placed ok',
    ]);
  });
});

describe('backtest: budgets', () => {
  it('caps each calendar day in the strategy zone, and counts the days it limited', () => {
    // São Paulo is UTC−3: its days start at 03:00Z. Four slots a local day at 100.00 each (price 5 buys
    // exactly 20), 250.00 a day: two buys, then budget_day_exceeded until local midnight.
    const series = flatSeries('2026-03-02T03:00:00Z', '2026-03-04T02:00:00Z', '5.0000');
    const strategy = dca({
      name: 'capped',
      amount: d('100.00'),
      schedule: '0 */6 * * *',
      timezone: 'America/Sao_Paulo',
      budget: { perDay: d('250.00') },
    });
    const result = backtest([strategy], series);
    expect(result.lines()).toEqual([
      '2026-03-02T03:00:00.000Z placed ok',
      '2026-03-02T09:00:00.000Z placed ok',
      '2026-03-02T15:00:00.000Z skipped budget_day_exceeded',
      '2026-03-02T21:00:00.000Z skipped budget_day_exceeded',
      '2026-03-03T03:00:00.000Z placed ok',
      '2026-03-03T09:00:00.000Z placed ok',
      '2026-03-03T15:00:00.000Z skipped budget_day_exceeded',
      '2026-03-03T21:00:00.000Z skipped budget_day_exceeded',
    ]);
    const summary = result.run.strategies[0]!.result.summary();
    expect(summary.spent).toBe('400.00');
    expect(summary.budgetLimited).toEqual({ days: 2, months: 0 });
  });

  it('caps each calendar month, starting again on the 1st', () => {
    const series = flatSeries('2026-01-29T00:00:00Z', '2026-02-03T23:00:00Z', '5.0000');
    const strategy = dca({
      name: 'monthly',
      amount: d('100.00'),
      schedule: '0 12 * * *',
      timezone: 'UTC',
      budget: { perMonth: d('250.00') },
    });
    expect(backtest([strategy], series).lines()).toEqual([
      '2026-01-29T12:00:00.000Z placed ok',
      '2026-01-30T12:00:00.000Z placed ok',
      '2026-01-31T12:00:00.000Z skipped budget_month_exceeded',
      '2026-02-01T12:00:00.000Z placed ok',
      '2026-02-02T12:00:00.000Z placed ok',
      '2026-02-03T12:00:00.000Z skipped budget_month_exceeded',
    ]);
    expect(backtest([strategy], series).run.strategies[0]!.result.summary().budgetLimited).toEqual({
      days: 0,
      months: 2,
    });
  });

  it('judges the budget on the quoted cost, not only the amount', () => {
    // 100.00 at 3.0000 buys 33.333333 for 99.99; three of them (299.97) fit a 300.00 day, a fourth does not.
    const series = flatSeries('2026-03-02T00:00:00Z', '2026-03-02T03:00:00Z', '3.0000');
    const strategy = dca({
      name: 'tight',
      amount: d('100.00'),
      schedule: '0 * * * *',
      timezone: 'UTC',
      budget: { perDay: d('300.00') },
    });
    const result = backtest([strategy], series);
    expect(result.lines().map((line) => line.split(' ')[1])).toEqual([
      'placed',
      'placed',
      'placed',
      'skipped',
    ]);
    expect(result.run.strategies[0]!.result.summary().spent).toBe('299.97');
  });
});

describe('backtest: cooldowns', () => {
  it('skips slots until the cooldown since the last order has passed (a slot exactly at its end runs)', () => {
    const series = flatSeries('2026-03-02T00:00:00Z', '2026-03-02T01:00:00Z', '5.0000', 10);
    const strategy = dca({
      name: 'cool',
      amount: d('100.00'),
      schedule: '*/10 * * * *',
      timezone: 'UTC',
      cooldownMs: 30 * 60_000,
    });
    expect(backtest([strategy], series).lines()).toEqual([
      '2026-03-02T00:00:00.000Z placed ok',
      '2026-03-02T00:10:00.000Z skipped cooldown_active',
      '2026-03-02T00:20:00.000Z skipped cooldown_active',
      '2026-03-02T00:30:00.000Z placed ok',
      '2026-03-02T00:40:00.000Z skipped cooldown_active',
      '2026-03-02T00:50:00.000Z skipped cooldown_active',
      '2026-03-02T01:00:00.000Z placed ok',
    ]);
  });

  it('counts a skipped slot as no order: the cooldown runs from the last placed one', () => {
    const series = seriesOf([
      ['2026-03-02T00:00:00Z', '5.2000'],
      ['2026-03-02T00:10:00Z', '5.5000'],
      ['2026-03-02T00:20:00Z', '5.2000'],
    ]);
    const strategy = threshold({
      name: 'dip',
      amount: d('100.00'),
      schedule: '*/10 * * * *',
      buyBelow: d('5.30'),
      cooldownMs: 15 * 60_000,
    });
    expect(backtest([strategy], series).lines()).toEqual([
      '2026-03-02T00:00:00.000Z placed ok',
      // The cooldown is checked before the price: 10 minutes after the last order it is still active.
      '2026-03-02T00:10:00.000Z skipped cooldown_active',
      '2026-03-02T00:20:00.000Z placed ok',
    ]);
  });
});

describe('backtest: schedules across DST', () => {
  it('runs a slot in the spring-forward gap once, at the first instant after it', () => {
    // New York, 2026-03-08: 02:00 EST becomes 03:00 EDT. 02:30 does not exist that day: due at 03:00 EDT.
    const series = flatSeries('2026-03-07T00:00:00Z', '2026-03-10T00:00:00Z', '5.0000');
    const strategy = dca({
      name: 'ny',
      amount: d('100.00'),
      schedule: '30 2 * * *',
      timezone: 'America/New_York',
    });
    expect(backtest([strategy], series).lines()).toEqual([
      '2026-03-07T07:30:00.000Z placed ok',
      '2026-03-08T07:00:00.000Z placed ok',
      '2026-03-09T06:30:00.000Z placed ok',
    ]);
  });

  it('runs a repeated reading once, at its first occurrence, when clocks are set back', () => {
    // 2026-11-01: 02:00 EDT becomes 01:00 EST; 01:30 happens twice and runs at the first (EDT, 05:30Z).
    const series = flatSeries('2026-10-31T00:00:00Z', '2026-11-03T00:00:00Z', '5.0000');
    const strategy = dca({
      name: 'ny',
      amount: d('100.00'),
      schedule: '30 1 * * *',
      timezone: 'America/New_York',
    });
    expect(backtest([strategy], series).lines()).toEqual([
      '2026-10-31T05:30:00.000Z placed ok',
      '2026-11-01T05:30:00.000Z placed ok',
      '2026-11-02T06:30:00.000Z placed ok',
    ]);
  });

  it('gives the 23-hour day its own budget', () => {
    // Every hour in New York, 150.00 a day at 100.00 a slot: one buy per local day, the short one included.
    const series = flatSeries('2026-03-07T05:00:00Z', '2026-03-09T03:00:00Z', '5.0000');
    const strategy = dca({
      name: 'ny-hourly',
      amount: d('100.00'),
      schedule: '0 * * * *',
      timezone: 'America/New_York',
      budget: { perDay: d('150.00') },
    });
    const placed = backtest([strategy], series)
      .decisions.filter((decision) => decision.outcome === 'placed')
      .map((decision) => decision.slot.toISOString());
    // Local midnights: 2026-03-07 05:00Z (EST), 2026-03-08 05:00Z (EST), 2026-03-09 04:00Z (EDT).
    expect(placed).toEqual(['2026-03-07T05:00:00.000Z', '2026-03-08T05:00:00.000Z']);
  });
});

describe('backtest: the credit line', () => {
  it('holds each order until it settles, and the guards judge what is left', () => {
    // 1,000.00 of credit, 400.00 orders (100 USDT at 4.0000), settled 3 hours after placing; at least 100.00
    // must stay available after an order.
    const series = flatSeries('2026-03-02T00:00:00Z', '2026-03-02T06:00:00Z', '4.0000');
    const strategy = dca({
      name: 'guarded',
      amount: d('400.00'),
      schedule: '0 * * * *',
      timezone: 'UTC',
      guards: { minCreditAvailable: d('100.00'), requireCanWithdraw: false },
    });
    const result = backtest([strategy], series, { creditTotal: '1000.00', settleDelayMs: 3 * 3_600_000 });
    expect(result.lines().map((line) => line.slice(11, 16) + line.slice(24))).toEqual([
      '00:00 placed ok', // available 1000 → 600
      '01:00 placed ok', // 600 → 200
      '02:00 skipped credit_available_below_min', // 200 − 400 < 100
      '03:00 placed ok', // the 00:00 order settled: 600 → 200
      '04:00 placed ok', // the 01:00 order settled: 600 → 200
      '05:00 skipped credit_available_below_min',
      '06:00 placed ok', // the 03:00 order settled
    ]);
  });

  it('is one line for every strategy, and the service refuses an order beyond it', () => {
    const series = flatSeries('2026-03-02T00:00:00Z', '2026-03-02T01:00:00Z', '4.0000');
    const first = dca({ name: 'first', amount: d('400.00'), schedule: '0 * * * *', timezone: 'UTC' });
    const second = dca({ name: 'second', amount: d('400.00'), schedule: '0 * * * *', timezone: 'UTC' });
    const result = backtest([first, second], series, { creditTotal: '1000.00' });
    expect(
      result.decisions.map(
        (x) => `${x.slot.toISOString().slice(11, 16)} ${x.strategy} ${x.outcome} ${x.reason}`,
      ),
    ).toEqual([
      '00:00 first placed ok',
      '00:00 second placed ok',
      '01:00 first failed order_rejected',
      '01:00 second failed order_rejected',
    ]);
    expect(result.run.strategies[0]!.result.summary().failed).toEqual({ order_rejected: 1 });
  });

  it('judges the share of the line an order would use', () => {
    const series = flatSeries('2026-03-02T00:00:00Z', '2026-03-02T00:00:00Z', '4.0000');
    const strategy = dca({
      name: 'withdraw',
      amount: d('400.00'),
      schedule: '0 * * * *',
      timezone: 'UTC',
      guards: { maxCreditUsedPct: d('30'), requireCanWithdraw: true },
    });
    // (0 + 400) / 1000 = 40% > 30%.
    expect(backtest([strategy], series, { creditTotal: '1000.00' }).lines()).toEqual([
      '2026-03-02T00:00:00.000Z skipped credit_used_pct_above_max',
    ]);
  });
});

describe('backtest: ranges', () => {
  const series = flatSeries('2026-03-02T00:00:00Z', '2026-03-02T05:00:00Z', '5.0000');
  const hourly = dca({ name: 'hourly', amount: d('100.00'), schedule: '0 * * * *', timezone: 'UTC' });

  it('runs the slots of [from, to], clipped to the series', () => {
    const result = backtest([hourly], series, { from: '2026-03-02T02:00:00Z', to: '2026-03-03T00:00:00Z' });
    expect(result.decisions.map((x) => x.slot.toISOString().slice(11, 16))).toEqual([
      '02:00',
      '03:00',
      '04:00',
      '05:00',
    ]);
    expect(result.run.to.toISOString()).toBe('2026-03-02T05:00:00.000Z');
  });

  it('refuses a strategy that never fires in the range, naming it, its file and the range', () => {
    const leap = dca({
      name: 'leap-day',
      schedule: '0 10 29 2 *',
      timezone: 'UTC',
      source: { file: 's.yaml', line: 4 },
    });
    expect(() => backtest([hourly, leap], series)).toThrow(BacktestInputError);
    expect(() => backtest([hourly, leap], series)).toThrow(
      'strategy leap-day (s.yaml:4): schedule "0 10 29 2 *" in UTC has no slot from 2026-03-02T00:00:00.000Z to 2026-03-02T05:00:00.000Z',
    );
  });

  it('refuses a range with no prices', () => {
    expect(() => backtest([hourly], series, { from: '2026-04-01T00:00:00Z' })).toThrow(
      /the range 2026-04-01T00:00:00.000Z to 2026-03-02T05:00:00.000Z has no prices: test.csv covers 2026-03-02T00:00:00.000Z to 2026-03-02T05:00:00.000Z/,
    );
  });
});

describe('backtest: approvals', () => {
  const series = flatSeries('2026-03-02T10:00:00Z', '2026-03-02T13:00:00Z', '5.0000');
  // Orders above 1,500.00 need people: the 2,000.00 slots park, the 1,000.00 one (at 12:00) does not.
  const guarded = dca({
    name: 'guarded',
    timezone: 'UTC',
    amount: d('2000.00'),
    schedule: '0 10,11,13 * * *',
    approval: {
      required: 'above',
      above: d('1500.00'),
      approvers: 2,
      timeoutMs: 3_600_000,
      priceTolerancePct: d('0.5'),
    },
  });
  const small = dca({
    name: 'guarded-small',
    timezone: 'UTC',
    amount: d('1000.00'),
    schedule: '0 12 * * *',
    approval: guarded.approval,
  });

  it('reports the cycles that would have parked, with their cost, and buys none of them', () => {
    const result = backtest([guarded, small], series);
    expect(result.lines('guarded')).toEqual([
      '2026-03-02T10:00:00.000Z awaiting_approval approval_required',
      '2026-03-02T11:00:00.000Z awaiting_approval approval_required',
      '2026-03-02T13:00:00.000Z awaiting_approval approval_required',
    ]);
    expect(result.lines('guarded-small')).toEqual(['2026-03-02T12:00:00.000Z placed ok']);
    expect(result.run.strategies[0]!.result.summary()).toMatchObject({
      orders: 0,
      spent: '0.00',
      parked: { cycles: 3, cost: '6000.00' },
    });
  });

  it('with --assume-approved buys them at the parked price', () => {
    const result = backtest([guarded], series, { assumeApproved: true });
    expect(result.lines()).toEqual([
      '2026-03-02T10:00:00.000Z placed ok',
      '2026-03-02T11:00:00.000Z placed ok',
      '2026-03-02T13:00:00.000Z placed ok',
    ]);
    expect(result.decisions.map((decision) => decision.price?.toFixed(4))).toEqual([
      '5.0000',
      '5.0000',
      '5.0000',
    ]);
    expect(result.run.strategies[0]!.result.summary()).toMatchObject({
      orders: 3,
      spent: '6000.00',
      parked: { cycles: 3, cost: '6000.00' },
    });
  });
});
