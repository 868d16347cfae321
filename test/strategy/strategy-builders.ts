import { Decimal } from '../../src/money.js';
import type {
  BalanceView,
  DcaStrategy,
  QuoteView,
  StrategyTarget,
  TargetStrategy,
  ThresholdStrategy,
} from '../../src/strategy/index.js';

/** Test data builders: a plain valid strategy, changed only where a test says so. */

export const d = (text: string) => new Decimal(text);

export function dca(overrides: Partial<DcaStrategy> = {}): DcaStrategy {
  return {
    kind: 'dca',
    name: 'test-dca',
    symbol: 'USDTBRL',
    amount: d('2500.00'),
    schedule: '0 10 * * 1-5',
    timezone: 'America/Sao_Paulo',
    missed: 'skip',
    missedGraceMs: 600_000,
    enabled: true,
    dryRun: false,
    source: { file: 'test.yaml', line: 1 },
    ...overrides,
  };
}

export function threshold(overrides: Partial<ThresholdStrategy> = {}): ThresholdStrategy {
  return {
    kind: 'threshold',
    name: 'test-dip',
    symbol: 'USDTBRL',
    amount: d('10000'),
    schedule: '*/15 * * * * *',
    timezone: 'UTC',
    buyBelow: d('5.30'),
    missed: 'skip',
    missedGraceMs: 600_000,
    enabled: true,
    dryRun: false,
    source: { file: 'test.yaml', line: 1 },
    ...overrides,
  };
}

/**
 * A spend target of 10,000.00 over [12:00, 12:02) UTC on 2031-03-03, every 5 s (24 slots), slices of 100.00 to
 * 1,000.00; `target` fields override the target's.
 */
export function target(
  overrides: Partial<Omit<TargetStrategy, 'target'>> & { target?: Partial<StrategyTarget> } = {},
): TargetStrategy {
  const { target: targetOverrides, ...rest } = overrides;
  return {
    kind: 'target',
    name: 'test-target',
    symbol: 'USDTBRL',
    amount: d('1000.00'),
    schedule: '*/5 * * * * *',
    timezone: 'UTC',
    missed: 'skip',
    missedGraceMs: 600_000,
    enabled: true,
    dryRun: false,
    source: { file: 'test.yaml', line: 1 },
    ...rest,
    target: {
      measure: 'spend',
      total: d('10000.00'),
      start: new Date(Date.UTC(2031, 2, 3, 12, 0, 0)),
      end: new Date(Date.UTC(2031, 2, 3, 12, 2, 0)),
      slice: { min: d('100.00'), max: d('1000.00') },
      ...targetOverrides,
    },
  };
}

export function balance(total: string, used: string, available: string, canWithdraw = true): BalanceView {
  return { credit: { total: d(total), used: d(used), available: d(available) }, canWithdraw };
}

/** A consistent quote: totalFilled = amount / price (6 places, down), totalCost = price × filled (cents, down). */
export function quoteFor(amount: string, price: string): QuoteView {
  const filled = d(amount).dividedBy(d(price)).toDecimalPlaces(6, Decimal.ROUND_DOWN);
  return {
    amount: d(amount),
    price: d(price),
    totalFilled: filled,
    totalCost: d(price).times(filled).toDecimalPlaces(2, Decimal.ROUND_DOWN),
  };
}
