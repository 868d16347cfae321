/**
 * The child of the `backtest` section, on plain node: what `treasury-bot backtest` does between reading its
 * flags and printing (read and check the series, load the strategies, run, build the report), timed, with
 * its peak RSS. A process of its own, so that the figure is the backtest's and not the bench's.
 */
import { formatReport, readPriceFile, reportOf, runBacktest } from '../../src/backtest/index.js';
import { Decimal } from '../../src/money.js';
import { loadStrategiesOrThrow } from '../../src/strategy/index.js';

export interface BacktestRequest {
  prices: string;
  strategies: string;
}

export interface BacktestReportFigures {
  rows: number;
  slots: number;
  orders: number;
  readMs: number;
  runMs: number;
  totalMs: number;
  cpuMs: number;
  peakRssMb: number;
}

process.once('message', (request: BacktestRequest) => {
  measure(request).then(
    (report) => process.send!(report, () => process.exit(0)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
});

async function measure(request: BacktestRequest): Promise<BacktestReportFigures> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const { strategies } = await loadStrategiesOrThrow(request.strategies);
  const series = await readPriceFile(request.prices, { maxGapMs: 3_600_000 });
  const read = performance.now();
  let slots = 0;
  const run = runBacktest(strategies, series, {
    creditTotal: new Decimal('1000000.00'),
    settleDelayMs: 86_400_000,
    onDecision: () => {
      slots++;
    },
  });
  const report = reportOf(
    run,
    { file: request.prices, rows: series.length },
    { total: new Decimal('1000000.00'), settleDelayMs: 86_400_000 },
  );
  formatReport(report);
  const finished = performance.now();
  const used = process.cpuUsage(cpu);
  return {
    rows: series.length,
    slots,
    orders: report.strategies.reduce((sum, entry) => sum + entry.result.orders, 0),
    readMs: read - started,
    runMs: finished - read,
    totalMs: finished - started,
    cpuMs: (used.user + used.system) / 1000,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
  };
}
