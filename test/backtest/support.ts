import {
  type BacktestRun,
  type PriceSeries,
  parsePriceCsv,
  runBacktest,
  type SlotDecision,
} from '../../src/backtest/index.js';
import { Decimal } from '../../src/money.js';
import type { Strategy } from '../../src/strategy/index.js';

/** Small hand-made series and a backtest over them that keeps every slot's decision. */

export const d = (text: string) => new Decimal(text);

/** A series from [ISO instant, price] rows. */
export function seriesOf(rows: [string, string][], file = 'test.csv'): PriceSeries {
  const text = ['timestamp,price', ...rows.map(([at, price]) => `${at},${price}`)].join('\n');
  return parsePriceCsv(text, file, { maxGapMs: 86_400_000 });
}

/** One row per `stepMinutes` from `start` to `end` inclusive, all at `price`. */
export function flatSeries(start: string, end: string, price: string, stepMinutes = 60): PriceSeries {
  const rows: [string, string][] = [];
  for (let at = Date.parse(start); at <= Date.parse(end); at += stepMinutes * 60_000) {
    rows.push([new Date(at).toISOString(), price]);
  }
  return seriesOf(rows);
}

export interface Backtested {
  run: BacktestRun;
  decisions: SlotDecision[];
  /** `slot outcome reason` per decision of the named strategy (all when omitted). */
  lines(strategy?: string): string[];
}

export function backtest(
  strategies: Strategy[],
  series: PriceSeries,
  options: {
    from?: string;
    to?: string;
    creditTotal?: string;
    settleDelayMs?: number;
    assumeApproved?: boolean;
  } = {},
): Backtested {
  const decisions: SlotDecision[] = [];
  const run = runBacktest(strategies, series, {
    ...(options.from && { from: Date.parse(options.from) }),
    ...(options.to && { to: Date.parse(options.to) }),
    creditTotal: d(options.creditTotal ?? '1000000.00'),
    settleDelayMs: options.settleDelayMs ?? 86_400_000,
    ...(options.assumeApproved && { assumeApproved: true }),
    onDecision: (decision) => decisions.push(decision),
  });
  return {
    run,
    decisions,
    lines: (strategy) =>
      decisions
        .filter((decision) => strategy === undefined || decision.strategy === strategy)
        .map((decision) => `${decision.slot.toISOString()} ${decision.outcome} ${decision.reason}`),
  };
}
