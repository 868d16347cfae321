import { describe, expect, it } from 'vitest';
import { formatReport, reportOf } from '../../src/backtest/index.js';
import { parseStrategyText, type TargetStrategy } from '../../src/strategy/index.js';
import { backtest, d, seriesOf } from './support.js';

/**
 * Targets in the backtest against figures worked out by hand: only the window's slots run, each sized,
 * resized and judged by the worker's rules (the faithfulness test compares them with the live worker), and
 * the baseline is plain TWAP, the total in equal slices over the window's slots.
 */

function targetStrategy(name: string, fields: string[]): TargetStrategy {
  const text = [`name: ${name}`, 'kind: target', 'symbol: USDTBRL', 'timezone: UTC', ...fields, ''].join(
    '\n',
  );
  const parsed = parseStrategyText(text, `${name}.yaml`);
  expect(parsed.problems).toEqual([]);
  return parsed.strategies[0]!.strategy as TargetStrategy;
}

// Four slots in the window (10:00 to 10:45); 09:45 and 11:00 lie outside it. 5.2000 is above maxPrice.
const series = seriesOf([
  ['2026-03-02T09:45:00Z', '5.0000'],
  ['2026-03-02T10:00:00Z', '5.0000'],
  ['2026-03-02T10:15:00Z', '5.2000'],
  ['2026-03-02T10:30:00Z', '4.8000'],
  ['2026-03-02T10:45:00Z', '5.1000'],
  ['2026-03-02T11:00:00Z', '5.0000'],
]);
const common = [
  'window: { start: "2026-03-02T10:00:00", end: "2026-03-02T11:00:00" }',
  'every: "*/15 * * * *"',
  'slice: { min: "100.00", max: "500.00" }',
  'maxPrice: "5.15"',
];
const spend = targetStrategy('payroll', ['target: { spend: "1000.00" }', ...common]);
const receive = targetStrategy('hedge', ['target: { receive: "200.00" }', ...common]);
const at = (time: string) => `2026-03-02T${time}:00.000Z`;

describe('backtest: targets', () => {
  it('spends the total on the straight line, catching up after a slot above maxPrice', () => {
    const result = backtest([spend], series);
    expect(
      result.decisions.map((x) => `${x.slot.toISOString()} ${x.outcome} ${x.reason} ${x.amount}`),
    ).toEqual([
      // 1000.00 ÷ 4 slots left.
      `${at('10:00')} placed ok 250`,
      `${at('10:15')} skipped price_above_max 250`,
      // 750.00 ÷ 2, then what is left.
      `${at('10:30')} placed ok 375`,
      `${at('10:45')} placed ok 375`,
    ]);
  });

  it('sizes a receive target on the quote average, and once per slot again on the quote price', () => {
    const result = backtest([receive], series);
    expect(
      result.decisions.map((x) => `${x.slot.toISOString()} ${x.outcome} ${x.reason} ${x.amount} ${x.filled}`),
    ).toEqual([
      // No quote yet: slice.min is quoted, then 200 ÷ 4 = 50 at 5.0000 is 250.00.
      `${at('10:00')} placed ok 250 50`,
      // 150 ÷ 3 = 50 at the average 5.0000 is 250.00; at 5.2000 it is 260.00 (over 1% more): quoted again.
      `${at('10:15')} skipped price_above_max 260 50`,
      // 150 ÷ 2 = 75 at the average of 5, 5, 5.2, 5.2 (5.1) is 382.50; at 4.8000 it would be less, kept.
      `${at('10:30')} placed ok 382.5 79.6875`,
      // 70.3125 at the average 5.04 is 354.37; at 5.1000 it is 358.59: quoted again.
      `${at('10:45')} placed ok 358.59 70.311764`,
    ]);
  });

  it('compares with plain TWAP: the total in equal slices over the window, every slot buying', () => {
    const run = backtest([spend, receive], series).run;
    const report = reportOf(
      run,
      { file: 'test.csv', rows: series.length },
      { total: d('1000000.00'), settleDelayMs: 86_400_000 },
    );
    const [payroll, hedge] = report.strategies;
    // 250.00 a slot: 50 at 5.0000, 48.076923 at 5.2000, 52.083333 at 4.8000, 49.019607 at 5.1000, each cost
    // cut to the cent (250.00, 249.99, 249.99, 249.99).
    expect(payroll!.baseline).toMatchObject({
      slots: 4,
      orders: 4,
      spent: '999.97',
      bought: '199.179863',
      // 999.97 ÷ 199.179863 = 5.020437…
      averageCost: '5.0204',
    });
    expect(payroll!.result).toMatchObject({ orders: 3, spent: '999.99', bought: '201.654411' });
    expect(payroll!.target).toEqual({
      measure: 'spend',
      total: '1000.00',
      window: { start: at('10:00'), end: at('11:00') },
      windowSlots: 4,
      state: 'completed',
      done: '999.99',
      donePct: '100.00',
      left: '0.01',
      // 201.654411 × 5.020437… = 1012.393312…, less 999.99; ÷ 1012.393312… = 1.2251…%.
      saving: { fiat: '12.40', pct: '1.23' },
    });
    // 50 USDT a slot at each slot's price: 250.00, 260.00, 240.00, 255.00.
    expect(hedge!.baseline).toMatchObject({
      slots: 4,
      orders: 4,
      spent: '1005.00',
      bought: '200.000000',
      averageCost: '5.0250',
    });
    expect(hedge!.target).toMatchObject({
      measure: 'receive',
      state: 'completed',
      done: '199.999264',
      left: '0.000736',
      // 199.999264 × 5.025 = 1004.996301…, less 991.08 (250.00 + 382.50 + 358.58).
      saving: { fiat: '13.92', pct: '1.38' },
    });
    const text = formatReport(report);
    expect(text).toContain(
      'payroll: target spend 1000.00 "*/15 * * * *" UTC, window 2026-03-02T10:00:00.000Z to 2026-03-02T11:00:00.000Z (4 slots)',
    );
    expect(text).toMatch(/figure\s+strategy\s+plain TWAP\n/);
    expect(text).toMatch(/average cost\s+4\.9589\s+5\.0204\n/);
    expect(text).toContain('  target: 999.99 of 1000.00 spent (100.00%), completed\n');
    expect(text).toContain('  target: 199.999264 of 200.00 received (100.00%), completed\n');
    expect(text).toContain(
      "  saving against plain TWAP: 12.40 (1.23%): what the quantity bought would have cost at plain TWAP's average cost, less what it cost\n",
    );
  });

  it('counts a slice parked for approval towards the total, as the worker reserves it', () => {
    const guarded = { ...spend, approval: { ...approvalAbove('300.00') } };
    const parked = backtest([guarded], series);
    // 375.00 at 10:30 parks; 10:45 paces what is left after it (not 750.00, capped at 500.00): parked too.
    expect(
      parked.decisions.map((x) => `${x.slot.toISOString()} ${x.outcome} ${x.reason} ${x.amount}`),
    ).toEqual([
      `${at('10:00')} placed ok 250`,
      `${at('10:15')} skipped price_above_max 250`,
      `${at('10:30')} awaiting_approval approval_required 375`,
      `${at('10:45')} awaiting_approval approval_required 375`,
    ]);
    const approved = backtest([guarded], series, { assumeApproved: true });
    expect(approved.run.strategies[0]!.result.summary()).toMatchObject({ orders: 3, spent: '999.99' });
  });

  it('reports a target the prices end before, and one that missed its total', () => {
    const early = backtest([spend], series, { to: '2026-03-02T10:40:00Z' }).run;
    const missed = backtest([{ ...spend, maxPrice: d('4.90') }], series).run;
    const credit = { total: d('1000000.00'), settleDelayMs: 86_400_000 };
    const prices = { file: 'test.csv', rows: series.length };
    expect(formatReport(reportOf(early, prices, credit))).toContain(
      '  target: 625.00 of 1000.00 spent (62.50%), 375.00 left when the prices end, before the window does\n',
    );
    // Only 10:30 (4.8000) is at or below 4.90: 1000.00 ÷ 2 slots left is 500.00, slice.max, which buys
    // 104.166666 for 499.99.
    expect(formatReport(reportOf(missed, prices, credit))).toContain(
      '  target: 499.99 of 1000.00 spent (50.00%), missed, 500.01 left\n',
    );
  });

  it('refuses a target whose window has no slot in the range', () => {
    expect(() => backtest([spend], series, { from: '2026-03-02T11:00:00Z' })).toThrow(
      /strategy payroll \(payroll\.yaml:1\): schedule "\*\/15 \* \* \* \*" in UTC has no slot from 2026-03-02T11:00:00\.000Z to 2026-03-02T11:00:00\.000Z within its window 2026-03-02T10:00:00\.000Z to 2026-03-02T11:00:00\.000Z/,
    );
  });
});

function approvalAbove(above: string) {
  return {
    required: 'above' as const,
    above: d(above),
    approvers: 1,
    timeoutMs: 3_600_000,
    priceTolerancePct: d('0.5'),
  };
}
