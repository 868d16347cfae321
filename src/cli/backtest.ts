import { writeFile } from 'node:fs/promises';
import { type Command, InvalidArgumentError } from 'commander';
// The defaults and option parsers from their own light files, eagerly (help and argument errors show them);
// the backtest and the strategy loader when the command runs.
import { DEFAULT_CREDIT_TOTAL, DEFAULT_SETTLE_DELAY_MS } from '../backtest/credit-line.js';
import type { SlotDecision } from '../backtest/index.js';
import { BacktestInputError } from '../backtest/input-error.js';
import { DEFAULT_MAX_GAP_MS, readPriceFile } from '../backtest/price-series.js';
import { type Decimal, parseDecimal } from '../money.js';
import { parseDuration } from '../strategy/duration.js';

interface BacktestFlags {
  prices: string;
  strategies?: string;
  from?: number;
  to?: number;
  creditTotal: Decimal;
  settleDelay: number;
  maxGap: number;
  json?: boolean;
  chart?: string;
  assumeApproved?: boolean;
}

export function registerBacktestCommands(program: Command): void {
  program
    .command('backtest')
    .description("run strategies over a recorded price series through the worker's own rules")
    .requiredOption(
      '--prices <file>',
      'CSV with a header naming timestamp and price (ISO 8601 or epoch seconds)',
    )
    .option(
      '--strategies <path>',
      'a strategy file, or a folder of *.yaml/*.yml (default: $TREASURY_STRATEGIES or ./strategies)',
    )
    .option('--from <iso>', 'first instant whose slots run (default: the first row)', parseInstant('--from'))
    .option('--to <iso>', 'last instant whose slots run (default: the last row)', parseInstant('--to'))
    .option('--credit-total <decimal>', 'the simulated credit line in BRL', parseAmount, DEFAULT_CREDIT_TOTAL)
    .option(
      '--settle-delay <duration>',
      'how long an order holds credit, e.g. 12h, 1d',
      parseSpan('--settle-delay'),
      DEFAULT_SETTLE_DELAY_MS,
    )
    .option(
      '--max-gap <duration>',
      'longest allowed gap between two rows',
      parseSpan('--max-gap'),
      DEFAULT_MAX_GAP_MS,
    )
    .option(
      '--assume-approved',
      'buy the slots that need approval at their parked price, as if people approved each at once',
    )
    .option('--json', 'print one JSON document on stdout')
    .option('--chart <file.svg>', 'also write an SVG of the price, every purchase and the cumulative spend')
    .action(runBacktestCommand);
}

async function runBacktestCommand(flags: BacktestFlags): Promise<void> {
  const { formatProblem, loadStrategies, resolveStrategiesPath } = await import('../strategy/index.js');
  const { formatReport, renderChart, reportOf, runBacktest } = await import('../backtest/index.js');
  const loaded = await loadStrategies(resolveStrategiesPath(flags.strategies));
  if (!loaded.valid) {
    process.stderr.write(
      `${loaded.problems.map(formatProblem).join('\n')}\ninvalid strategies; nothing was run\n`,
    );
    process.exitCode = 1;
    return;
  }
  try {
    const series = await readPriceFile(flags.prices, { maxGapMs: flags.maxGap });
    const purchases: SlotDecision[] = [];
    const run = runBacktest(loaded.strategies, series, {
      ...(flags.from !== undefined && { from: flags.from }),
      ...(flags.to !== undefined && { to: flags.to }),
      creditTotal: flags.creditTotal,
      settleDelayMs: flags.settleDelay,
      assumeApproved: flags.assumeApproved === true,
      onDecision: (decision) => {
        if (flags.chart !== undefined && decision.outcome === 'placed') purchases.push(decision);
      },
    });
    const report = reportOf(
      run,
      { file: flags.prices, rows: series.length },
      { total: flags.creditTotal, settleDelayMs: flags.settleDelay },
      flags.assumeApproved === true,
    );
    if (flags.chart !== undefined) {
      const svg = renderChart({
        series,
        from: run.from.getTime(),
        to: run.to.getTime(),
        strategies: loaded.strategies.map((strategy) => strategy.name),
        purchases,
        title: `backtest of ${flags.prices}: ${report.from} to ${report.to}`,
      });
      await writeChart(flags.chart, svg);
    }
    process.stdout.write(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  } catch (error) {
    if (!(error instanceof BacktestInputError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exitCode = 1;
  }
}

async function writeChart(file: string, svg: string): Promise<void> {
  try {
    await writeFile(file, svg);
  } catch (error) {
    throw new BacktestInputError(
      `${file}: cannot write the chart (${(error as NodeJS.ErrnoException).code})`,
    );
  }
}

function parseInstant(flag: string): (value: string) => number {
  return (value) => {
    const instant = /^\d{4}-\d{2}-\d{2}(T.*(Z|[+-]\d{2}:\d{2}))?$/i.test(value)
      ? Date.parse(value)
      : Number.NaN;
    if (Number.isNaN(instant)) {
      throw new InvalidArgumentError(`${flag} must be ISO 8601 with a zone, like 2026-01-05T10:00:00Z.`);
    }
    return instant;
  };
}

function parseSpan(flag: string): (value: string) => number {
  return (value) => {
    const ms = parseDuration(value);
    if (ms === undefined || ms <= 0)
      throw new InvalidArgumentError(`${flag} must be a duration like 90m, 1h or 1d.`);
    return ms;
  };
}

function parseAmount(value: string): Decimal {
  try {
    const amount = parseDecimal(value, '--credit-total');
    if (amount.greaterThan(0)) return amount;
  } catch {
    // Reported below in commander's own words.
  }
  throw new InvalidArgumentError('must be a positive decimal like "1000000.00".');
}
