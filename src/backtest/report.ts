import type { Decimal } from '../money.js';
import { formatDuration, type Strategy } from '../strategy/index.js';
import type { BacktestRun } from './simulate.js';
import type { TallySummary } from './tally.js';

/** The backtest's output: one JSON document, or a block of text per strategy. */

export interface BacktestReport {
  prices: { file: string; rows: number };
  from: string;
  to: string;
  creditTotal: string;
  settleDelay: string;
  /** Whether slots that needed approval were bought at their parked price (`--assume-approved`). */
  assumeApproved: boolean;
  strategies: {
    name: string;
    kind: Strategy['kind'];
    schedule: string;
    timezone: string;
    amount: string;
    result: TallySummary;
    baseline: TallySummary;
  }[];
}

export function reportOf(
  run: BacktestRun,
  prices: BacktestReport['prices'],
  credit: { total: Decimal; settleDelayMs: number },
  assumeApproved = false,
): BacktestReport {
  return {
    prices,
    from: run.from.toISOString(),
    to: run.to.toISOString(),
    creditTotal: fiatText(credit.total),
    settleDelay: formatDuration(credit.settleDelayMs),
    assumeApproved,
    strategies: run.strategies.map(({ strategy, result, baseline }) => ({
      name: strategy.name,
      kind: strategy.kind,
      schedule: strategy.schedule,
      timezone: strategy.timezone,
      amount: fiatText(strategy.amount),
      result: result.summary(),
      baseline: baseline.summary(),
    })),
  };
}

export function formatReport(report: BacktestReport): string {
  const lines = [
    `backtest of ${report.prices.file} (${report.prices.rows} rows), slots from ${report.from} to ${report.to}`,
    `credit line ${report.creditTotal}, orders settle after ${report.settleDelay}`,
  ];
  for (const entry of report.strategies) {
    lines.push(
      '',
      `${entry.name}: ${entry.kind} ${entry.amount} "${entry.schedule}" ${entry.timezone}`,
      `  ${'figure'.padEnd(20)} ${'strategy'.padStart(18)} ${'plain DCA'.padStart(18)}`,
    );
    const row = (label: string, pick: (summary: TallySummary) => string | number | null) =>
      lines.push(
        `  ${label.padEnd(20)} ${String(pick(entry.result) ?? '-').padStart(18)} ${String(pick(entry.baseline) ?? '-').padStart(18)}`,
      );
    row('slots', (summary) => summary.slots);
    row('orders', (summary) => summary.orders);
    row('spent', (summary) => summary.spent);
    row('bought', (summary) => summary.bought);
    row('average cost', (summary) => summary.averageCost);
    row('lowest price paid', (summary) => summary.lowestPrice);
    row('highest price paid', (summary) => summary.highestPrice);
    const { skipped, failed, budgetLimited } = entry.result;
    lines.push(`  skipped: ${countsText(skipped)}`);
    if (Object.keys(failed).length > 0) lines.push(`  failed: ${countsText(failed)}`);
    lines.push(`  budget-limited periods: ${budgetLimited.days} days, ${budgetLimited.months} months`);
    const { parked } = entry.result;
    if (parked.cycles > 0) {
      const fate = report.assumeApproved
        ? 'bought at the parked price (--assume-approved)'
        : 'not bought (--assume-approved buys them)';
      lines.push(`  parked for approval: ${parked.cycles} cycles, cost ${parked.cost}, ${fate}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function countsText(counts: Record<string, number>): string {
  const entries = Object.entries(counts);
  return entries.length === 0 ? 'none' : entries.map(([reason, count]) => `${reason} ${count}`).join(', ');
}

/** Fiat as written in strategy files: at least the cents, every digit it has beyond them (never rounded). */
function fiatText(value: Decimal): string {
  return value.toFixed(Math.max(value.decimalPlaces(), 2));
}
