import { Decimal } from '../../src/money.js';
import type { BalanceView, DcaStrategy, QuoteView, ThresholdStrategy } from '../../src/strategy/index.js';

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
