import { type Decimal, formatMoney } from '../money.js';
import {
  doneOf,
  formatDuration,
  type Strategy,
  type TargetStanding,
  type TargetStrategy,
  targetStanding,
} from '../strategy/index.js';
import type { BacktestRun, StrategyRun } from './simulate.js';
import type { Tally, TallySummary } from './tally.js';

/**
 * The backtest's output: one JSON document, or a block of text per strategy. A target's block compares it
 * with plain TWAP and adds where it ended and what it saved; the other kinds' blocks compare with plain DCA.
 */

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
    /** Plain DCA on the same schedule and amount; for a target, plain TWAP over its window. */
    baseline: TallySummary;
    target?: TargetSummary;
  }[];
}

/** Where a target ended, and what it saved against plain TWAP. Money as decimal text. */
export interface TargetSummary {
  measure: 'spend' | 'receive';
  total: string;
  window: { start: string; end: string };
  /** The slots of the whole window: plain TWAP buys total ÷ this at each. */
  windowSlots: number;
  /** At the end of the range: `active` when the prices end before the window does. */
  state: TargetStanding['state'];
  /** In the target's measure (fiat spent or crypto received), counting orders parked for approval. */
  done: string;
  donePct: string;
  left: string;
  /**
   * What the quantity the target bought would have cost at plain TWAP's average cost, less what it cost:
   * positive when the target paid less. Absent unless both bought something.
   */
  saving: { fiat: string; pct: string } | null;
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
    strategies: run.strategies.map((strategyRun) => {
      const { strategy, result, baseline } = strategyRun;
      return {
        name: strategy.name,
        kind: strategy.kind,
        schedule: strategy.schedule,
        timezone: strategy.timezone,
        amount: fiatText(strategy.amount),
        result: result.summary(),
        baseline: baseline.summary(),
        ...(strategy.kind === 'target' && { target: targetSummaryOf(strategy, strategyRun, run.to) }),
      };
    }),
  };
}

function targetSummaryOf(strategy: TargetStrategy, run: StrategyRun, to: Date): TargetSummary {
  const { measure, total, start, end } = strategy.target;
  const progress = run.target!.pace.progress();
  const standing = targetStanding(strategy, progress, to);
  const scale = measure === 'spend' ? 2 : 6;
  return {
    measure,
    total: fiatText(total),
    window: { start: start.toISOString(), end: end.toISOString() },
    windowSlots: run.target!.windowSlots,
    state: standing.state,
    done: formatMoney(doneOf(strategy, progress), scale, 'halfEven'),
    donePct: formatMoney(standing.ratio.times(100), 2, 'halfEven'),
    left: formatMoney(standing.left, scale, 'halfEven'),
    saving: savingOf(run.result, run.baseline),
  };
}

function savingOf(result: Tally, baseline: Tally): TargetSummary['saving'] {
  if (result.bought.isZero() || baseline.bought.isZero()) return null;
  const atBaseline = result.bought.times(baseline.spent).dividedBy(baseline.bought);
  const saving = atBaseline.minus(result.spent);
  return {
    fiat: formatMoney(saving, 2, 'halfEven'),
    pct: formatMoney(saving.dividedBy(atBaseline).times(100), 2, 'halfEven'),
  };
}

export function formatReport(report: BacktestReport): string {
  const lines = [
    `backtest of ${report.prices.file} (${report.prices.rows} rows), slots from ${report.from} to ${report.to}`,
    `credit line ${report.creditTotal}, orders settle after ${report.settleDelay}`,
  ];
  for (const entry of report.strategies) {
    const { target } = entry;
    lines.push(
      '',
      target
        ? `${entry.name}: target ${target.measure} ${target.total} "${entry.schedule}" ${entry.timezone}, window ${target.window.start} to ${target.window.end} (${target.windowSlots} slots)`
        : `${entry.name}: ${entry.kind} ${entry.amount} "${entry.schedule}" ${entry.timezone}`,
      `  ${'figure'.padEnd(20)} ${'strategy'.padStart(18)} ${(target ? 'plain TWAP' : 'plain DCA').padStart(18)}`,
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
    if (target) lines.push(...targetLines(target));
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

function targetLines(target: TargetSummary): string[] {
  const done = target.measure === 'spend' ? 'spent' : 'received';
  const state =
    target.state === 'missed'
      ? `missed, ${target.left} left`
      : target.state === 'completed'
        ? 'completed'
        : `${target.left} left when the prices end, before the window does`;
  const saving = target.saving
    ? `${target.saving.fiat} (${target.saving.pct}%)`
    : '- (nothing bought to compare)';
  return [
    `  target: ${target.done} of ${target.total} ${done} (${target.donePct}%), ${state}`,
    `  saving against plain TWAP: ${saving}: what the quantity bought would have cost at plain TWAP's average cost, less what it cost`,
  ];
}

function countsText(counts: Record<string, number>): string {
  const entries = Object.entries(counts);
  return entries.length === 0 ? 'none' : entries.map(([reason, count]) => `${reason} ${count}`).join(', ');
}

/** Fiat as written in strategy files: at least the cents, every digit it has beyond them (never rounded). */
function fiatText(value: Decimal): string {
  return value.toFixed(Math.max(value.decimalPlaces(), 2));
}
